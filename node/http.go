package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/couriernet/courier/internal/connlimit"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/rest"
	"github.com/couriernet/courier/shard"
)

// Version is the node's version string, served at /debug/v1/version and
// sent as the libp2p user agent.
const Version = "courier v0.1.0"

// startHTTP starts the REST API and the metrics server as configured. The
// listeners are bound before it returns, so a port in use is an error here.
func (n *Node) startHTTP() error {
	if n.cfg.REST {
		srv, err := rest.New(restBackend{n}, rest.Config{CacheSize: n.cfg.RESTCacheCapacity, Admin: n.cfg.RESTAdmin, NoRelay: n.relay == nil, AllowOrigin: n.cfg.RESTAllowOrigin, Logger: n.cfg.Logger})
		if err != nil {
			return err
		}
		n.rest = srv
		n.light.onFilterPush = srv.DeliverFilter
		if n.relay != nil {
			var cts, shards []string
			if n.auto != nil {
				for _, ct := range n.cfg.ContentTopics {
					if t, err := n.auto.PubsubTopic(ct); err == nil {
						cts, shards = append(cts, ct), append(shards, t)
					}
				}
			}
			srv.CacheTopics(n.cfg.pubsubTopics(), cts, shards)
			n.removeREST = n.relay.AddHandler("rest-cache", srv.Deliver)
		}
		if err := n.serve("REST API", n.cfg.RESTAddress, n.cfg.RESTPort, srv); err != nil {
			return err
		}
	}
	if n.cfg.MetricsServer {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(n.Registry(), promhttp.HandlerOpts{}))
		if err := n.serve("metrics", n.cfg.MetricsAddress, n.cfg.MetricsPort, mux); err != nil {
			return err
		}
	}
	return nil
}

// serve binds addr:port in addr's family only, as nwaku binds the IpAddress
// it is given: 0.0.0.0 is every IPv4 address, not IPv6's as well.
func (n *Node) serve(what, addr string, port int, h http.Handler) error {
	ln, err := net.Listen(ipNetwork("tcp", addr), net.JoinHostPort(addr, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("node: %s: %w", what, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	n.servers = append(n.servers, srv)
	n.httpAddrs = append(n.httpAddrs, ln.Addr().String())
	n.cfg.Logger.Info("serving "+what, "addr", ln.Addr().String())
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		limit := connlimit.New(connlimit.Config{Max: n.cfg.HTTPMaxConnections, Name: what, Logger: n.cfg.Logger})
		if err := limit.Serve(srv, ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.cfg.Logger.Error(what+" stopped", "err", err)
		}
	}()
	return nil
}

// ipNetwork returns network ("tcp" or "udp") with the family of the IP
// address ip: "tcp4" for an IPv4 address (IPv4-mapped IPv6 included),
// "tcp6" for an IPv6 one, network itself for what is not an address.
func ipNetwork(network, ip string) string {
	a := net.ParseIP(ip)
	switch {
	case a == nil:
		return network
	case a.To4() != nil:
		return network + "4"
	default:
		return network + "6"
	}
}

// stopHTTP shuts the servers down, letting requests in progress finish
// until ctx ends.
func (n *Node) stopHTTP(ctx context.Context) error {
	var errs []error
	for _, s := range n.servers {
		errs = append(errs, s.Shutdown(ctx))
	}
	if n.removeREST != nil {
		n.removeREST()
	}
	return errors.Join(errs...)
}

// HTTPAddrs returns the bound addresses of the REST and metrics servers, in
// that order, for the ones that run.
func (n *Node) HTTPAddrs() []string { return n.httpAddrs }

// restBackend is the node as the REST API sees it.
type restBackend struct{ n *Node }

func (b restBackend) RelaySubscribe(topics []string) error {
	if b.n.relay == nil {
		return ErrNotRelaying
	}
	b.n.shardMu.Lock()
	defer b.n.shardMu.Unlock()
	if err := b.n.checkMoreShards(topics); err != nil {
		return err
	}
	for _, t := range topics {
		if err := b.n.relay.Subscribe(t, relay.OwnerREST); err != nil {
			return err
		}
	}
	return nil
}

func (b restBackend) RelayUnsubscribe(topics []string) error {
	if b.n.relay == nil {
		return ErrNotRelaying
	}
	for _, t := range topics {
		if err := b.n.relay.Unsubscribe(t, relay.OwnerREST); err != nil && !errors.Is(err, relay.ErrNotSubscribed) {
			return err
		}
	}
	return nil
}

func (b restBackend) RelayPublish(ctx context.Context, topic string, msg *message.Message) error {
	if b.n.relay == nil {
		return ErrNotRelaying
	}
	if !slices.Contains(b.n.relay.Topics(), topic) {
		return fmt.Errorf("%w: %s", rest.ErrNotSubscribed, topic)
	}
	_, err := b.n.Publish(ctx, topic, msg)
	return b.published(err)
}

// published maps a relay publish's outcome to the REST API's errors: a
// message the validators refuse is rest.ErrInvalidMessage.
func (b restBackend) published(err error) error {
	if errors.Is(err, relay.ErrInvalid) {
		return fmt.Errorf("%w: %w", rest.ErrInvalidMessage, err)
	}
	return err
}

// RelayTopicPeers implements rest.RelayPeerCounter.
func (b restBackend) RelayTopicPeers(topic string) int {
	if b.n.relay == nil {
		return 0
	}
	return len(b.n.relay.TopicPeers(topic))
}

func (b restBackend) RelayPublishWith(ctx context.Context, topic string, msg *message.Message, n int, fill func([]byte) error) error {
	if b.n.relay == nil {
		return ErrNotRelaying
	}
	if !slices.Contains(b.n.relay.Topics(), topic) {
		return fmt.Errorf("%w: %s", rest.ErrNotSubscribed, topic)
	}
	_, err := b.n.PublishWith(ctx, topic, msg, n, fill)
	return b.published(err)
}

func (b restBackend) ContentTopicShard(ct string) (string, error) {
	if b.n.auto == nil {
		return "", rest.ErrAutoshardingDisabled
	}
	return b.n.auto.PubsubTopic(ct)
}

func (b restBackend) Info() rest.Info {
	return rest.Info{ListenAddresses: b.n.announcedAddresses(), ENRURI: b.n.ENR()}
}

func (b restBackend) Version() string { return Version }

func (b restBackend) Health() rest.Health { return b.n.healthReport() }

func (b restBackend) Peers() []rest.Peer {
	h := b.n.host
	var out []rest.Peer
	for _, id := range h.Peerstore().Peers() {
		if id == h.ID() {
			continue
		}
		out = append(out, b.peer(id))
	}
	return out
}

func (b restBackend) peer(id peer.ID) rest.Peer {
	h := b.n.host
	p := rest.Peer{Protocols: []string{}, Shards: []uint16{}, Connected: rest.NotConnected, Origin: rest.UnknownOrigin}
	if addrs := h.Peerstore().Addrs(id); len(addrs) > 0 {
		p.Multiaddr = fmt.Sprintf("%s/p2p/%s", addrs[0], id)
	} else {
		p.Multiaddr = "/p2p/" + id.String()
	}
	// Sorted: the peerstore keeps no order (nwaku lists them in the order
	// of the peer's identify message).
	if protos, err := h.Peerstore().GetProtocols(id); err == nil {
		for _, pr := range protos {
			p.Protocols = append(p.Protocols, string(pr))
		}
		slices.Sort(p.Protocols)
	}
	p.Shards = b.n.knownShards(id)
	p.Connected = b.n.connectedness(id)
	if agent, err := h.Peerstore().Get(id, "AgentVersion"); err == nil {
		p.Agent, _ = agent.(string)
	}
	p.Origin = b.n.peerOrigin(id)
	return p
}

// RelayPeers implements rest.RelayPeersBackend: per static-shard pubsub
// topic the relay is subscribed to, ascending by shard, the peers gossipsub
// knows on it or those in its mesh (relay.Relay.TopicPeers, MeshPeers).
func (b restBackend) RelayPeers(mesh bool) ([]rest.PeersOfShard, bool) {
	if b.n.relay == nil {
		return nil, false
	}
	var out []rest.PeersOfShard
	for _, t := range b.n.relay.Topics() {
		rs, err := shard.ParsePubsubTopic(t)
		if err != nil {
			continue // a named topic: nwaku lists static shards only
		}
		out = append(out, rest.PeersOfShard{Shard: rs.ShardID, Peers: b.topicPeers(t, mesh)})
	}
	slices.SortFunc(out, func(x, y rest.PeersOfShard) int { return cmp.Compare(x.Shard, y.Shard) })
	return out, true
}

// ShardPeers implements rest.RelayPeersBackend for the shard of the node's
// cluster.
func (b restBackend) ShardPeers(s uint16, mesh bool) ([]rest.Peer, bool) {
	if b.n.relay == nil {
		return nil, false
	}
	return b.topicPeers(shard.RelayShard{ClusterID: b.n.cfg.ClusterID, ShardID: s}.PubsubTopic(), mesh), true
}

// topicPeers returns the relay peers of pubsubTopic (or its mesh peers),
// sorted by peer id, each with its gossipsub score. A peer gossipsub has
// not scored yet (before its first heartbeat) has score 0, the score nwaku
// starts a peer at (nim-libp2p pubsubpeer.nim).
func (b restBackend) topicPeers(pubsubTopic string, mesh bool) []rest.Peer {
	var ids []peer.ID
	if mesh {
		ids = b.n.relay.MeshPeers(pubsubTopic)
	} else {
		ids = b.n.relay.TopicPeers(pubsubTopic)
		slices.Sort(ids)
	}
	out := make([]rest.Peer, 0, len(ids))
	for _, id := range ids {
		p := b.peer(id)
		score, _ := b.n.relay.PeerScore(id)
		p.Score = (*rest.Score)(&score)
		out = append(out, p)
	}
	return out
}

// ParsePeer implements rest.AdminBackend.
func (b restBackend) ParsePeer(addr string) error {
	_, err := parsePeerAddr(addr)
	return err
}

func parsePeerAddr(addr string) (*peer.AddrInfo, error) {
	m, err := ma.NewMultiaddr(addr)
	if err != nil {
		return nil, err
	}
	return peer.AddrInfoFromP2pAddr(m)
}

// ConnectPeer implements rest.AdminBackend: the peer's addresses are kept
// and the peer dialled; a failed dial leaves it CannotConnect.
func (b restBackend) ConnectPeer(ctx context.Context, addr string) error {
	pi, err := parsePeerAddr(addr)
	if err != nil {
		return err
	}
	b.n.host.Peerstore().AddAddrs(pi.ID, pi.Addrs, peerstore.PermanentAddrTTL)
	return b.n.connect(ctx, *pi)
}

// SetLogLevel implements rest.AdminBackend with nwaku's level names.
func (b restBackend) SetLogLevel(level string) error {
	if b.n.cfg.LogLevel == nil {
		return errors.New("the log level of this node is fixed")
	}
	l, ok := map[string]slog.Level{
		"TRACE": slog.LevelDebug - 4, "DEBUG": slog.LevelDebug, "INFO": slog.LevelInfo, "NOTICE": slog.LevelInfo + 2,
		"WARN": slog.LevelWarn, "ERROR": slog.LevelError, "FATAL": slog.LevelError + 4,
	}[level]
	if !ok {
		return fmt.Errorf("unknown log level %q", level)
	}
	b.n.cfg.LogLevel.Set(l)
	return nil
}

// announcedAddresses are the addresses /debug/v1/info lists, each with
// /p2p/<id>, as nwaku's NetConfig announces them (waku/node/net_config.nim
// init, listed by waku/node/waku_node.nim info): the node's TCP address,
// then its WebSocket one, then every --ext-multiaddr; with
// --ext-multiaddr-only only the latter. The host part of the first two is
// /dns4/<--dns4-domain-name>, else the --nat=extip: address, else the
// listen address, where 0.0.0.0 (or ::) is given once with the address of
// the interface that routes outward (listenIP), not once per interface. As in
// nwaku, the WebSocket listen address is left out when an --ext-multiaddr
// is a WebSocket one and neither a domain name nor an extip is set.
func (n *Node) announcedAddresses() []string {
	dc := n.cfg.Discovery
	var ext []ma.Multiaddr
	for _, s := range dc.ExtMultiaddrs {
		if a, err := ma.NewMultiaddr(s); err == nil { // checked by validate
			ext = append(ext, a)
		}
	}
	var out []string
	if !dc.ExtMultiaddrOnly {
		host, external := n.announcedHost()
		// The host lists its listen addresses in no fixed order; nwaku
		// announces the TCP one first, then the WebSocket one.
		listen := slices.Clone(n.host.Network().ListenAddresses())
		slices.SortStableFunc(listen, func(a, b ma.Multiaddr) int { return cmp.Compare(btoi(isWS(a)), btoi(isWS(b))) })
		for _, a := range listen {
			first, rest := ma.SplitFirst(a)
			if first == nil || (first.Protocol().Code != ma.P_IP4 && first.Protocol().Code != ma.P_IP6) {
				continue // /p2p-circuit and the like: nothing to dial directly
			}
			if isWS(a) && !external && slices.ContainsFunc(ext, isWS) {
				continue
			}
			h := host
			if h == "" {
				h = ipMultiaddr(net.ParseIP(first.Value()))
				if net.ParseIP(first.Value()).IsUnspecified() {
					h = ipMultiaddr(n.listenIP())
				}
			}
			out = append(out, strings.Replace(h+rest.String(), "/tls/ws", "/wss", 1))
		}
	}
	for _, a := range ext {
		out = append(out, a.String())
	}
	for i, s := range out {
		if !strings.Contains(s, "/p2p/") {
			out[i] = s + "/p2p/" + n.host.ID().String()
		}
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// announcedHost returns the host part that replaces the listen address in
// announced addresses: /dns4/<--dns4-domain-name>, else /ip4/<extip> of
// --nat=extip:, else "" (the listen address itself); external says which
// of the first two applies.
func (n *Node) announcedHost() (host string, external bool) {
	dc := n.cfg.Discovery
	if dc.DNS4DomainName != "" {
		return "/dns4/" + dc.DNS4DomainName, true
	}
	if ip, _ := dc.extIP(); ip != nil {
		return ipMultiaddr(ip), true
	}
	return "", false
}
