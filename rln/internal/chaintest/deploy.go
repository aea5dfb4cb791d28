//go:build unix

package chaintest

import (
	"context"
	"crypto/ecdsa"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// DeployConfig sets the membership contract's parameters; zero fields
// take the defaults noted.
type DeployConfig struct {
	// PricePerMessage is the deposit per message per epoch of rate limit,
	// in the token's smallest unit. Default 5.
	PricePerMessage *big.Int
	// MinRateLimit and MaxRateLimit bound one membership's user message
	// limit; MaxTotalRateLimit bounds their sum. Defaults 1, 100 and
	// 100,000.
	MinRateLimit, MaxRateLimit, MaxTotalRateLimit uint32
	// ActiveDuration and GracePeriod are a membership's terms in seconds
	// of block time. Defaults 180 days and 30 days; GracePeriod 0 stays 0
	// only when ActiveDuration is set too.
	ActiveDuration, GracePeriod uint32
}

// Deployment is a deployed membership contract with its price calculator
// and token. The deployer, Key(0), owns all three.
type Deployment struct {
	// Membership is the membership contract's address.
	Membership common.Address
	// Calculator is the price calculator's address.
	Calculator common.Address
	// Token is the ERC-20 token's address.
	Token common.Address

	chain      *Chain
	artifacts  *Artifacts
	membership abi.ABI
	token      abi.ABI
}

// Deploy compiles (see Compile) and deploys the contracts from Key(0) and
// waits for them to be mined. It fails the test on any error.
func (c *Chain) Deploy(t testing.TB, cfg DeployConfig) *Deployment {
	t.Helper()
	a := Compile(t)
	if cfg.PricePerMessage == nil {
		cfg.PricePerMessage = big.NewInt(5)
	}
	if cfg.MinRateLimit == 0 {
		cfg.MinRateLimit = 1
	}
	if cfg.MaxRateLimit == 0 {
		cfg.MaxRateLimit = 100
	}
	if cfg.MaxTotalRateLimit == 0 {
		cfg.MaxTotalRateLimit = 100_000
	}
	if cfg.ActiveDuration == 0 {
		cfg.ActiveDuration, cfg.GracePeriod = 180*24*3600, 30*24*3600
	}
	d := &Deployment{chain: c, artifacts: a, membership: a.ParsedABI(t, MembershipContract), token: a.ParsedABI(t, TokenContract)}
	d.Token = c.deploy(t, a, TokenContract)
	d.Calculator = c.deploy(t, a, CalculatorContract, d.Token, cfg.PricePerMessage)
	d.Membership = c.deploy(t, a, MembershipContract, d.Calculator, cfg.MaxTotalRateLimit,
		cfg.MinRateLimit, cfg.MaxRateLimit, cfg.ActiveDuration, cfg.GracePeriod)
	return d
}

// deploy deploys contract name with its libraries and constructor args.
func (c *Chain) deploy(t testing.TB, a *Artifacts, name string, args ...any) common.Address {
	t.Helper()
	meta, err := a.metaData(name)
	if err != nil {
		t.Fatal(err)
	}
	input, err := a.ParsedABI(t, name).Pack("", args...)
	if err != nil {
		t.Fatalf("chaintest: constructor of %s: %v", name, err)
	}
	opts := c.transactor(t, Key(0))
	// Each deployment is mined before the next, whose gas estimate runs
	// the constructor against the libraries deployed before it.
	deployMined := func(input, code []byte) (common.Address, *types.Transaction, error) {
		addr, tx, err := bind.DeployContract(opts, code, c.client, input)
		if err == nil {
			c.waitMined(t, tx)
		}
		return addr, tx, err
	}
	res, err := bind.LinkAndDeploy(&bind.DeploymentParams{
		Contracts: []*bind.MetaData{meta},
		Inputs:    map[string][]byte{meta.ID: input},
	}, deployMined)
	if err != nil {
		t.Fatalf("chaintest: deploy %s: %v", name, err)
	}
	return res.Addresses[meta.ID]
}

func (c *Chain) transactor(t testing.TB, key *ecdsa.PrivateKey) *bind.TransactOpts {
	t.Helper()
	opts := bind.NewKeyedTransactor(key, ChainID)
	opts.Context = context.Background()
	return opts
}

// waitMined commits until tx has a receipt with status 1, failing the
// test otherwise.
func (c *Chain) waitMined(t testing.TB, tx *types.Transaction) *types.Receipt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		c.Commit()
		r, err := c.client.TransactionReceipt(ctx, tx.Hash())
		if err == nil {
			if r.Status != types.ReceiptStatusSuccessful {
				t.Fatalf("chaintest: transaction %s failed (status 0)", tx.Hash())
			}
			return r
		}
		select {
		case <-ctx.Done():
			t.Fatalf("chaintest: transaction %s not mined: %v", tx.Hash(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Transact sends method(args) to the contract at to (with ABI a) from key
// and waits for it to be mined with status 1.
func (d *Deployment) Transact(t testing.TB, key *ecdsa.PrivateKey, to common.Address, a abi.ABI, method string, args ...any) *types.Receipt {
	t.Helper()
	tx, err := bind.NewBoundContract(to, a, d.chain.client, d.chain.client, d.chain.client).Transact(d.chain.transactor(t, key), method, args...)
	if err != nil {
		t.Fatalf("chaintest: %s: %v", method, err)
	}
	return d.chain.waitMined(t, tx)
}

// MembershipABI returns the compiled membership contract's ABI.
func (d *Deployment) MembershipABI() abi.ABI { return d.membership }

// Mint gives to amount tokens.
func (d *Deployment) Mint(t testing.TB, to common.Address, amount *big.Int) {
	t.Helper()
	d.Transact(t, Key(0), d.Token, d.token, "mint", to, amount)
}

// Approve lets the membership contract take amount of key's tokens, as
// nwaku's tests do before registering.
func (d *Deployment) Approve(t testing.TB, key *ecdsa.PrivateKey, amount *big.Int) {
	t.Helper()
	d.Transact(t, key, d.Token, d.token, "approve", d.Membership, amount)
}

// TokenBalance returns who's token balance.
func (d *Deployment) TokenBalance(t testing.TB, who common.Address) *big.Int {
	t.Helper()
	return d.callBig(t, d.Token, d.token, "balanceOf", who)
}

// Register registers idCommitment with rateLimit from key directly: the
// members other than the one under test. When key's allowance does not
// cover the deposit, it first mints and approves plenty (10^30 units). It
// returns the membership's index.
func (d *Deployment) Register(t testing.TB, key *ecdsa.PrivateKey, idCommitment *big.Int, rateLimit uint32) uint32 {
	t.Helper()
	deposit := new(big.Int).Mul(d.callBig(t, d.Calculator, d.artifacts.ParsedABI(t, CalculatorContract), "pricePerMessagePerEpoch"), big.NewInt(int64(rateLimit)))
	from := crypto.PubkeyToAddress(key.PublicKey)
	if d.callBig(t, d.Token, d.token, "allowance", from, d.Membership).Cmp(deposit) < 0 {
		plenty := new(big.Int).Exp(big.NewInt(10), big.NewInt(30), nil)
		d.Mint(t, from, plenty)
		d.Approve(t, key, plenty)
	}
	r := d.Transact(t, key, d.Membership, d.membership, "register", idCommitment, rateLimit, []*big.Int{})
	ev := d.membership.Events["MembershipRegistered"]
	for _, l := range r.Logs {
		if len(l.Topics) > 0 && l.Topics[0] == ev.ID {
			vals, err := ev.Inputs.Unpack(l.Data)
			if err != nil {
				t.Fatal(err)
			}
			return vals[2].(uint32)
		}
	}
	t.Fatal("chaintest: no MembershipRegistered event")
	return 0
}

// Erase erases memberships from key (expired ones, or key's own in their
// grace period), also zeroing their leaves when fromTree is set.
func (d *Deployment) Erase(t testing.TB, key *ecdsa.PrivateKey, ids []*big.Int, fromTree bool) {
	t.Helper()
	for name, m := range d.membership.Methods {
		if m.Sig == "eraseMemberships(uint256[],bool)" {
			d.Transact(t, key, d.Membership, d.membership, name, ids, fromTree)
			return
		}
	}
	t.Fatal("chaintest: no eraseMemberships(uint256[],bool)")
}

// Call runs a view method of the membership contract and returns its
// outputs.
func (d *Deployment) Call(t testing.TB, method string, args ...any) []any {
	t.Helper()
	var out []any
	bc := bind.NewBoundContract(d.Membership, d.membership, d.chain.client, d.chain.client, d.chain.client)
	if err := bc.Call(&bind.CallOpts{Context: context.Background()}, &out, method, args...); err != nil {
		t.Fatalf("chaintest: %s: %v", method, err)
	}
	return out
}

func (d *Deployment) callBig(t testing.TB, to common.Address, a abi.ABI, method string, args ...any) *big.Int {
	t.Helper()
	var out []any
	bc := bind.NewBoundContract(to, a, d.chain.client, d.chain.client, d.chain.client)
	if err := bc.Call(&bind.CallOpts{Context: context.Background()}, &out, method, args...); err != nil {
		t.Fatalf("chaintest: %s: %v", method, err)
	}
	return out[0].(*big.Int)
}
