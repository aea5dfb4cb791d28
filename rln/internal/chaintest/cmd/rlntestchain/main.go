// Command rlntestchain serves a local chain with an RLN membership
// contract for trying RLN relay by hand (docs/rln.md): the chain of
// package chaintest (go-ethereum's dev chain, chain id 1337) over HTTP and
// WebSocket JSON-RPC on 127.0.0.1, a block a second, with the membership
// contract, its price calculator and an ERC-20 test token deployed, and
// tokens minted to the funded accounts. It prints the endpoints, the
// contract address and the accounts' private keys, and serves until
// SIGINT or SIGTERM. The contracts are compiled with npm solc on the first
// run (Node.js 20 and npm needed).
//
// Run it from the repository: go run ./rln/internal/chaintest/cmd/rlntestchain
package main

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/couriernet/courier/rln/internal/chaintest"
)

// cli is the testing.TB chaintest asks for, as a command runs it: Fatal
// and Skip end the process after the cleanups. Only the methods chaintest
// calls are implemented.
type cli struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

func (c *cli) Helper() {}

func (c *cli) Cleanup(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleanups = append(c.cleanups, f)
}

func (c *cli) Fatal(args ...any)                 { c.exit(fmt.Sprint(args...)) }
func (c *cli) Fatalf(format string, args ...any) { c.exit(fmt.Sprintf(format, args...)) }
func (c *cli) Skip(args ...any)                  { c.exit(fmt.Sprint(args...)) }

func (c *cli) exit(msg string) {
	fmt.Fprintln(os.Stderr, "rlntestchain:", msg)
	c.close()
	os.Exit(1)
}

// close runs the cleanups, last first.
func (c *cli) close() {
	c.mu.Lock()
	fs := c.cleanups
	c.cleanups = nil
	c.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func main() {
	t := &cli{}
	chaintest.Require(t)
	chain := chaintest.NewServed(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	tokens := new(big.Int).Exp(big.NewInt(10), big.NewInt(24), nil)
	for i := 1; i < chaintest.Accounts; i++ {
		d.Mint(t, chaintest.Address(i), tokens)
	}
	chain.Mine(t, time.Second)
	srv := chain.Serve(t)
	fmt.Printf("RPC endpoint (HTTP):  %s\nRPC endpoint (WS):    %s\nchain id:             %s\n", srv.URL(), srv.WSURL(), chaintest.ChainID)
	fmt.Printf("membership contract:  %s\ntoken:                %s\n", d.Membership.Hex(), d.Token.Hex())
	fmt.Println("funded accounts (1,000,000 ether and 10^24 token units each; account 0 deployed the contracts):")
	for i := 1; i < chaintest.Accounts; i++ {
		fmt.Printf("  %d  %s  private key %s\n", i, chaintest.Address(i).Hex(), hex.EncodeToString(crypto.FromECDSA(chaintest.Key(i))))
	}
	fmt.Println("serving until SIGINT or SIGTERM")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	t.close()
}
