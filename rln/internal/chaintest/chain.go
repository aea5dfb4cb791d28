//go:build unix

package chaintest

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"fmt"
	"maps"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth"
	"github.com/ethereum/go-ethereum/eth/catalyst"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/eth/filters"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/p2p"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"
)

// Accounts is the number of funded accounts a Chain has.
const Accounts = 8

// ChainID is the chain id of every Chain (go-ethereum's dev chain, as the
// simulated backend's).
var ChainID = params.AllDevChainProtocolChanges.ChainID

// keys are the funded accounts' keys, the same in every Chain.
var keys = func() []*ecdsa.PrivateKey {
	out := make([]*ecdsa.PrivateKey, Accounts)
	for i := range out {
		seed := sha256.Sum256(fmt.Appendf(nil, "courier chaintest account %d", i))
		k, err := crypto.ToECDSA(seed[:])
		if err != nil {
			panic(err)
		}
		out[i] = k
	}
	return out
}()

// Key returns the private key of funded account i (0 <= i < Accounts),
// 1,000,000 ether each at genesis. Account 0 deploys the contracts.
func Key(i int) *ecdsa.PrivateKey { return keys[i] }

// Address returns the address of funded account i.
func Address(i int) common.Address { return crypto.PubkeyToAddress(keys[i].PublicKey) }

func genesisAlloc() types.GenesisAlloc {
	balance, _ := new(big.Int).SetString("1000000000000000000000000", 10)
	alloc := types.GenesisAlloc{}
	for i := range keys {
		alloc[Address(i)] = types.Account{Balance: balance}
	}
	return alloc
}

// Chain is a test chain: go-ethereum's simulated beacon chain (a dev
// chain that seals a block on Commit), with Accounts funded accounts.
type Chain struct {
	client simulated.Client

	commitMu sync.Mutex // Commit is not safe for concurrent use
	commit   func()

	apis     []rpc.API // served chains: the APIs Serve registers
	mineOnce sync.Once
}

// NewSimulated returns a chain on go-ethereum's simulated backend
// (ethclient/simulated), reached in process through Client. It is closed
// when the test ends.
func NewSimulated(t testing.TB) *Chain {
	t.Helper()
	b := simulated.NewBackend(genesisAlloc())
	t.Cleanup(func() { b.Close() })
	return &Chain{client: b.Client(), commit: func() { b.Commit() }}
}

// NewServed returns a chain like NewSimulated's, built from the same
// go-ethereum parts (a node stack with the eth service and the simulated
// beacon), whose JSON-RPC APIs Serve exposes over HTTP and WebSocket. It
// is closed when the test ends.
func NewServed(t testing.TB) *Chain {
	t.Helper()
	nodeConf := node.DefaultConfig
	nodeConf.DataDir = ""
	nodeConf.P2P = p2p.Config{NoDiscovery: true}
	stack, err := node.New(&nodeConf)
	if err != nil {
		t.Fatalf("chaintest: node: %v", err)
	}
	alloc := core.SystemContractAllocs()
	maps.Copy(alloc, genesisAlloc())
	ethConf := ethconfig.Defaults
	ethConf.Genesis = &core.Genesis{
		Config:   params.AllDevChainProtocolChanges,
		GasLimit: ethconfig.Defaults.Miner.GasCeil,
		Alloc:    alloc,
	}
	ethConf.SyncMode = ethconfig.FullSync
	ethConf.TxPool.NoLocals = true
	ethConf.LogNoHistory = true // as the simulated backend: unindexed log search, no indexer lag
	backend, err := eth.New(stack, &ethConf)
	if err != nil {
		stack.Close()
		t.Fatalf("chaintest: eth service: %v", err)
	}
	filterAPI := filters.NewFilterAPI(filters.NewFilterSystem(backend.APIBackend, filters.Config{}))
	stack.RegisterAPIs([]rpc.API{{Namespace: "eth", Service: filterAPI}})
	if err := stack.Start(); err != nil {
		stack.Close()
		t.Fatalf("chaintest: start node: %v", err)
	}
	beacon, err := catalyst.NewSimulatedBeacon(0, common.Address{}, backend)
	if err == nil {
		err = beacon.Fork(backend.BlockChain().GetCanonicalHash(0))
	}
	if err != nil {
		stack.Close()
		t.Fatalf("chaintest: simulated beacon: %v", err)
	}
	client := ethclient.NewClient(stack.Attach())
	t.Cleanup(func() {
		client.Close()
		beacon.Stop()
		stack.Close()
	})
	return &Chain{
		client: client,
		commit: func() { beacon.Commit() },
		apis:   append(backend.APIs(), rpc.API{Namespace: "eth", Service: filterAPI}),
	}
}

// Client returns an in-process client of the chain.
func (c *Chain) Client() simulated.Client { return c.client }

// Commit seals the pending transactions into a new block. It is safe to
// call while Mine runs.
func (c *Chain) Commit() {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	c.commit()
}

// Mine starts a loop that commits a block every interval, as a chain's
// block production would, until the test ends. Calls after the first do
// nothing.
func (c *Chain) Mine(t testing.TB, interval time.Duration) {
	c.mineOnce.Do(func() {
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					c.Commit()
				}
			}
		}()
		t.Cleanup(func() {
			close(stop)
			<-done
		})
	})
}
