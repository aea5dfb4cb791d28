//go:build unix

package membership_test

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/rln/internal/chaintest"
	"github.com/couriernet/courier/rln/membership"
	"github.com/ethereum/go-ethereum/common"
)

// registrar returns a Client for d that signs with account i, on a chain
// that commits a block every 20 ms.
func registrar(t *testing.T, chain *chaintest.Chain, d *chaintest.Deployment, i int) *membership.Client {
	t.Helper()
	chain.Mine(t, 20*time.Millisecond)
	cfg := config(d, nil, "sim://a")
	cfg.Dial = simDial(chain)
	cfg.PrivateKey = chaintest.Key(i)
	c, err := membership.Dial(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestRegister: Register checks what the contract would refuse before
// sending anything, sends the approval step only when asked, registers as
// nwaku does, and reads the index from the MembershipRegistered event; the
// deposit moves to the contract.
func TestRegister(t *testing.T) {
	chain := chaintest.NewSimulated(t)
	d := chain.Deploy(t, chaintest.DeployConfig{PricePerMessage: big.NewInt(5)})
	c := registrar(t, chain, d, 2)
	ctx := context.Background()
	from := chaintest.Address(2)
	id := newIDCommitment(t)
	nonce := func() uint64 {
		n, err := chain.Client().NonceAt(ctx, from, nil)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	if _, err := c.Register(ctx, le(id), 10, membership.RegisterOptions{Approve: true}); !errors.Is(err, membership.ErrBalance) {
		t.Fatalf("without tokens: %v, want ErrBalance", err)
	}
	d.Mint(t, from, big.NewInt(1000))
	if _, err := c.Register(ctx, le(id), 10, membership.RegisterOptions{}); !errors.Is(err, membership.ErrAllowance) ||
		!strings.Contains(err.Error(), "the deposit is 50") {
		t.Fatalf("without allowance: %v, want ErrAllowance", err)
	}
	for _, limit := range []uint32{0, 101} {
		if _, err := c.Register(ctx, le(id), limit, membership.RegisterOptions{Approve: true}); !errors.Is(err, membership.ErrRateLimit) {
			t.Fatalf("limit %d: %v, want ErrRateLimit", limit, err)
		}
	}
	for _, bad := range []*big.Int{big.NewInt(0), q} {
		if _, err := c.Register(ctx, le(bad), 10, membership.RegisterOptions{Approve: true}); !errors.Is(err, membership.ErrInvalidCommitment) {
			t.Fatalf("id commitment %s: %v, want ErrInvalidCommitment", bad, err)
		}
	}
	if n := nonce(); n != 0 {
		t.Fatalf("refused registrations sent %d transactions", n)
	}

	reg, err := c.Register(ctx, le(id), 10, membership.RegisterOptions{Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	if reg.Index != 0 || reg.RateLimit != 10 || reg.IDCommitment != le(id) || reg.Token != d.Token || reg.Deposit.Int64() != 50 ||
		reg.ApproveTxHash == (common.Hash{}) || reg.TxHash == (common.Hash{}) || reg.Block == 0 {
		t.Fatalf("Registration = %+v", reg)
	}
	if n := nonce(); n != 2 {
		t.Fatalf("sent %d transactions, want approve and register", n)
	}
	if ok, err := c.IsMember(ctx, le(id)); err != nil || !ok {
		t.Fatalf("IsMember = %v, %v", ok, err)
	}
	if got := d.TokenBalance(t, d.Membership); got.Int64() != 50 {
		t.Fatalf("contract holds %s tokens, want the deposit 50", got)
	}
	if got := d.TokenBalance(t, from); got.Int64() != 950 {
		t.Fatalf("member holds %s tokens, want 950", got)
	}
	info := d.Call(t, "getMembershipInfo", id)
	if info[0].(uint32) != 10 || info[1].(uint32) != 0 || info[2].(*big.Int).Cmp(rateCommitment(t, id, 10)) != 0 {
		t.Fatalf("getMembershipInfo = %v", info)
	}
	if _, err := c.Register(ctx, le(id), 10, membership.RegisterOptions{Approve: true}); !errors.Is(err, membership.ErrAlreadyRegistered) {
		t.Fatalf("again: %v, want ErrAlreadyRegistered", err)
	}

	// Approved beforehand, as nwaku's tests do: no approval step.
	d.Approve(t, chaintest.Key(2), big.NewInt(100))
	second := newIDCommitment(t)
	reg, err = c.Register(ctx, le(second), 3, membership.RegisterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if reg.Index != 1 || reg.RateLimit != 3 || reg.ApproveTxHash != (common.Hash{}) {
		t.Fatalf("pre-approved Registration = %+v", reg)
	}
}

// TestRegisterNamesTheRevert: a registration the checks let through but
// the contract refuses (the total rate limit) fails with the contract's
// error name, before any transaction is sent.
func TestRegisterNamesTheRevert(t *testing.T) {
	chain := chaintest.NewSimulated(t)
	d := chain.Deploy(t, chaintest.DeployConfig{MaxRateLimit: 10, MaxTotalRateLimit: 15})
	register(t, d, 1) // limit 1
	d.Register(t, chaintest.Key(1), newIDCommitment(t), 10)
	c := registrar(t, chain, d, 2)
	d.Mint(t, chaintest.Address(2), big.NewInt(1000))
	_, err := c.Register(context.Background(), le(newIDCommitment(t)), 5, membership.RegisterOptions{Approve: true})
	if err == nil || !strings.Contains(err.Error(), "CannotExceedMaxTotalRateLimit") {
		t.Fatalf("Register = %v, want the contract's CannotExceedMaxTotalRateLimit", err)
	}
	t.Log(err)
}

func TestRegisterNeedsKey(t *testing.T) {
	chain := chaintest.NewSimulated(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	cfg := config(d, nil, "sim://a")
	cfg.Dial = simDial(chain)
	c, err := membership.Dial(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Register(context.Background(), le(big.NewInt(1)), 1, membership.RegisterOptions{}); !errors.Is(err, membership.ErrNoPrivateKey) {
		t.Fatalf("Register = %v, want ErrNoPrivateKey", err)
	}
}
