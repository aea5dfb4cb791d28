package membership

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
)

// Client calls the membership contract over the configured endpoints, as
// nwaku's OnchainGroupManager does (group_manager/on_chain/group_manager.nim
// and rpc_wrapper.nim), failing over between endpoints. It keeps no state
// of the group: see Manager for the root window. It is safe for concurrent
// use.
//
// Field elements cross this API as nwaku and the RateLimitProof carry them:
// 32 bytes little-endian ([32]byte values, copied in and out). The contract
// takes and returns them as uint256.
type Client struct {
	cfg  Config
	pool *pool

	registerMu sync.Mutex // serialises Register, whose transactions take nonces in turn
	closeOnce  sync.Once
}

// Dial checks cfg and connects to the first endpoint that answers with the
// right chain id and has contract code at cfg.Contract, trying the
// endpoints up to cfg.StartAttempts times cfg.RetryDelay apart (nwaku's
// init and its retryWrapper). Errors wrap ErrConfig, ErrChainID,
// ErrNoContract, ErrUnavailable or ctx's error. Close the Client when done.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, pool: newPool(cfg)}
	err = c.retry(ctx, "connect to the Ethereum RPC", func(ctx context.Context) error {
		return c.pool.do(ctx, func(ctx context.Context, b Backend) error {
			code, err := b.CodeAt(ctx, cfg.Contract, nil)
			if err != nil {
				return err
			}
			if len(code) == 0 {
				return fmt.Errorf("%w %s", ErrNoContract, cfg.Contract)
			}
			return nil
		})
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// retry runs f until it succeeds, fails with an error no retry can mend,
// or cfg.StartAttempts attempts have failed.
func (c *Client) retry(ctx context.Context, what string, f func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		if err == nil || !errors.Is(err, ErrUnavailable) || attempt >= c.cfg.StartAttempts {
			return err
		}
		c.cfg.Logger.Warn("rln: "+what+" failed, retrying", "attempt", attempt, "of", c.cfg.StartAttempts, "err", err)
		t := time.NewTimer(c.cfg.RetryDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// ChainID returns the chain id the endpoints serve (a copy).
func (c *Client) ChainID() *big.Int {
	_, id := c.pool.current()
	return id
}

// Contract returns the membership contract's address.
func (c *Client) Contract() common.Address { return c.cfg.Contract }

// Endpoint returns the endpoint in use, redacted to scheme and host.
func (c *Client) Endpoint() string {
	e, _ := c.pool.current()
	return e
}

// Close closes the endpoint connection. It is idempotent; calls after it
// fail with ErrClosed.
func (c *Client) Close() {
	c.closeOnce.Do(c.pool.close)
}

// call runs one view call of the membership contract on b at block (nil:
// latest) and unpacks its outputs.
func (c *Client) call(ctx context.Context, b Backend, block *big.Int, method string, args ...any) ([]any, error) {
	var out []any
	bc := bind.NewBoundContract(c.cfg.Contract, membershipABI, b, b, b)
	if err := bc.Call(&bind.CallOpts{Context: ctx, BlockNumber: block}, &out, method, args...); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return out, nil
}

// view runs a view call with failover.
func (c *Client) view(ctx context.Context, method string, args ...any) ([]any, error) {
	var out []any
	err := c.pool.do(ctx, func(ctx context.Context, b Backend) error {
		var err error
		out, err = c.call(ctx, b, nil, method, args...)
		return err
	})
	return out, err
}

// Root returns the contract's current Merkle root (root()), little-endian.
func (c *Client) Root(ctx context.Context) ([32]byte, error) {
	out, err := c.view(ctx, "root")
	if err != nil {
		return [32]byte{}, err
	}
	return fieldOut(out)
}

// rootAt returns root() at block (nil: latest) on b.
func (c *Client) rootAt(ctx context.Context, b Backend, block *big.Int) ([32]byte, error) {
	out, err := c.call(ctx, b, block, "root")
	if err != nil {
		return [32]byte{}, err
	}
	return fieldOut(out)
}

// MerkleProof returns getMerkleProof(index): the siblings of leaf index
// from the leaf level up, MerkleTreeDepth of them, each little-endian, as
// nwaku's fetchMerkleProofElements turns them into zerokit's path
// elements. An index without a leaf fails with ErrNotMember.
func (c *Client) MerkleProof(ctx context.Context, index uint32) ([MerkleTreeDepth][32]byte, error) {
	var path [MerkleTreeDepth][32]byte
	err := c.pool.do(ctx, func(ctx context.Context, b Backend) error {
		var err error
		path, err = c.merkleProof(ctx, b, index)
		return err
	})
	return path, err
}

func (c *Client) merkleProof(ctx context.Context, b Backend, index uint32) ([MerkleTreeDepth][32]byte, error) {
	var path [MerkleTreeDepth][32]byte
	out, err := c.call(ctx, b, nil, "getMerkleProof", new(big.Int).SetUint64(uint64(index)))
	if err != nil {
		if answered(err) && !errors.Is(err, bind.ErrNoCode) {
			if n, nerr := c.nextFreeIndex(ctx, b); nerr == nil && index >= n {
				return path, fmt.Errorf("%w %d: the tree has %d leaves", ErrNotMember, index, n)
			}
		}
		return path, err
	}
	elems, err := one[[MerkleTreeDepth]*big.Int](out)
	if err != nil {
		return path, fmt.Errorf("getMerkleProof: %w", err)
	}
	for i, e := range elems {
		if path[i], err = toLE(e); err != nil {
			return path, err
		}
	}
	return path, nil
}

// NextFreeIndex returns nextFreeIndex(), the number of leaves the tree has
// used (nwaku's waku_rln_number_registered_memberships).
func (c *Client) NextFreeIndex(ctx context.Context) (uint32, error) {
	var n uint32
	err := c.pool.do(ctx, func(ctx context.Context, b Backend) error {
		var err error
		n, err = c.nextFreeIndex(ctx, b)
		return err
	})
	return n, err
}

func (c *Client) nextFreeIndex(ctx context.Context, b Backend) (uint32, error) {
	out, err := c.call(ctx, b, nil, "nextFreeIndex")
	if err != nil {
		return 0, err
	}
	return one[uint32](out)
}

// IsMember returns isInMembershipSet(idCommitment), idCommitment being 32
// bytes little-endian as the keystore holds it (nwaku's
// fetchMembershipStatus).
func (c *Client) IsMember(ctx context.Context, idCommitment [32]byte) (bool, error) {
	out, err := c.view(ctx, "isInMembershipSet", fromLE(idCommitment))
	if err != nil {
		return false, err
	}
	return one[bool](out)
}

// MaxMembershipRateLimit returns maxMembershipRateLimit(), the largest
// user message limit a membership may have (nwaku's
// rlnRelayMaxMessageLimit).
func (c *Client) MaxMembershipRateLimit(ctx context.Context) (uint32, error) {
	out, err := c.view(ctx, "maxMembershipRateLimit")
	if err != nil {
		return 0, err
	}
	return one[uint32](out)
}

// MinMembershipRateLimit returns minMembershipRateLimit(), the smallest
// user message limit a membership may have.
func (c *Client) MinMembershipRateLimit(ctx context.Context) (uint32, error) {
	out, err := c.view(ctx, "minMembershipRateLimit")
	if err != nil {
		return 0, err
	}
	return one[uint32](out)
}

// changeBlocks returns, ascending, the blocks in [from, to] whose
// MembershipRegistered or MembershipErased events may have changed the
// root.
func (c *Client) changeBlocks(ctx context.Context, b Backend, from, to uint64) ([]uint64, error) {
	logs, err := b.FilterLogs(ctx, ethereum.FilterQuery{
		FromBlock: new(big.Int).SetUint64(from),
		ToBlock:   new(big.Int).SetUint64(to),
		Addresses: []common.Address{c.cfg.Contract},
		Topics:    [][]common.Hash{{eventID("MembershipRegistered"), eventID("MembershipErased")}},
	})
	if err != nil {
		return nil, err
	}
	var blocks []uint64
	for _, l := range logs {
		if !l.Removed {
			blocks = append(blocks, l.BlockNumber)
		}
	}
	slices.Sort(blocks)
	return slices.Compact(blocks), nil
}

// one returns the single output of a call as a T.
func one[T any](out []any) (T, error) {
	var zero T
	if len(out) != 1 {
		return zero, fmt.Errorf("%d results, want 1: %w", len(out), errAnswered)
	}
	v, ok := out[0].(T)
	if !ok {
		return zero, fmt.Errorf("result of type %T, want %T: %w", out[0], zero, errAnswered)
	}
	return v, nil
}

// fieldOut converts a single uint256 output to little-endian bytes.
func fieldOut(out []any) ([32]byte, error) {
	v, err := one[*big.Int](out)
	if err != nil {
		return [32]byte{}, err
	}
	return toLE(v)
}

// toLE returns v (0 <= v < 2^256) as 32 bytes little-endian.
func toLE(v *big.Int) ([32]byte, error) {
	var b [32]byte
	if v.Sign() < 0 || v.BitLen() > 256 {
		return b, fmt.Errorf("value out of uint256 range: %w", errAnswered)
	}
	v.FillBytes(b[:])
	slices.Reverse(b[:])
	return b, nil
}

// fromLE returns the integer whose 32-byte little-endian encoding is b.
func fromLE(b [32]byte) *big.Int {
	slices.Reverse(b[:])
	return new(big.Int).SetBytes(b[:])
}
