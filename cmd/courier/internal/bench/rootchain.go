package bench

import (
	"context"
	"errors"
	"math/big"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/couriernet/courier/rln"
	"github.com/couriernet/courier/rln/membership"
)

// errReadOnly is what rootChain answers to anything that would send a
// transaction.
var errReadOnly = errors.New("bench: macro-rln's chain is read-only")

// rootChain is the chain macro-rln's node B follows through
// rln/membership's Dial hook: one contract, at contract, whose root()
// answers root (the membership contract's uint256, 32 bytes big-endian)
// and whose every other call answers 1 (maxMembershipRateLimit,
// nextFreeIndex), at block 1 of chain 1337, with no logs. It is all
// rln/membership reads of a membership contract, without a chain.
type rootChain struct {
	contract common.Address
	root     [32]byte
}

var _ membership.Backend = (*rootChain)(nil)

// rootSelector is the selector of the contract's root().
var rootSelector = crypto.Keccak256([]byte("root()"))[:4]

func newRootChain(contract common.Address, root rln.Field) *rootChain {
	return &rootChain{contract: contract, root: root.BigEndian()}
}

func (c *rootChain) CodeAt(_ context.Context, a common.Address, _ *big.Int) ([]byte, error) {
	if a != c.contract {
		return nil, nil
	}
	return []byte{0x00}, nil // any code: the contract exists
}

func (c *rootChain) CallContract(_ context.Context, call ethereum.CallMsg, _ *big.Int) ([]byte, error) {
	out := make([]byte, 32)
	switch {
	case call.To == nil || *call.To != c.contract:
		return nil, nil // no code, no answer
	case len(call.Data) >= 4 && string(call.Data[:4]) == string(rootSelector):
		copy(out, c.root[:])
	default:
		out[31] = 1
	}
	return out, nil
}

func (c *rootChain) FilterLogs(context.Context, ethereum.FilterQuery) ([]types.Log, error) {
	return nil, nil
}

func (c *rootChain) SubscribeFilterLogs(context.Context, ethereum.FilterQuery, chan<- types.Log) (ethereum.Subscription, error) {
	return nil, errReadOnly
}

func (c *rootChain) BlockNumber(context.Context) (uint64, error) { return 1, nil }

func (c *rootChain) ChainID(context.Context) (*big.Int, error) { return big.NewInt(1337), nil }

func (c *rootChain) HeaderByNumber(context.Context, *big.Int) (*types.Header, error) {
	return &types.Header{Number: big.NewInt(1)}, nil
}

func (c *rootChain) TransactionReceipt(context.Context, common.Hash) (*types.Receipt, error) {
	return nil, ethereum.NotFound
}

func (c *rootChain) TransactionByHash(context.Context, common.Hash) (*types.Transaction, bool, error) {
	return nil, false, ethereum.NotFound
}

func (c *rootChain) PendingCodeAt(ctx context.Context, a common.Address) ([]byte, error) {
	return c.CodeAt(ctx, a, nil)
}

func (c *rootChain) PendingNonceAt(context.Context, common.Address) (uint64, error) { return 0, nil }

func (c *rootChain) EstimateGas(context.Context, ethereum.CallMsg) (uint64, error) {
	return 0, errReadOnly
}

func (c *rootChain) SuggestGasPrice(context.Context) (*big.Int, error) { return nil, errReadOnly }

func (c *rootChain) SuggestGasTipCap(context.Context) (*big.Int, error) { return nil, errReadOnly }

func (c *rootChain) SendTransaction(context.Context, *types.Transaction) error { return errReadOnly }
