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
)

// TestRootsFollowRegistrations: each registration's root, as a
// circomlib-Poseidon tree of Poseidon(idCommitment, limit) leaves computes
// it, joins the window in order, and Members follows nextFreeIndex.
func TestRootsFollowRegistrations(t *testing.T) {
	chain := chaintest.NewSimulated(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	m := start(t, func() membership.Config {
		c := config(d, nil, "sim://a")
		c.Dial = simDial(chain)
		return c
	}())

	want := [][32]byte{le(treeRoot(t, nil))}
	if got := m.Window().Roots(); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("initial window %x, want the empty tree's root %x", got, want[0])
	}
	var ms []member
	for i := range 4 {
		ms = append(ms, register(t, d, 1)...)
		membership.Poll(m)
		want = append(want, le(treeRoot(t, leaves(t, ms))))
		if got := m.Window().Roots(); !equalRoots(got, want) {
			t.Fatalf("after %d registrations: window %x, want %x", i+1, got, want)
		}
		if m.Members() != uint32(i+1) {
			t.Fatalf("Members = %d, want %d", m.Members(), i+1)
		}
	}
	// The contract's stored leaves are the same rate commitments.
	got := d.Call(t, "getRateCommitmentsInRangeBoundsInclusive", uint32(0), uint32(3))[0].([]*big.Int)
	for i, l := range leaves(t, ms) {
		if got[i].Cmp(l) != 0 {
			t.Fatalf("leaf %d: contract %s, Poseidon %s", i, got[i], l)
		}
	}
	latest := want[len(want)-1]
	if !m.AcceptableRoot(latest[:]) || !m.AcceptableRoot(want[0][:]) {
		t.Fatal("known roots not acceptable")
	}
	other := le(big.NewInt(12345))
	if m.AcceptableRoot(other[:]) {
		t.Fatal("unknown root acceptable")
	}
	if h := m.Health(); h.State != membership.StateReady || h.Roots != 5 || h.Members != 4 || h.Desc != "" || h.ChainID.Cmp(chaintest.ChainID) != 0 {
		t.Fatalf("Health = %+v", h)
	}
}

func equalRoots(a, b [][32]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPollCatchesUpMissedRoots: when several registrations land between
// two polls, the window gets the root after each of them (nwaku would see
// only the last), from the blocks of the membership events.
func TestPollCatchesUpMissedRoots(t *testing.T) {
	chain := chaintest.NewSimulated(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	cfg := config(d, nil, "sim://a")
	cfg.Dial = simDial(chain)
	m := start(t, cfg)

	ms := register(t, d, 3)
	membership.Poll(m)
	want := [][32]byte{le(treeRoot(t, nil))}
	for i := range ms {
		want = append(want, le(treeRoot(t, leaves(t, ms[:i+1]))))
	}
	if got := m.Window().Roots(); !equalRoots(got, want) {
		t.Fatalf("window %x, want %x", got, want)
	}
}

// TestStartSeedsRecentRoots: a Manager started after registrations holds
// the roots after each recent one at once (a restarted node accepts the
// proofs its peers made just before).
func TestStartSeedsRecentRoots(t *testing.T) {
	chain := chaintest.NewSimulated(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	ms := register(t, d, 3)
	cfg := config(d, nil, "sim://a")
	cfg.Dial = simDial(chain)
	m := start(t, cfg)
	var want [][32]byte
	for i := range ms {
		want = append(want, le(treeRoot(t, leaves(t, ms[:i+1]))))
	}
	if got := m.Window().Roots(); !equalRoots(got, want) {
		t.Fatalf("window %x, want %x", got, want)
	}

	cfg.HistoryBlocks = -1
	bare := start(t, cfg)
	if got := bare.Window().Roots(); !equalRoots(got, want[2:]) {
		t.Fatalf("without history: window %x, want only the current root", got)
	}
}

// TestMerklePathFollowsRoot: with a membership index the Manager keeps
// getMerkleProof's path, which leads from the member's leaf to the
// contract's root, and refetches it when the root changes.
func TestMerklePathFollowsRoot(t *testing.T) {
	chain := chaintest.NewSimulated(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	ms := register(t, d, 4)
	own := ms[2]
	cfg := config(d, nil, "sim://a")
	cfg.Dial = simDial(chain)
	cfg.MembershipIndex = &own.index
	m := start(t, cfg)

	check := func(all []member) {
		t.Helper()
		p, ok := m.MerklePath()
		if !ok {
			t.Fatalf("no path: %+v", m.Health())
		}
		root := treeRoot(t, leaves(t, all))
		if p.Index != own.index || p.Root != le(root) {
			t.Fatalf("path index %d root %x, want %d %x", p.Index, p.Root, own.index, le(root))
		}
		if got := foldPath(t, rateCommitment(t, own.id, own.limit), p); got.Cmp(root) != 0 {
			t.Fatalf("path leads to %s, want %s", got, root)
		}
		if p.Siblings[0] != le(rateCommitment(t, ms[3].id, ms[3].limit)) {
			t.Fatal("first sibling is not the neighbour leaf")
		}
		if !m.Health().HavePath {
			t.Fatal("Health.HavePath false")
		}
	}
	check(ms)
	ms = append(ms, register(t, d, 1)...)
	membership.Poll(m)
	check(ms)
}

// TestMembershipIndexWithoutLeaf: an index the tree has no leaf for does
// not stop the Manager; Health says why there is no path.
func TestMembershipIndexWithoutLeaf(t *testing.T) {
	chain := chaintest.NewSimulated(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	register(t, d, 1)
	cfg := config(d, nil, "sim://a")
	cfg.Dial = simDial(chain)
	index := uint32(7)
	cfg.MembershipIndex = &index
	m := start(t, cfg)
	if _, ok := m.MerklePath(); ok {
		t.Fatal("path for a missing leaf")
	}
	h := m.Health()
	if h.State != membership.StateReady || h.HavePath || !strings.Contains(h.Desc, "no Merkle path for membership index 7") ||
		!strings.Contains(h.Desc, "the tree has 1 leaves") {
		t.Fatalf("Health = %+v", h)
	}
	if _, err := m.Client().MerkleProof(context.Background(), 7); !errors.Is(err, membership.ErrNotMember) {
		t.Fatalf("MerkleProof(7) = %v, want ErrNotMember", err)
	}
}

// TestChainIDChecked: an endpoint of another chain is refused, as nwaku's
// init refuses a provider whose chain id differs from --rln-relay-chain-id;
// with several endpoints, the one of the right chain is used.
func TestChainIDChecked(t *testing.T) {
	chain := chaintest.NewSimulated(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})

	cfg := config(d, nil, "sim://a")
	cfg.Dial = simDial(chain)
	cfg.ChainID = big.NewInt(59141)
	if _, err := membership.Start(context.Background(), cfg); !errors.Is(err, membership.ErrChainID) {
		t.Fatalf("Start with chain id 59141 = %v, want ErrChainID", err)
	}

	cfg = config(d, nil, "http://wrong.example:1", "http://right.example:1")
	cfg.ChainID = chaintest.ChainID
	cfg.Dial = func(_ context.Context, addr string) (membership.Backend, error) {
		if strings.Contains(addr, "wrong") {
			return wrongChain{chain.Client()}, nil
		}
		return shared{chain.Client()}, nil
	}
	m := start(t, cfg)
	if h := m.Health(); h.Endpoint != "http://right.example:1" || h.ChainID.Cmp(chaintest.ChainID) != 0 {
		t.Fatalf("Health = %+v", h)
	}
}

// TestStartGivesUp: with no endpoint answering, Start retries
// StartAttempts times and fails with ErrUnavailable.
func TestStartGivesUp(t *testing.T) {
	cfg := membership.Config{
		Endpoints:     []string{"http://127.0.0.1:1", "ws://127.0.0.1:1"},
		Contract:      chaintest.Address(7),
		StartAttempts: 3,
		RetryDelay:    10 * time.Millisecond,
	}
	dials := 0
	cfg.Dial = func(ctx context.Context, addr string) (membership.Backend, error) {
		dials++
		return nil, errors.New("connection refused")
	}
	_, err := membership.Start(context.Background(), cfg)
	if !errors.Is(err, membership.ErrUnavailable) || dials != 6 {
		t.Fatalf("Start = %v after %d dials, want ErrUnavailable after 6", err, dials)
	}
}

// TestNoContract: an address without code fails at once.
func TestNoContract(t *testing.T) {
	chain := chaintest.NewSimulated(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	cfg := config(d, nil, "sim://a")
	cfg.Dial = simDial(chain)
	cfg.StartAttempts = 5
	cfg.Contract = chaintest.Address(3)
	if _, err := membership.Start(context.Background(), cfg); !errors.Is(err, membership.ErrNoContract) {
		t.Fatalf("Start = %v, want ErrNoContract", err)
	}
}

func TestConfigErrors(t *testing.T) {
	good := membership.Config{Endpoints: []string{"http://localhost:8540/"}, Contract: chaintest.Address(1)}
	for name, mutate := range map[string]func(*membership.Config){
		"no endpoint":   func(c *membership.Config) { c.Endpoints = nil },
		"bad scheme":    func(c *membership.Config) { c.Endpoints = []string{"ftp://x"} },
		"not a URL":     func(c *membership.Config) { c.Endpoints = []string{"localhost"} },
		"no contract":   func(c *membership.Config) { c.Contract = [20]byte{} },
		"negative poll": func(c *membership.Config) { c.PollInterval = -1 },
		"negative id":   func(c *membership.Config) { c.ChainID = big.NewInt(-1) },
	} {
		c := good
		mutate(&c)
		if _, err := membership.Dial(context.Background(), c); !errors.Is(err, membership.ErrConfig) {
			t.Errorf("%s: Dial = %v, want ErrConfig", name, err)
		}
	}
}

// TestCloseIsIdempotent: Close stops the loop, may be called again, and
// leaves the last window readable; calls after it fail with ErrClosed.
func TestCloseIsIdempotent(t *testing.T) {
	chain := chaintest.NewSimulated(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	cfg := config(d, nil, "sim://a")
	cfg.Dial = simDial(chain)
	cfg.PollInterval = time.Millisecond
	m, err := membership.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	m.Close()
	m.Close()
	latest, _ := m.Window().Latest()
	if !m.AcceptableRoot(latest[:]) {
		t.Fatal("window lost on Close")
	}
	if _, err := m.Client().Root(context.Background()); !errors.Is(err, membership.ErrClosed) {
		t.Fatalf("Root after Close = %v, want ErrClosed", err)
	}
}

func TestParsePrivateKey(t *testing.T) {
	const hexKey = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	for _, s := range []string{hexKey, "0x" + hexKey, " 0x" + hexKey + "\n"} {
		k, err := membership.ParsePrivateKey(s)
		if err != nil || k.D.Text(16) != hexKey {
			t.Fatalf("ParsePrivateKey(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"", "0x12", hexKey + "00", "zz" + hexKey[2:]} {
		if _, err := membership.ParsePrivateKey(s); !errors.Is(err, membership.ErrConfig) {
			t.Errorf("ParsePrivateKey(%q) = %v, want ErrConfig", s, err)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://linea-sepolia.infura.io/v3/0123456789abcdef": "https://linea-sepolia.infura.io",
		"wss://user:secret@rpc.example:8546/ws?key=k":         "wss://rpc.example:8546",
		"http://localhost:8540/":                              "http://localhost:8540",
		// Addresses that do not parse keep their scheme and host too.
		"http://rpc.example:85x6/v3/0123456789abcdef": "http://rpc.example:85x6",
		"rpc.example/v3/0123456789abcdef":             "rpc.example",
	} {
		if got := membership.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCheckEndpoint: an endpoint that is not an http(s) or ws(s) URL is
// refused with its scheme and host shown, every other part redacted, and
// the reason; the secrets in its user info, path and query never appear.
func TestCheckEndpoint(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://linea-sepolia.infura.io/v3/0123456789abcdef", ""},
		{"wss://user:secret@rpc.example:8546/ws?key=0123456789abcdef", ""},
		{"HTTP://localhost:8540/", ""},
		{"http://rpc.example:85x6/v3/0123456789abcdef",
			`"http://rpc.example:85x6/<redacted>": not a URL: invalid port ":85x6" after host`},
		{"https://user:secret@rpc example.com/v3/0123456789abcdef?key=secret#secret",
			`"https://<redacted>@rpc example.com/<redacted>?<redacted>#<redacted>": not a URL: invalid character " " in host name`},
		{"https://rpc.example/v3/%zsecret", `"https://rpc.example/<redacted>": not a URL: a % not followed by two hex digits`},
		{"https://rpc.example/v3/secret\x7f", `"https://rpc.example/<redacted>": not a URL: invalid control character in URL`},
		{"https://[::1/v3/secret", `"https://[::1/<redacted>": not a URL: missing ']' in host`},
		{"ftp://user:secret@files.example/secret", `"ftp://<redacted>@files.example/<redacted>": scheme "ftp"; want http, https, ws or wss`},
		{"localhost:8545", `"localhost:8545": no scheme; want an http://, https://, ws:// or wss:// URL`},
		{"rpc.example/v3/secret", `"rpc.example/<redacted>": no scheme; want an http://, https://, ws:// or wss:// URL`},
		{"http:///v3/secret", `"http:///<redacted>": no host`},
		{" http://rpc.example/v3/secret", `"http://rpc.example/<redacted>": spaces around it`},
		{" ", `"": empty; want an http://, https://, ws:// or wss:// URL`},
	} {
		err := membership.CheckEndpoint(tc.in)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckEndpoint(%q) = %v", tc.in, err)
		case tc.want == "":
		case err == nil:
			t.Errorf("CheckEndpoint(%q) accepted it", tc.in)
		case err.Error() != tc.want || !errors.Is(err, membership.ErrConfig):
			t.Errorf("CheckEndpoint(%q) = %q, want %q wrapping ErrConfig", tc.in, err, tc.want)
		case strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "0123456789abcdef"):
			t.Errorf("CheckEndpoint(%q) = %q shows a secret", tc.in, err)
		}
	}
}
