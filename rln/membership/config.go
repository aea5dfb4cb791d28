package membership

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
)

// Defaults of Config. The poll interval and the retry strategy are
// nwaku v0.38.1's (group_manager/on_chain/group_manager.nim trackRootChanges
// rpcDelay; retry_wrapper.nim DefaultRetryDelay and DefaultRetryCount).
const (
	DefaultPollInterval        = 5 * time.Second
	DefaultCallTimeout         = 10 * time.Second
	DefaultStartAttempts       = 15
	DefaultRetryDelay          = 4 * time.Second
	DefaultReceiptPollInterval = time.Second
	DefaultHistoryBlocks       = 128
)

// MerkleTreeDepth is the depth of the contract's tree of rate commitments
// and of the RLN circuit (waku-rlnv2-contract MERKLE_TREE_DEPTH; nwaku
// constants.nim MerkleTreeDepth).
const MerkleTreeDepth = 20

// Errors. Each error this package returns wraps one of them.
var (
	// ErrConfig: an invalid Config.
	ErrConfig = errors.New("membership: invalid config")
	// ErrUnavailable: no endpoint answered (each endpoint's error is joined
	// to it).
	ErrUnavailable = errors.New("membership: no Ethereum RPC endpoint answered")
	// ErrChainID: an endpoint serves another chain than Config.ChainID (or
	// than the first endpoint that answered, when ChainID is 0).
	ErrChainID = errors.New("membership: chain id mismatch")
	// ErrNoContract: there is no contract code at Config.Contract.
	ErrNoContract = errors.New("membership: no contract at the membership contract address")
	// ErrNoPrivateKey: Register needs Config.PrivateKey.
	ErrNoPrivateKey = errors.New("membership: no Ethereum private key to send the registration with")
	// ErrRateLimit: the user message limit is outside the contract's
	// [minMembershipRateLimit, maxMembershipRateLimit].
	ErrRateLimit = errors.New("membership: user message limit outside the contract's bounds")
	// ErrAlreadyRegistered: the id commitment already has a membership.
	ErrAlreadyRegistered = errors.New("membership: id commitment already registered")
	// ErrInvalidCommitment: the id commitment is 0 or not below the BN254
	// scalar field modulus, which the contract refuses.
	ErrInvalidCommitment = errors.New("membership: id commitment is not a nonzero field element")
	// ErrAllowance: the token allowance does not cover the deposit and the
	// approval step was not asked for (RegisterOptions.Approve).
	ErrAllowance = errors.New("membership: token allowance below the membership deposit")
	// ErrBalance: the account holds fewer tokens than the deposit.
	ErrBalance = errors.New("membership: token balance below the membership deposit")
	// ErrTxFailed: a transaction was mined with status 0, or its receipt has
	// no MembershipRegistered event.
	ErrTxFailed = errors.New("membership: transaction failed")
	// ErrNotMember: the contract has no leaf at Config.MembershipIndex.
	ErrNotMember = errors.New("membership: no membership at this index")
	// ErrClosed: the Client or Manager was closed.
	ErrClosed = errors.New("membership: closed")
)

// Backend is what this package needs of an Ethereum JSON-RPC connection:
// *ethclient.Client has it, and so has go-ethereum's simulated backend
// client (ethclient/simulated), which tests pass through Config.Dial.
type Backend interface {
	bind.ContractBackend
	TransactionReceipt(ctx context.Context, txHash common.Hash) (*types.Receipt, error)
	ChainID(ctx context.Context) (*big.Int, error)
	BlockNumber(ctx context.Context) (uint64, error)
}

// DialFunc opens a Backend for one endpoint address. If the Backend has a
// Close() method, it is called when the endpoint is dropped.
type DialFunc func(ctx context.Context, address string) (Backend, error)

// Config configures a Client and a Manager. The zero value of every
// duration means its documented default; negative values are errors.
type Config struct {
	// Endpoints are the Ethereum JSON-RPC addresses
	// (--rln-relay-eth-client-address, repeatable), http(s):// or ws(s)://,
	// in order of preference. Like nwaku's establishConnection, the first
	// that answers is used, and stays in use while it answers; when it
	// fails, the others are tried in order within the same call and the
	// first that answers takes over. At least one is required.
	Endpoints []string
	// Contract is the membership contract (--rln-relay-eth-contract-address).
	Contract common.Address
	// ChainID is the chain the endpoints must serve (--rln-relay-chain-id);
	// nil or 0 takes the first answering endpoint's, as nwaku does, and then
	// holds every other endpoint to it.
	ChainID *big.Int
	// MembershipIndex is the node's own tree index (from its keystore or
	// --rln-relay-membership-index), or nil for a node without a
	// membership. With it, the Manager keeps the node's Merkle path.
	MembershipIndex *uint32
	// PrivateKey signs registrations (--rln-relay-eth-private-key); only
	// Register needs it.
	PrivateKey *ecdsa.PrivateKey
	// PollInterval is how often the Manager reads the contract's root.
	// Default 5 s (nwaku's).
	PollInterval time.Duration
	// CallTimeout bounds one JSON-RPC call. Default 10 s.
	CallTimeout time.Duration
	// StartAttempts is how many times Dial and Start try the endpoints
	// before they give up. Default 15 (nwaku's RetryStrategy).
	StartAttempts int
	// RetryDelay is the wait between those tries. Default 4 s (nwaku's:
	// a minute in all).
	RetryDelay time.Duration
	// ReceiptPollInterval is how often Register asks for a transaction's
	// receipt. Default 1 s.
	ReceiptPollInterval time.Duration
	// HistoryBlocks is how many blocks back Start looks for membership
	// events to seed the window with the roots after them, so that a
	// restarted node accepts recent roots at once. Default 128 (the state a
	// full node keeps); negative: none.
	HistoryBlocks int
	// Dial opens an endpoint. Nil means ethclient.DialContext.
	Dial DialFunc
	// Logger receives the package's records. Nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults checks c and returns a copy with the defaults set.
func (c Config) withDefaults() (Config, error) {
	if len(c.Endpoints) == 0 {
		return c, fmt.Errorf("%w: no Ethereum RPC endpoint", ErrConfig)
	}
	for _, e := range c.Endpoints {
		if c.Dial != nil {
			continue
		}
		if err := CheckEndpoint(e); err != nil {
			return c, fmt.Errorf("%w: endpoint %w", ErrConfig, err)
		}
	}
	if c.Contract == (common.Address{}) {
		return c, fmt.Errorf("%w: no membership contract address", ErrConfig)
	}
	if c.ChainID != nil && c.ChainID.Sign() < 0 {
		return c, fmt.Errorf("%w: negative chain id", ErrConfig)
	}
	durations := []struct {
		d   *time.Duration
		def time.Duration
		n   string
	}{
		{&c.PollInterval, DefaultPollInterval, "PollInterval"},
		{&c.CallTimeout, DefaultCallTimeout, "CallTimeout"},
		{&c.RetryDelay, DefaultRetryDelay, "RetryDelay"},
		{&c.ReceiptPollInterval, DefaultReceiptPollInterval, "ReceiptPollInterval"},
	}
	for _, f := range durations {
		if *f.d < 0 {
			return c, fmt.Errorf("%w: negative %s", ErrConfig, f.n)
		}
		if *f.d == 0 {
			*f.d = f.def
		}
	}
	if c.StartAttempts < 0 {
		return c, fmt.Errorf("%w: negative StartAttempts", ErrConfig)
	}
	if c.StartAttempts == 0 {
		c.StartAttempts = DefaultStartAttempts
	}
	if c.HistoryBlocks == 0 {
		c.HistoryBlocks = DefaultHistoryBlocks
	}
	if c.Dial == nil {
		c.Dial = dialEthclient
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

func dialEthclient(ctx context.Context, address string) (Backend, error) {
	return ethclient.DialContext(ctx, address)
}

// ParsePrivateKey parses an Ethereum private key given as 64 hex digits,
// with or without 0x (--rln-relay-eth-private-key).
func ParsePrivateKey(s string) (*ecdsa.PrivateKey, error) {
	k, err := crypto.HexToECDSA(strings.TrimPrefix(strings.TrimSpace(s), "0x"))
	if err != nil {
		return nil, fmt.Errorf("%w: Ethereum private key: %v", ErrConfig, err)
	}
	return k, nil
}
