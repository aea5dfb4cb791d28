// Package state holds the node's words for its own state and its peers',
// with the names and values nwaku v0.38.1 gives them: how the node learned
// of a peer (Origin), whether it can reach it (Connectedness), the health
// of the node and of each protocol (HealthStatus) and its connectivity
// (ConnectionStatus). The node computes them; the REST API writes them
// into its JSON as they are.
package state

// Origin tells how the node learned of a peer, as nwaku names it
// (waku/waku_core/peers.nim PeerOrigin).
type Origin string

// Values of Origin.
const (
	UnknownOrigin Origin = "UnknownOrigin"
	Discv5        Origin = "Discv5"
	Static        Origin = "Static"
	PeerExchange  Origin = "PeerExchange"
	DNS           Origin = "Dns"
)

// Connectedness of a peer as nwaku names it (waku/waku_core/peers.nim
// Connectedness): NotConnected for a peer known but never dialled,
// CannotConnect once a dial failed, CanConnect once its last connection
// closed, Connected while a connection is open.
type Connectedness string

// Values of Connectedness.
const (
	NotConnected  Connectedness = "NotConnected"
	CannotConnect Connectedness = "CannotConnect"
	CanConnect    Connectedness = "CanConnect"
	Connected     Connectedness = "Connected"
)

// HealthStatus is a node or protocol health value
// (waku/node/health_monitor/health_status.nim and protocol_health.nim).
type HealthStatus string

// Values of HealthStatus.
const (
	Initializing  HealthStatus = "INITIALIZING"
	Synchronizing HealthStatus = "SYNCHRONIZING"
	Ready         HealthStatus = "READY"
	NotReady      HealthStatus = "NOT_READY"
	NotMounted    HealthStatus = "NOT_MOUNTED"
	ShuttingDown  HealthStatus = "SHUTTING_DOWN"
)

// ConnectionStatus is the node's connectivity as its health report gives
// it (waku/api/types.nim ConnectionStatus).
type ConnectionStatus string

// Values of ConnectionStatus.
const (
	StatusDisconnected       ConnectionStatus = "Disconnected"
	StatusPartiallyConnected ConnectionStatus = "PartiallyConnected"
	StatusConnected          ConnectionStatus = "Connected"
)
