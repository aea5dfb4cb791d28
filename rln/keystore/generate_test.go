//go:build unix

package keystore_test

import (
	"context"
	"errors"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/couriernet/courier/rln/internal/chaintest"
	"github.com/couriernet/courier/rln/keystore"
	"github.com/couriernet/courier/rln/membership"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/iden3/go-iden3-crypto/poseidon"
)

type shared struct{ simulated.Client } // the chain's client, without its Close

// identity makes a real RLN identity from two seeds, as zerokit's key
// generation: secret hash = Poseidon(trapdoor, nullifier), commitment =
// Poseidon(secret hash), all little-endian.
func identity(t *testing.T, a, b int64) keystore.IdentityCredential {
	t.Helper()
	trapdoor, nullifier := big.NewInt(a), big.NewInt(b)
	secret, err := poseidon.Hash([]*big.Int{trapdoor, nullifier})
	if err != nil {
		t.Fatal(err)
	}
	commitment, err := poseidon.Hash([]*big.Int{secret})
	if err != nil {
		t.Fatal(err)
	}
	le := func(v *big.Int) (out [32]byte) {
		v.FillBytes(out[:])
		slices.Reverse(out[:])
		return out
	}
	return keystore.IdentityCredential{IDTrapdoor: le(trapdoor), IDNullifier: le(nullifier), IDSecretHash: le(secret), IDCommitment: le(commitment)}
}

// TestRegisterAndSave: generateRlnKeystore's job: the membership is
// registered (with the approval step), then saved with the chain id in
// decimal, the contract's address, the event's index and the limit; a
// second one joins the same file; the node can then find each by its
// index, and the contract has their rate commitments.
func TestRegisterAndSave(t *testing.T) {
	chain := chaintest.NewSimulated(t)
	chain.Mine(t, 20*time.Millisecond)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	d.Register(t, chaintest.Key(1), big.NewInt(99), 1) // someone else first: index 0
	d.Mint(t, chaintest.Address(2), big.NewInt(10_000))
	c, err := membership.Dial(context.Background(), membership.Config{
		Endpoints:           []string{"sim://chain"},
		Contract:            d.Membership,
		PrivateKey:          chaintest.Key(2),
		ReceiptPollInterval: 20 * time.Millisecond,
		Dial:                func(context.Context, string) (membership.Backend, error) { return shared{chain.Client()}, nil },
		Logger:              slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	path := filepath.Join(t.TempDir(), "rlnKeystore.json")
	opts := keystore.RegisterOptions{Register: membership.RegisterOptions{Approve: true}, Encrypt: fast}

	first := identity(t, 11, 12)
	m, reg, err := keystore.RegisterAndSave(context.Background(), c, path, password, first, 20, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := keystore.Membership{
		Contract:         keystore.MembershipContract{ChainID: "1337", Address: d.Membership.Hex()},
		TreeIndex:        1,
		Identity:         first,
		UserMessageLimit: 20,
	}
	if m != want || reg.Index != 1 || reg.RateLimit != 20 {
		t.Fatalf("RegisterAndSave = %+v, %+v", m, reg)
	}
	second := identity(t, 21, 22)
	opts.ContractAddress = "0x" + d.Membership.Hex()[2:] // as the operator wrote it
	if _, _, err := keystore.RegisterAndSave(context.Background(), c, path, password, second, 5, opts); err != nil {
		t.Fatal(err)
	}

	k, err := keystore.Load(path, keystore.RLN())
	if err != nil || k.Len() != 2 {
		t.Fatalf("Load: %v, %d credentials", err, k.Len())
	}
	for index, id := range map[uint64]keystore.IdentityCredential{1: first, 2: second} {
		got, err := k.Get(password, keystore.Query{ChainID: "1337", Address: d.Membership.Hex(), TreeIndex: &index})
		if err != nil || got.Identity != id || got.TreeIndex != index {
			t.Fatalf("Get index %d = %+v, %v", index, got, err)
		}
		member, err := c.IsMember(context.Background(), id.IDCommitment)
		if err != nil || !member {
			t.Fatalf("IsMember index %d = %v, %v", index, member, err)
		}
	}
	leaves := d.Call(t, "getRateCommitmentsInRangeBoundsInclusive", uint32(1), uint32(2))[0].([]*big.Int)
	for i, c := range []struct {
		id    keystore.IdentityCredential
		limit int64
	}{{first, 20}, {second, 5}} {
		be := c.id.IDCommitment
		slices.Reverse(be[:])
		commitment := new(big.Int).SetBytes(be[:])
		leaf, _ := poseidon.Hash([]*big.Int{commitment, big.NewInt(c.limit)})
		if leaves[i].Cmp(leaf) != 0 {
			t.Fatalf("leaf %d: contract %s, Poseidon %s", i+1, leaves[i], leaf)
		}
	}
}

// TestRegisterAndSaveChecksTheFileFirst: a keystore file of another
// application stops RegisterAndSave before it sends a transaction.
func TestRegisterAndSaveChecksTheFileFirst(t *testing.T) {
	chain := chaintest.NewSimulated(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	c, err := membership.Dial(context.Background(), membership.Config{
		Endpoints:  []string{"sim://chain"},
		Contract:   d.Membership,
		PrivateKey: chaintest.Key(3),
		Dial:       func(context.Context, string) (membership.Backend, error) { return shared{chain.Client()}, nil },
		Logger:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	path := filepath.Join(t.TempDir(), "ks.json")
	os.WriteFile(path, []byte(`{"application":"other","appIdentifier":"x","credentials":{},"version":"0.2"}`), 0o600)
	_, _, err = keystore.RegisterAndSave(context.Background(), c, path, password, identity(t, 1, 2), 1, keystore.RegisterOptions{Encrypt: fast})
	if !errors.Is(err, keystore.ErrAppMismatch) {
		t.Fatalf("RegisterAndSave = %v, want ErrAppMismatch", err)
	}
	if n, _ := chain.Client().NonceAt(context.Background(), chaintest.Address(3), nil); n != 0 {
		t.Fatalf("%d transactions sent", n)
	}
}
