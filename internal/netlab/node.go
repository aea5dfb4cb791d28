package netlab

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/message"
)

// A courier node in a host listens for libp2p on the host's address and
// serves REST and metrics on the host's own loopback, so the test's
// requests never cross a lab link and no partition or delay touches them.
const (
	NodeTCPPort     = 60000
	NodeRESTPort    = 8645
	NodeMetricsPort = 8008
	// PubsubTopic is the topic every lab node relays: shard 0 of cluster
	// 0, the node's default.
	PubsubTopic = "/waku/2/rs/0/0"
	// RelayCacheCapacity is the REST relay cache of a lab node, so that
	// no delivered message is evicted between two polls.
	RelayCacheCapacity = 50000
	// nodeStartTimeout bounds a node's start, to its REST API.
	nodeStartTimeout = 30 * time.Second
)

// Node is a `courier node` process on a host.
type Node struct {
	*Proc
	Host    *Host
	DataDir string
	Addr    string // libp2p multiaddr with /p2p/<id>
	ID      string // peer id
	http    *http.Client
}

var (
	reListening = regexp.MustCompile(`msg=listening addr=(/ip4/[0-9.]+/tcp/\d+/p2p/(\w+))`)
	reServing   = regexp.MustCompile(`msg="serving REST API" addr=`)
)

// StartNode starts `bin node` on h with dataDir and the lab's flags
// (listen address, ports, REST with admin routes and a large relay cache,
// metrics, INFO logs), then flags, and waits until its REST API answers.
// Nothing in the lab's flags reaches outside the lab: no preset, no DNS
// discovery, no discv5 and no bootstrap entries unless flags add them.
func (h *Host) StartNode(bin, dataDir string, flags ...string) *Node {
	l := h.lab
	l.tb.Helper()
	args := append([]string{"node",
		"--listen-address", h.IP.String(), "--tcp-port", strconv.Itoa(NodeTCPPort),
		"--rest", "--rest-address", "127.0.0.1", "--rest-port", strconv.Itoa(NodeRESTPort), "--rest-admin",
		"--rest-relay-cache-capacity", strconv.Itoa(RelayCacheCapacity),
		"--metrics-server", "--metrics-server-address", "127.0.0.1", "--metrics-server-port", strconv.Itoa(NodeMetricsPort),
		"--data-dir", dataDir, "--log-level", "INFO"}, flags...)
	n := &Node{Host: h, DataDir: dataDir}
	n.http = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return dialIn(ctx, h.NS, addr)
		},
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}}
	n.Proc = h.Start(h.Name, bin, nil, args...)
	if err := n.ready(); err != nil {
		l.tb.Fatalf("netlab: node %s: %v", h.Name, err)
	}
	return n
}

// ready waits for the current run's listening and REST lines and
// subscribes the REST relay cache to PubsubTopic.
func (n *Node) ready() error {
	m, err := n.WaitLine(reListening, nodeStartTimeout)
	if err != nil {
		return err
	}
	n.Addr, n.ID = m[1], m[2]
	if _, err := n.WaitLine(reServing, nodeStartTimeout); err != nil {
		return err
	}
	body, err := n.do(http.MethodPost, "/relay/v1/subscriptions", []string{PubsubTopic}, http.StatusOK)
	if err != nil {
		return err
	}
	if string(body) != "OK" {
		return fmt.Errorf("POST /relay/v1/subscriptions answered %q", body)
	}
	return nil
}

// Restart starts the node again after Kill9 or Stop, on the same data
// directory (so with the same key), and waits until it is ready.
func (n *Node) Restart() error {
	if err := n.Proc.Restart(); err != nil {
		return err
	}
	return n.ready()
}

// do sends a request to the node's REST API (path with query) and returns
// the body, or an error unless the status is want.
func (n *Node) do(method, path string, body any, want int) ([]byte, error) {
	return n.request(fmt.Sprintf("http://127.0.0.1:%d%s", NodeRESTPort, path), method, body, want)
}

func (n *Node) request(u, method string, body any, want int) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := n.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n.Host.Name, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %s %s: %w", n.Host.Name, method, u, err)
	}
	if resp.StatusCode != want {
		return out, fmt.Errorf("%s: %s %s: %d %s", n.Host.Name, method, u, resp.StatusCode, bytes.TrimSpace(out))
	}
	return out, nil
}

// Message is a WakuMessage as the REST API carries it (nwaku's
// RelayWakuMessage: payload and meta base64).
type Message struct {
	Payload      []byte `json:"payload"`
	ContentTopic string `json:"contentTopic"`
	Timestamp    int64  `json:"timestamp"`
	Meta         []byte `json:"meta,omitempty"`
}

// Hash is m's deterministic message hash on PubsubTopic.
func (m Message) Hash() message.Hash {
	return (&message.Message{Payload: m.Payload, ContentTopic: m.ContentTopic, Timestamp: m.Timestamp, Meta: m.Meta}).
		Hash(PubsubTopic, nil)
}

var escapedTopic = url.PathEscape(PubsubTopic)

// Publish relays m on PubsubTopic from the node (POST /relay/v1/messages).
func (n *Node) Publish(m Message) error {
	_, err := n.do(http.MethodPost, "/relay/v1/messages/"+escapedTopic, m, http.StatusOK)
	return err
}

// Drain returns and removes the messages the REST relay cache holds for
// PubsubTopic (GET /relay/v1/messages).
func (n *Node) Drain() ([]Message, error) {
	body, err := n.do(http.MethodGet, "/relay/v1/messages/"+escapedTopic, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var msgs []Message
	if err := json.Unmarshal(body, &msgs); err != nil {
		return nil, fmt.Errorf("%s: relay messages: %w", n.Host.Name, err)
	}
	return msgs, nil
}

// StoreHashes returns the hashes of every message in the node's archive,
// in the archive's order, page by page from GET /store/v3/messages (a
// hash listed twice is listed twice).
func (n *Node) StoreHashes() ([]message.Hash, error) {
	var out []message.Hash
	cursor := ""
	for pages := 0; pages < 10000; pages++ {
		q := url.Values{"includeData": {"false"}, "pageSize": {"100"}, "ascending": {"true"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		body, err := n.do(http.MethodGet, "/store/v3/messages?"+q.Encode(), nil, http.StatusOK)
		if err != nil {
			return nil, err
		}
		var resp struct {
			StatusCode int    `json:"statusCode"`
			StatusDesc string `json:"statusDesc"`
			Messages   []struct {
				MessageHash string `json:"messageHash"`
			} `json:"messages"`
			PaginationCursor string `json:"paginationCursor"`
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			return nil, fmt.Errorf("%s: store: %w: %s", n.Host.Name, err, body)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: store: %d %s", n.Host.Name, resp.StatusCode, resp.StatusDesc)
		}
		for _, m := range resp.Messages {
			h, err := parseHash(m.MessageHash)
			if err != nil {
				return nil, fmt.Errorf("%s: store: %w", n.Host.Name, err)
			}
			out = append(out, h)
		}
		if resp.PaginationCursor == "" || len(resp.Messages) == 0 {
			return out, nil
		}
		cursor = resp.PaginationCursor
	}
	return nil, fmt.Errorf("%s: store: more than 10,000 pages", n.Host.Name)
}

func parseHash(s string) (message.Hash, error) {
	var h message.Hash
	b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("bad message hash %q", s)
	}
	copy(h[:], b)
	return h, nil
}

// Metrics scrapes the node's /metrics and returns each sample keyed by
// its series as printed ("name" or `name{label="v"}`).
func (n *Node) Metrics() (map[string]float64, error) {
	body, err := n.request(fmt.Sprintf("http://127.0.0.1:%d/metrics", NodeMetricsPort), http.MethodGet, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// Health is GET /health (nwaku's shape).
type Health struct {
	NodeHealth       string `json:"nodeHealth"`
	ConnectionStatus string `json:"connectionStatus"`
	// ProtocolsHealth has one object per protocol, nwaku's shape:
	// {"Store": "READY"} or {"Relay": "NOT_READY", "desc": "..."}.
	ProtocolsHealth []map[string]string `json:"protocolsHealth"`
}

// Health returns the node's /health; a status other than 200 still
// returns the body it carried.
func (n *Node) Health() (Health, error) {
	body, err := n.do(http.MethodGet, "/health", nil, http.StatusOK)
	var h Health
	if jerr := json.Unmarshal(body, &h); jerr != nil && err == nil {
		err = fmt.Errorf("%s: health: %w: %s", n.Host.Name, jerr, body)
	}
	return h, err
}

// ConnectedPeers returns the peer ids the node lists as connected
// (GET /admin/v1/peers/connected).
func (n *Node) ConnectedPeers() ([]string, error) {
	body, err := n.do(http.MethodGet, "/admin/v1/peers/connected", nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var peers []struct {
		Multiaddr string `json:"multiaddr"`
	}
	if err := json.Unmarshal(body, &peers); err != nil {
		return nil, fmt.Errorf("%s: peers: %w: %s", n.Host.Name, err, body)
	}
	var ids []string
	for _, p := range peers {
		if i := strings.LastIndex(p.Multiaddr, "/p2p/"); i >= 0 {
			ids = append(ids, p.Multiaddr[i+len("/p2p/"):])
		}
	}
	return ids, nil
}

// MeshPeers returns how many gossipsub mesh peers the node has on
// PubsubTopic (GET /admin/v1/peers/mesh/on/0).
func (n *Node) MeshPeers() (int, error) {
	body, err := n.do(http.MethodGet, "/admin/v1/peers/mesh/on/0", nil, http.StatusOK)
	if err != nil {
		return 0, err
	}
	var shard struct {
		Peers []json.RawMessage `json:"peers"`
	}
	if err := json.Unmarshal(body, &shard); err != nil {
		return 0, fmt.Errorf("%s: mesh peers: %w: %s", n.Host.Name, err, body)
	}
	return len(shard.Peers), nil
}

// DialContext dials addr over TCP from inside host h's namespace.
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if network != "tcp" && network != "tcp4" {
		return nil, fmt.Errorf("netlab: dial %s: only tcp", network)
	}
	return dialIn(ctx, h.NS, addr)
}

// NodeKey returns a new secp256k1 node key as --nodekey takes it (hex)
// and the peer id it gives, so that nodes can name each other in
// --staticnode before any of them starts.
func NodeKey() (key, id string, err error) {
	priv, _, err := crypto.GenerateSecp256k1Key(rand.Reader)
	if err != nil {
		return "", "", err
	}
	raw, err := priv.Raw()
	if err != nil {
		return "", "", err
	}
	pid, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		return "", "", err
	}
	return hex.EncodeToString(raw), pid.String(), nil
}

// Multiaddr is the libp2p address of a node with peer id on h.
func (h *Host) Multiaddr(id string) string {
	return fmt.Sprintf("/ip4/%s/tcp/%d/p2p/%s", h.IP, NodeTCPPort, id)
}

// RelayPeerScore returns the gossipsub score the node gives peer id on
// shard 0 (GET /admin/v1/peers/relay/on/0); ok is false when the peer is
// not listed there or has no score.
func (n *Node) RelayPeerScore(id string) (score float64, ok bool, err error) {
	body, err := n.do(http.MethodGet, "/admin/v1/peers/relay/on/0", nil, http.StatusOK)
	if err != nil {
		return 0, false, err
	}
	var shard struct {
		Peers []struct {
			Multiaddr string   `json:"multiaddr"`
			Score     *float64 `json:"score"`
		} `json:"peers"`
	}
	if err := json.Unmarshal(body, &shard); err != nil {
		return 0, false, fmt.Errorf("%s: relay peers: %w: %s", n.Host.Name, err, body)
	}
	for _, p := range shard.Peers {
		if strings.HasSuffix(p.Multiaddr, "/p2p/"+id) && p.Score != nil {
			return *p.Score, true, nil
		}
	}
	return 0, false, nil
}
