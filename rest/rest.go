// Package rest serves the Waku REST API with nwaku's paths, JSON shapes and
// status codes (nwaku waku/rest_api/endpoint/{relay,health,debug,admin}).
//
// # Routes
//
//	POST   /relay/v1/subscriptions                 JSON array of pubsub topics
//	DELETE /relay/v1/subscriptions                 JSON array of pubsub topics
//	GET    /relay/v1/messages/{pubsubTopic}        drains the topic's cache
//	POST   /relay/v1/messages/{pubsubTopic}        publishes one Message
//	POST   /relay/v1/auto/subscriptions            JSON array of content topics
//	DELETE /relay/v1/auto/subscriptions            JSON array of content topics
//	GET    /relay/v1/auto/messages/{contentTopic}  drains the content topic's cache
//	POST   /relay/v1/auto/messages                 publishes on the content topic's shard
//	GET    /store/v3/messages                      StoreResponse (see StoreBackend)
//	GET    /health                                 Health
//	GET    /info, /debug/v1/info                   Info
//	GET    /version, /debug/v1/version             version text
//	GET    /admin/v1/peers                         []Peer (with --rest-admin, as all /admin routes)
//	GET    /admin/v1/peer/{peerId}                 Peer
//	GET    /admin/v1/peers/connected               []Peer connected
//	GET    /admin/v1/peers/connected/on/{shardId}  []Peer connected, on the shard by metadata
//	GET    /admin/v1/peers/service                 []Peer of the service protocols
//	GET    /admin/v1/peers/relay                   []PeersOfShard (see RelayBackend)
//	GET    /admin/v1/peers/relay/on/{shardId}      PeersOfShard
//	GET    /admin/v1/peers/mesh                    []PeersOfShard, gossipsub mesh peers
//	GET    /admin/v1/peers/mesh/on/{shardId}       PeersOfShard
//	GET    /admin/v1/peers/stats                   counters by group (see getPeerStats)
//	POST   /admin/v1/peers                         JSON array of multiaddrs to connect (see AdminBackend)
//	POST   /admin/v1/log-level/{level}             sets the log level
//	GET    /admin/v1/filter/subscriptions          []FilterSubscription
//	POST   /lightpush/v3/message                   {pubsubTopic?, message} (see LightpushBackend)
//	POST   /lightpush/v1/message                   the same, lightpush v2
//	POST   /filter/v2/subscriptions                {requestId, pubsubTopic?, contentFilters}
//	PUT    /filter/v2/subscriptions                the same
//	DELETE /filter/v2/subscriptions                the same, unsubscribes
//	DELETE /filter/v2/subscriptions/all            {requestId}
//	GET    /filter/v2/subscriptions/{requestId}    pings the filter node
//	GET    /filter/v2/messages/{contentTopic}      drains the filter message cache
//
// Each group of routes is served by the backend Config names for it
// (backend.go); a group without one answers as nwaku's does when its
// protocol is not mounted.
//
// Topics in paths are URL-encoded ("/relay/v1/messages/%2Fwaku%2F2%2Frs%2F0%2F0").
// Successful writes answer 200 "OK" (text/plain); errors answer a status code
// with a plain-text reason.
//
// # Request bodies
//
// A request body is limited to Config.MaxBodyBytes (16 MiB, nwaku's
// limit): a larger one is answered 413 "Request body too large: over N
// bytes", before anything of it is read when its Content-Length says so.
// The bodies of all requests together hold at most Config.MaxBufferedBytes
// (64 MiB) in memory: a request reserves its Content-Length before its
// body is read, waits for room when there is none, and is answered 503
// after 5 s. So 20 concurrent 28 MB POSTs buffer nothing, and 20
// concurrent 16 MiB ones at most 64 MiB (besides the pool of publish
// buffers, which the garbage collector empties).
//
// Store answers draw on the same budget: a GET /store/v3/messages
// reserves, before it queries, what its page can hold (4 x 150 KiB for a
// message with data: its bytes, its base64 and the JSON written; 160
// bytes for a hash), at most MaxBufferedBytes, until its response is
// written, and is answered 503 "Too many store answers in memory, try
// again later" after 5 s without room. Fifty concurrent pages of 100
// large messages held 2.4 GB before; now one is answered at a time.
//
// So do the answers of the GETs that drain a message cache (relay, relay
// auto, filter): before it drains, a GET reserves what answering the
// cached messages holds (4 x the encoded message + 1 KiB each, as a store
// page), at most MaxBufferedBytes, until its response is written, and
// drains only the messages, in arrival order, that fit in what it
// reserved (the first one whatever its size): the others stay for the
// next GET. One that waits 5 s for room is answered 503 "Too many message
// answers in memory, try again later" with Retry-After: 1, and drains
// nothing; a GET with nothing cached answers [] without waiting. So the
// answers of a cache of any --rest-relay-cache-capacity hold at most
// MaxBufferedBytes at a time, however many clients read slowly. The
// JSON array is written one message at a time.
//
// # Validation
//
// The routes that publish (relay, relay auto, lightpush v3 and v1) hold a
// message to nwaku's REST rules (payload and contentTopic present and not
// empty, the content topic not white space) and to the content topic rule
// every way into the node shares (message.CheckContentTopic: at most
// message.MaxContentTopicSize, 1024, bytes), answering 400 before the
// backend sees the message: "Invalid content body, could not decode: ..."
// on the relay routes, "Invalid message! ..." and "Invalid message: ..." on
// lightpush v3 and v1. What the relay's validation refuses after that comes
// back as ErrInvalidMessage, 400 "Failed to publish: <error>".
//
// # Message cache
//
// Messages reach the relay message cache only through (*Server).Deliver,
// which the node calls for every relayed message. As nwaku's (waku/rest_api/
// message_cache.nim), it is one cache of at most Config.CacheSize messages
// (default 50) for all topics: a message is kept once, when its pubsub topic
// or its content topic is subscribed through this API, and is then read
// through either; a full cache drops the message with the oldest timestamp
// and counts the drop (Stats.DroppedOldest, reason "rest_cache_full"). A GET
// removes what it returns.
package rest

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/couriernet/courier/message"
)

// Errors a RelayBackend or NodeBackend returns (wrapped with %w) so that
// the publish handlers answer nwaku's status and text.
var (
	// ErrNotSubscribed: the relay is not subscribed to the pubsub topic.
	// Answered 400 "Failed to publish: Node not subscribed to topic: <topic>".
	ErrNotSubscribed = errors.New("rest: node not subscribed to topic")
	// ErrInvalidMessage: the relay's validators rejected the message.
	// Answered 400 "Failed to publish: <error>".
	ErrInvalidMessage = errors.New("rest: invalid message")
	// ErrAutoshardingDisabled: the node uses static sharding, so content
	// topics have no shard. Answered 400 "Failed to publish. Autosharding
	// is disabled" (nwaku rest_api/endpoint/relay/handlers.nim).
	ErrAutoshardingDisabled = errors.New("rest: autosharding is disabled")
	// ErrSubscriptionRefused: the node cannot take the subscription as
	// asked, whatever its state (its shard set would grow beyond what the
	// metadata protocol carries, say): the client's fault. The relay
	// subscription handlers answer 400 "Failed to subscribe: <error>"; a
	// backend makes its error match (errors.Is) without adding this text.
	ErrSubscriptionRefused = errors.New("rest: subscription refused")
)

// ErrConfig: an invalid Config field.
var ErrConfig = errors.New("rest: invalid config")

// Config configures a Server: the backends that serve each group of
// routes and the server's limits. A nil backend leaves its routes
// answering as nwaku does when the protocol is not mounted (each field
// says how); Node is required. Zero limits take the documented defaults;
// negative ones are errors.
type Config struct {
	// Node answers GET /health, /info, /version (and their /debug/v1
	// forms) and gives the shards of content topics for the autosharding
	// routes. Required.
	Node NodeBackend
	// Relay serves /relay/v1 and the relay and mesh peers of /admin/v1.
	// Nil (nwaku --relay=false): the /relay routes answer 404 "/relay
	// endpoints are not available. Please check your configuration:
	// --relay", GET /admin/v1/peers/relay and /mesh 503 "Error: Relay
	// Protocol is not mounted to the node", and /admin/v1/peers/stats
	// counts no relay or mesh peers.
	Relay RelayBackend
	// Store answers GET /store/v3/messages. Nil: 412 "No suitable service
	// peer & no discovery method", nwaku's answer of a node with neither a
	// store nor a store peer (nwaku serves the route on every node).
	Store StoreBackend
	// Lightpush serves POST /lightpush/v3/message and /lightpush/v1/message.
	// Nil: they answer 404 "/lightpush endpoints are not available.", as
	// nwaku without a lightpush client (waku/rest_api/endpoint/builder.nim).
	Lightpush LightpushBackend
	// Filter serves the filter client routes, /filter/v2. Nil: they answer
	// 404 "/filter endpoints are not available.", as nwaku without a filter
	// client.
	Filter FilterBackend
	// FilterService lists the subscriptions of the node's filter service
	// for GET /admin/v1/filter/subscriptions. Nil (no --filter): 400
	// "Error: Filter Protocol is not mounted to the node".
	FilterService FilterServiceBackend
	// Admin serves /admin/v1 (nwaku --rest-admin). Nil: every /admin route
	// answers 404 "/admin endpoints are not available. Please check your
	// configuration: --rest-admin=true".
	Admin AdminBackend
	// MaxBodyBytes limits a request body in bytes; a larger body is
	// answered 413. Default 16 MiB, nwaku's (waku/rest_api/endpoint/server.nim
	// RestServerConf.default, maxRequestBodySize 16_384 KiB).
	MaxBodyBytes int64
	// MaxBufferedBytes bounds the request body bytes that all requests
	// together hold in memory. Before its body is read a request reserves
	// its Content-Length (MaxBodyBytes when the length is not given) until
	// its handler returns; one that does not fit waits for room, in arrival
	// order, up to 5 s and is then answered 503 "Too many request bodies in
	// memory, try again later" with Retry-After: 1. A body over
	// MaxBodyBytes by its Content-Length is answered 413 without being
	// read, and reserves nothing. Store answers and the answers of the
	// GETs that drain a message cache draw on it too (see the package
	// doc). Default 4 x MaxBodyBytes (64 MiB); less than MaxBodyBytes is
	// invalid.
	MaxBufferedBytes int64
	// CacheSize is the number of messages the relay message cache keeps,
	// all topics together (nwaku --rest-relay-cache-capacity), and the
	// filter message cache too. Default 50 (nwaku message_cache.nim).
	CacheSize int
	// PublishTimeout bounds one RelayPublish call; when it passes the answer
	// is 500 "Failed to publish: timedout". Default 5 s (nwaku futTimeout).
	PublishTimeout time.Duration
	// AllowOrigin lists the origins allowed to call the API from a browser
	// (nwaku --rest-allow-origin): "*" for any, or patterns with * and ?
	// wildcards (see originMatcher). Empty means no origin check and no
	// CORS headers, as nwaku.
	AllowOrigin []string
	// Logger receives the server's logs. Nil means slog.Default().
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultMaxBodyBytes   = 16 << 20
	DefaultCacheSize      = 50
	DefaultPublishTimeout = 5 * time.Second
)

// setDefaults fills in the default of every zero field.
func (c *Config) setDefaults() {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxBufferedBytes == 0 {
		c.MaxBufferedBytes = 4 * c.MaxBodyBytes
	}
	if c.CacheSize == 0 {
		c.CacheSize = DefaultCacheSize
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *Config) validate() error {
	switch {
	case c.MaxBodyBytes < 0:
		return fmt.Errorf("%w: MaxBodyBytes %d < 0", ErrConfig, c.MaxBodyBytes)
	case c.MaxBufferedBytes < c.MaxBodyBytes:
		return fmt.Errorf("%w: MaxBufferedBytes %d < MaxBodyBytes %d", ErrConfig, c.MaxBufferedBytes, c.MaxBodyBytes)
	case c.CacheSize < 0:
		return fmt.Errorf("%w: CacheSize %d < 0", ErrConfig, c.CacheSize)
	case c.PublishTimeout < 0:
		return fmt.Errorf("%w: PublishTimeout %v < 0", ErrConfig, c.PublishTimeout)
	}
	return nil
}

// Server is the REST API as an http.Handler. Build it with New.
//
// Lock order: subMu (subscription changes, held across Backend calls)
// before mu (the caches, held only for map and ring operations).
type Server struct {
	cfg   Config
	log   *slog.Logger
	mux   *http.ServeMux
	subMu sync.Mutex
	cache *cache
	// filterCache keeps what the node's filter client is pushed.
	filterCache *cache
	origins     originMatcher
	bodies      *bodyBudget
}

// New returns a Server over the backends of cfg. Errors wrap ErrConfig.
func New(cfg Config) (*Server, error) {
	if cfg.Node == nil {
		return nil, fmt.Errorf("%w: no Node backend", ErrConfig)
	}
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	origins, err := newOriginMatcher(cfg.AllowOrigin)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), cache: newCache(cfg.CacheSize), filterCache: newCache(cfg.CacheSize), origins: origins,
		bodies: newBodyBudget(cfg.MaxBufferedBytes, cfg.MaxBodyBytes)}
	s.routes()
	return s, nil
}

// Answers of paths not served, by their first segment, as nwaku's REST
// server gives them (waku/rest_api/endpoint/builder.nim,
// restServerNotInstalledTab and requestErrorHandler).
var textNotMounted = map[string]string{
	"relay":     "/relay endpoints are not available. Please check your configuration: --relay",
	"admin":     "/admin endpoints are not available. Please check your configuration: --rest-admin=true",
	"lightpush": "/lightpush endpoints are not available.",
	"filter":    "/filter endpoints are not available.",
}

const textInvalidPath = "Bad request initiated. Invalid path or method used."

// notServed answers a request no route matched: 404 with nwaku's text for
// the API groups without a backend, else 400 "Bad request initiated.
// Invalid path or method used.", as nwaku does for an unknown path or
// method.
func (s *Server) notServed(w http.ResponseWriter, r *http.Request) {
	root, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if text, ok := textNotMounted[root]; ok && !s.mounted(root) {
		writeText(w, http.StatusNotFound, text)
		return
	}
	writeText(w, http.StatusBadRequest, textInvalidPath)
}

// mounted reports whether the route group root has its backend.
func (s *Server) mounted(root string) bool {
	switch root {
	case "relay":
		return s.cfg.Relay != nil
	case "admin":
		return s.cfg.Admin != nil
	case "lightpush":
		return s.cfg.Lightpush != nil
	case "filter":
		return s.cfg.Filter != nil
	}
	return true
}

func (s *Server) routes() {
	s.mux.HandleFunc("/", s.notServed)
	if s.cfg.Relay != nil {
		s.mux.HandleFunc("POST /relay/v1/subscriptions", s.postSubscriptions)
		s.mux.HandleFunc("DELETE /relay/v1/subscriptions", s.deleteSubscriptions)
		s.mux.HandleFunc("GET /relay/v1/messages/{pubsubTopic}", s.getMessages)
		s.mux.HandleFunc("POST /relay/v1/messages/{pubsubTopic}", s.postMessage)
		s.mux.HandleFunc("POST /relay/v1/auto/subscriptions", s.postAutoSubscriptions)
		s.mux.HandleFunc("DELETE /relay/v1/auto/subscriptions", s.deleteAutoSubscriptions)
		s.mux.HandleFunc("GET /relay/v1/auto/messages/{contentTopic}", s.getAutoMessages)
		s.mux.HandleFunc("POST /relay/v1/auto/messages", s.postAutoMessage)
		// nwaku answers OPTIONS on each relay route with 200 "OK"
		// (waku/rest_api/endpoint/relay/handlers.nim), for CORS preflights.
		for _, p := range []string{"/relay/v1/subscriptions", "/relay/v1/messages/{pubsubTopic}", "/relay/v1/auto/subscriptions",
			"/relay/v1/auto/messages/{contentTopic}", "/relay/v1/auto/messages"} {
			s.mux.HandleFunc("OPTIONS "+p, func(w http.ResponseWriter, _ *http.Request) { writeOK(w) })
		}
	}
	s.mux.HandleFunc("GET /store/v3/messages", s.getStoreMessages)
	s.mux.HandleFunc("GET /health", s.getHealth)
	s.mux.HandleFunc("GET /info", s.getInfo)
	s.mux.HandleFunc("GET /debug/v1/info", s.getInfo)
	s.mux.HandleFunc("GET /version", s.getVersion)
	s.mux.HandleFunc("GET /debug/v1/version", s.getVersion)
	s.lightRoutes()
	if s.cfg.Admin != nil {
		s.mux.HandleFunc("GET /admin/v1/filter/subscriptions", s.getFilterAdmin)
		s.mux.HandleFunc("GET /admin/v1/peers", s.getPeers)
		s.mux.HandleFunc("GET /admin/v1/peer/{peerId}", s.getPeer)
		s.mux.HandleFunc("GET /admin/v1/peers/connected", s.getConnectedPeers)
		s.mux.HandleFunc("GET /admin/v1/peers/connected/on/{shardId}", s.getConnectedPeers)
		s.mux.HandleFunc("GET /admin/v1/peers/service", s.getServicePeers)
		s.mux.HandleFunc("GET /admin/v1/peers/relay", s.getRelayPeers(false))
		s.mux.HandleFunc("GET /admin/v1/peers/relay/on/{shardId}", s.getShardPeers(false))
		s.mux.HandleFunc("GET /admin/v1/peers/mesh", s.getRelayPeers(true))
		s.mux.HandleFunc("GET /admin/v1/peers/mesh/on/{shardId}", s.getShardPeers(true))
		s.mux.HandleFunc("GET /admin/v1/peers/stats", s.getPeerStats)
		s.mux.HandleFunc("POST /admin/v1/peers", s.postPeers)
		s.mux.HandleFunc("POST /admin/v1/log-level/{logLevel}", s.postLogLevel)
	}
}

// ServeHTTP serves the routes listed in the package documentation.
//
// nwaku's router has no HEAD route and no path cleaning, so a HEAD request,
// and a path with an empty, "." or ".." segment or a trailing slash, are
// answered as an unknown path rather than run as a GET (which would drain
// a message cache) or redirected as http.ServeMux would.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.origins.check(w, r) {
		return
	}
	if p := r.URL.EscapedPath(); r.Method == http.MethodHead || p != "/" && path.Clean(p) != p {
		s.notServed(w, r)
		return
	}
	if n := s.bodies.size(r); n > 0 {
		if !s.bodies.reserve(w, r, n) {
			return
		}
		defer s.bodies.release(n)
	}
	s.mux.ServeHTTP(w, r)
}

// Deliver offers one relayed message to the caches: it is kept if its
// pubsub topic or its content topic is subscribed through this API. Deliver
// never blocks on I/O or on a backend; it takes one mutex for a few map and
// ring operations, so it may run on the dispatcher's consumer queue. env is
// kept by reference until a GET drains it or it is dropped.
func (s *Server) Deliver(env *message.Envelope) { s.cache.deliver(env) }

// CacheTopics starts caching pubsubTopics and contentTopics (shards[i] is
// the pubsub topic of contentTopics[i]) as if they had been subscribed
// through the API, without asking the relay backend: the node calls it at start
// for the topics it relays by configuration, so GET /relay/v1/messages
// answers without a POST first, as nwaku's pre-subscribed cache does
// (waku/rest_api/endpoint/builder.nim startRestServerProtocolSupport).
func (s *Server) CacheTopics(pubsubTopics, contentTopics, shards []string) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	s.cache.addPubsub(pubsubTopics)
	s.cache.addContent(contentTopics, shards)
}

// Stats returns a snapshot of the cache counters.
func (s *Server) Stats() Stats { return s.cache.stats() }
