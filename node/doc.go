// Package node wires a Waku node together: a libp2p host (TCP, optionally
// WebSocket; TLS 1.3 or Noise; Yamux or mplex; identify; ping; a connection
// manager), the relay, the metadata protocol with its cluster rule, the
// archive, the store, filter and lightpush services and clients, the peer
// manager and discovery, the REST API and the Prometheus metrics server.
// It is the composition root: each part lives in its own package (the
// protocols at the top level, the node's own in node/internal: peers,
// metrics, restapi, health, resume, nodekey, archivegate, httpserve) and
// works over what the node hands it, never over the node itself.
//
// # Embedding
//
// An application builds a node with New from a Config (the zero value
// starts; DefaultConfig is nwaku's defaults, those of `courier node`),
// Starts it and Stops it when done; the examples show each use:
//
//   - receive: Relay().AddHandler gets every envelope relayed on the
//     node's pubsub topics, decoded and hashed once;
//   - publish: Publish, once Relay().WaitTopicPeers says someone follows
//     the topic;
//   - history: store.Query over Host() to StorePeer() (Config.StoreNode),
//     with Config.Store and Config.OnArchived on the node that keeps it;
//   - light client (Relay off): FilterClient subscribes at Config.FilterNode
//     and Config.OnFilterPush receives the pushes; LightpushClient
//     publishes through Config.LightpushNode.
//
// # Life cycle
//
// New resolves the Config: it fills the defaults of the zero fields and
// parses and checks every value (the relayed shards too, see Bounds), so
// that a configuration error comes from New, wrapping ErrConfig and naming
// the flag, and Start fails only for what it meets at run time (a port in
// use, a name that does not resolve). It then loads or creates the node
// key (a secp256k1 key given in hex, or kept in
// DataDir/nodekey; a static node with the node's own peer id is refused,
// and a discovered peer presenting it is warned of: another node runs with
// the same key), opens the archive and starts the host listening. Start subscribes the relay to the configured pubsub
// topics, starts the HTTP servers and keeps the static nodes connected,
// re-dialling with a doubling backoff. Stop shuts down in the order that
// loses nothing: HTTP servers finish their requests, the relay drains its
// subscriptions and handlers, the archive commits and fsyncs what it holds,
// then the host closes its connections. No peer nor HTTP client can hold
// Stop: HTTP requests get StopGrace (5 s) to finish before their
// connections are closed, and StopGrace after the HTTP servers stopped
// the peers' connections are closed anyway. A REST response that its
// client does not read is dropped after a minute (the server's write
// timeout), running or stopping.
//
// # Relayed messages
//
// Every relayed envelope goes to the archive (lossless; it pushes back) and
// then to the relay handlers, among them the REST message cache (lossy,
// counted). Config.OnArchived reports each commit. The metrics collector
// reads the counters at scrape time, so the message path pays only for its
// atomic counters.
//
// # Bounds
//
// Store resume (Config.StoreResume) asks one connected store peer for the
// messages since the newest one archived, at most 6 hours back, 100 per
// page, and stops after 1,000 pages (so 100,000 messages), 10 minutes in
// all, or 30 s without an answer to one page. It stops too, keeping the
// pages before, at the first page that breaks the query: more than 100
// messages, a message without data, with another hash than the peer gave
// or with a timestamp outside the requested window, or a cursor that is
// not the hash of the page's last message, repeats an earlier one or steps
// back in time.
//
// The libp2p peerstore keeps what identify learned of every peer that
// connected (keys, protocols, agent: about 7 kB each); after each round
// of the peer manager (every 30 s, 2 s below its target) the
// disconnected peers it does not keep are forgotten down to
// --peer-store-capacity (1000), as nwaku's prunePeerStore does, so peers
// that come once and go cannot fill it.
//
// The shards a node relays travel in every metadata request and response,
// which peers read up to 1,024 bytes (metadata.MaxRPCSize): at most 508
// shards whatever their ids, up to 573 with low ids. New refuses a
// configuration that relays more (ErrTooManyShards with ErrConfig), and
// the REST API's relay subscriptions (answered 400, the client's fault)
// and filter subscribers' shards are refused when they would go over it,
// so the node always stays readable.
package node
