//go:build unix

package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/testcert"
	"github.com/couriernet/courier/interop/jswaku"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/mplex"
	"github.com/couriernet/courier/node"
	"github.com/couriernet/courier/peerexchange"
	"github.com/couriernet/courier/shard"
)

// conn is what the page reports of a connection it dialled.
type conn struct {
	RemotePeer   string   `json:"remotePeer"`
	RemoteAddr   string   `json:"remoteAddr"`
	Multiplexer  string   `json:"multiplexer"`
	Encryption   string   `json:"encryption"`
	Protocols    []string `json:"protocols"`
	AgentVersion string   `json:"agentVersion"`
	ClusterID    int      `json:"clusterId"`
	Shards       []int    `json:"shards"`
}

type stored struct {
	Payload string `json:"payload"`
	Hash    string `json:"hash"`
}

// pageResult is what window.courier.run resolves to (page.js).
type pageResult struct {
	Step         string   `json:"step"`
	Error        string   `json:"error"`
	Stack        string   `json:"stack"`
	WS           conn     `json:"ws"`
	WSS          conn     `json:"wss"`
	Subscribed   bool     `json:"subscribed"`
	Pushed       []string `json:"pushed"`
	PushFailures []string `json:"pushFailures"`
	Received     struct {
		Payload      string `json:"payload"`
		ContentTopic string `json:"contentTopic"`
		PubsubTopic  string `json:"pubsubTopic"`
		Timestamp    string `json:"timestamp"`
		Hash         string `json:"hash"`
	} `json:"received"`
	Store [][]stored `json:"store"`
	PX    struct {
		Learned    string   `json:"learned"`
		Addrs      []string `json:"addrs"`
		RemoteAddr string   `json:"remoteAddr"`
		DialedByUs bool     `json:"dialedByUs"`
	} `json:"px"`
	MS        map[string]int `json:"ms"`
	UserAgent string         `json:"userAgent"`
}

const (
	contentTopic = "/courier/1/browser/proto"
	history      = 3
	pageSize     = 2
)

// TestBrowserLightNode loads the page into headless Chromium. js-waku
// light nodes in the page connect to node A over /ws and to node B over
// /wss (a certificate Chromium is told to trust), subscribe with filter at
// B, send with lightpush through A (which relays to B), read A's store
// (history published before the run, then the pushed message, in pages of
// 2) and learn node C, which A found by discv5, by peer exchange from A,
// then dial it at the address learned. The screenshot of the page after
// the run is saved as browser.png in the test's artifact directory
// (go test -artifacts -outputdir DIR).
func TestBrowserLightNode(t *testing.T) {
	chromium := Require(t)
	url := Serve(t, Bundle(t))
	certPath, keyPath, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spki, err := SPKIHash(certPath)
	if err != nil {
		t.Fatal(err)
	}

	a := jswaku.StartNode(t, node.Config{Relay: true, Lightpush: true, Store: true, DataDir: t.TempDir(),
		Discovery: node.DiscoveryConfig{Discv5: true, PeerExchange: true}})
	b := jswaku.StartNode(t, node.Config{Relay: true, Filter: true,
		WebSocketSecure: true, WebSocketSecureCertPath: certPath, WebSocketSecureKeyPath: keyPath})
	c := jswaku.StartNode(t, node.Config{Relay: true, Discovery: node.DiscoveryConfig{Discv5: true, Discv5BootstrapNodes: []string{a.ENR()}}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic := shard.RelayShard{}.PubsubTopic()
	mesh(ctx, t, a, b, topic)

	// History for the store step, published on A before the page runs.
	var want []stored
	for i := range history {
		payload := fmt.Sprintf("history %d", i)
		env, err := a.Publish(ctx, topic, &message.Message{Payload: []byte(payload), ContentTopic: contentTopic, Timestamp: time.Now().UnixNano()})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, stored{payload, env.Hash().String()})
	}
	waitArchived(ctx, t, a, history)
	waitExchanged(ctx, t, b, a, c.Host().ID())

	tab := Launch(t, chromium, spki)
	if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	loaded, err := chromedp.Run(tab, chromedp.Evaluate[bool]("typeof window.courier?.run === 'function'"))
	if err != nil || !loaded {
		t.Fatalf("the page did not load its script (%v): see the console lines above", err)
	}
	// js-libp2p in a browser dials no private IP address except over /ws
	// (libp2p's connection-gater.browser.js): /wss is dialled by name, as
	// an app dials a node's certificate's domain.
	wss := strings.Replace(jswaku.WebSocketAddr(t, b), "/ip4/127.0.0.1/", "/dns4/localhost/", 1)
	const payload = "hello from Chromium"
	start := time.Now()
	var res pageResult
	runCtx, cancelRun := context.WithTimeout(tab, 2*time.Minute)
	defer cancelRun()
	err = Call(runCtx, "window.courier.run", map[string]any{
		"ws": jswaku.WebSocketAddr(t, a), "wss": wss, "pxPeer": c.Host().ID().String(),
		"contentTopic": contentTopic, "shard": 0, "payload": payload, "pageSize": pageSize, "sdk": sdkVersion(t),
	}, &res)
	t.Logf("page run: %v, %s; steps (ms): %v", time.Since(start).Round(time.Millisecond), res.UserAgent, res.MS)
	screenshot(t, tab)
	if err != nil {
		t.Fatalf("run the page: %v", err)
	}
	if res.Error != "" {
		t.Fatalf("page failed at %q: %s\n%s", res.Step, res.Error, res.Stack)
	}

	checkConn(t, "/ws", res.WS, a, "/ws")
	checkConn(t, "/wss", res.WSS, b, "/wss")
	if !strings.HasPrefix(res.WSS.RemoteAddr, "/dns4/localhost/") {
		t.Errorf("/wss: connected at %s, want the /dns4/localhost address dialled", res.WSS.RemoteAddr)
	}
	if !strings.Contains(res.UserAgent, "HeadlessChrome/") {
		t.Errorf("user agent %q is not headless Chromium", res.UserAgent)
	}

	// lightpush through A, relayed to B, pushed to the page by filter.
	if !res.Subscribed || !slices.Equal(res.Pushed, []string{a.Host().ID().String()}) || len(res.PushFailures) != 0 {
		t.Fatalf("subscribed %v, pushed to %q, failures %q", res.Subscribed, res.Pushed, res.PushFailures)
	}
	r := res.Received
	ts, err := strconv.ParseInt(r.Timestamp, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	pushed := (&message.Message{Payload: []byte(payload), ContentTopic: contentTopic, Timestamp: ts}).Hash(topic, nil).String()
	if r.Payload != payload || r.ContentTopic != contentTopic || r.PubsubTopic != topic || r.Hash != pushed {
		t.Fatalf("filter delivered %+v, want hash %s", r, pushed)
	}
	if st := a.Lightpush().Stats(); st.Answers["v3"][200] != 1 {
		t.Errorf("A's lightpush answers %v, want one v3 200", st.Answers)
	}
	if st := b.Filter().Stats(); st.Pushed != 1 || st.Requests["SUBSCRIBE"] != 1 {
		t.Errorf("B's filter stats %+v, want 1 subscribe and 1 push", st)
	}

	// store: the history, then the pushed message, in pages of 2.
	want = append(want, stored{payload, pushed})
	if got := slices.Concat(res.Store...); !slices.Equal(got, want) || len(res.Store) != (len(want)+pageSize-1)/pageSize {
		t.Errorf("store pages %+v, want %+v in pages of %d", res.Store, want, pageSize)
	}

	// peer exchange: A handed out C, reachable at the /ws address learned.
	cid := c.Host().ID().String()
	cws := strings.TrimSuffix(jswaku.WebSocketAddr(t, c), "/p2p/"+cid)
	if res.PX.Learned != cid || !slices.Contains(res.PX.Addrs, cws) || strings.TrimSuffix(res.PX.RemoteAddr, "/p2p/"+cid) != cws {
		t.Errorf("peer exchange: learned %s at %q, connected at %s; C is %s at %s", res.PX.Learned, res.PX.Addrs, res.PX.RemoteAddr, cid, cws)
	}
	if srv, _ := a.PeerExchangeStats(); srv.Requests == 0 || srv.PeersSent == 0 {
		t.Errorf("A's peer exchange stats %+v", srv)
	}
}

// checkConn asserts what the page saw of a connection to n over transport.
func checkConn(t *testing.T, what string, got conn, n *node.Node, transport string) {
	t.Helper()
	if got.RemotePeer != n.Host().ID().String() || !strings.Contains(got.RemoteAddr, transport+"/") && !strings.HasSuffix(got.RemoteAddr, transport) {
		t.Errorf("%s: connected to %s at %s, want %s over %s", what, got.RemotePeer, got.RemoteAddr, n.Host().ID(), transport)
	}
	if got.Multiplexer != mplex.ID || got.Encryption != "/noise" || got.AgentVersion != node.Version {
		t.Errorf("%s: muxer %q, encryption %q, agent %q", what, got.Multiplexer, got.Encryption, got.AgentVersion)
	}
	if got.ClusterID != 0 || !slices.Equal(got.Shards, []int{0}) {
		t.Errorf("%s: metadata cluster %d shards %v, want 0 [0]", what, got.ClusterID, got.Shards)
	}
}

// mesh connects a to b and waits until both have the other in topic's mesh.
func mesh(ctx context.Context, t *testing.T, a, b *node.Node, topic string) {
	t.Helper()
	if err := a.Host().Connect(ctx, peer.AddrInfo{ID: b.Host().ID(), Addrs: b.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	for len(a.Relay().TopicPeers(topic)) == 0 || len(b.Relay().TopicPeers(topic)) == 0 {
		if ctx.Err() != nil {
			t.Fatal("no relay mesh between A and B")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitArchived waits until n's archive holds want messages.
func waitArchived(ctx context.Context, t *testing.T, n *node.Node, want int) {
	t.Helper()
	for {
		res, err := n.Archive().Query(ctx, archive.Query{Limit: archive.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == want {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("archived %d of %d messages", len(res.Messages), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitExchanged waits until server's peer exchange hands out id (a peer
// its discv5 found), asking from asker's host.
func waitExchanged(ctx context.Context, t *testing.T, asker, server *node.Node, id peer.ID) {
	t.Helper()
	client := peerexchange.NewClient(asker.Host(), nil)
	start := time.Now()
	for {
		peers, err := client.Request(ctx, server.Host().ID(), 0)
		for _, p := range peers {
			if p.ID == id {
				t.Logf("peer exchange hands out %s after %v", id, time.Since(start).Round(time.Millisecond))
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("peer exchange never handed out %s (last error %v), stats %+v", id, err, server.PeerStats())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// screenshot saves a PNG of the whole page as browser.png in the test's
// artifact directory and checks that it decodes.
func screenshot(t *testing.T, tab context.Context) {
	t.Helper()
	b, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Errorf("screenshot is no PNG: %v", err)
		return
	}
	path := filepath.Join(t.ArtifactDir(), "browser.png")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Error(err)
		return
	}
	t.Logf("screenshot %dx%d: %s", img.Bounds().Dx(), img.Bounds().Dy(), path)
}

// sdkVersion returns the @waku/sdk version package.json pins.
func sdkVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(), "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	return pkg.Dependencies["@waku/sdk"]
}
