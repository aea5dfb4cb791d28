//go:build unix

package chaintest_test

import (
	"context"
	"testing"
	"time"

	"github.com/couriernet/courier/rln/internal/chaintest"
	"github.com/ethereum/go-ethereum/ethclient"
)

// TestServeStopStart: a served chain answers over HTTP and WebSocket with
// its deployed contract; Stop cuts both, Start restores them on the same
// port with the chain's state kept.
func TestServeStopStart(t *testing.T) {
	chain := chaintest.NewServed(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	srv := chain.Serve(t)
	ctx := context.Background()
	for _, url := range []string{srv.URL(), srv.WSURL()} {
		c, err := ethclient.DialContext(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		id, err := c.ChainID(ctx)
		if err != nil || id.Cmp(chaintest.ChainID) != 0 {
			t.Fatalf("%s: chain id %v, %v", url, id, err)
		}
		code, err := c.CodeAt(ctx, d.Membership, nil)
		if err != nil || len(code) == 0 {
			t.Fatalf("%s: no membership contract code: %v", url, err)
		}
		srv.Stop()
		if _, err := c.ChainID(ctx); err == nil {
			t.Fatalf("%s answers after Stop", url)
		}
		srv.Start(t)
		if code, err := c.CodeAt(ctx, d.Membership, nil); err != nil || len(code) == 0 {
			t.Fatalf("%s after Start: %v", url, err)
		}
		c.Close()
	}
}

// TestMine: the mining loop commits blocks on its own.
func TestMine(t *testing.T) {
	chain := chaintest.NewSimulated(t)
	ctx := context.Background()
	start, err := chain.Client().BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	chain.Mine(t, 10*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := chain.Client().BlockNumber(ctx)
		if err == nil && n >= start+3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("block %d after 10 s, started at %d", n, start)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
