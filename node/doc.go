// Package node wires a Waku node together: a libp2p host (TCP, optionally
// WebSocket; TLS 1.3 or Noise; Yamux or mplex; identify; ping; a connection
// manager), the relay, the metadata protocol with its cluster rule, the
// embedded archive, the REST API and the Prometheus metrics server.
//
// # Life cycle
//
// New validates the Config, loads or creates the node key (a secp256k1 key
// given in hex, or kept in DataDir/nodekey), opens the archive and starts
// the host listening. Start subscribes the relay to the configured pubsub
// topics, starts the HTTP servers and keeps the static nodes connected,
// re-dialling with a doubling backoff. Stop shuts down in the order that
// loses nothing: HTTP servers finish their requests, the relay drains its
// subscriptions and handlers, the archive commits and fsyncs what it holds,
// then the host closes its connections. No peer can hold Stop: StopGrace
// (5 s) after the HTTP servers stopped, the connections are closed anyway.
//
// # Relayed messages
//
// Every relayed envelope goes to the archive (lossless; it pushes back) and
// then to the relay handlers, among them the REST message cache (lossy,
// counted). Config.OnArchived reports each commit. The metrics collector
// reads the counters at scrape time, so the message path pays only for its
// atomic counters.
package node
