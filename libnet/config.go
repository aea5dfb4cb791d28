package libnet

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/couriernet/courier/libnet/internal/wire"
)

// Config configures an Endpoint. The zero value of every field has the
// meaning documented beside it; New applies the defaults.
type Config struct {
	// ListenAddr is the TCP address to listen on, e.g. "127.0.0.1:0".
	// Empty means send-only: no listener, so no legacy asks (their replies
	// arrive on the listener).
	ListenAddr string
	// SenderID is written into every header (at most 255 bytes).
	SenderID string

	// Lane is the lane this network sends on; zero is LaneLegacy, which
	// needs HashKey and SigningKey (see below). PeerLanes
	// overrides it per peer address ("ip:port"). A peer that has sent us a
	// raw frame on a connection we dialled is known to accept the raw lane
	// and gets it unless NoLearn is set or PeerLanes says otherwise. Both
	// lanes and the plain JSON lane are always accepted.
	Lane      Lane
	PeerLanes map[string]Lane
	NoLearn   bool

	// Compression is the default per-message codec; zero means none. It
	// applies on the raw lane, and on the legacy lane only to peers in
	// LegacyCompressPeers (zstd falls back to none there: lib-net has no
	// zstd). CompressMin is the payload size in bytes below which nothing is
	// compressed; zero means 1024, negative means always compress.
	Compression Compression
	CompressMin int
	// LegacyCompressPeers lists peers ("ip:port") that run lib-net 1.3.10
	// or older, which decompress what the header's compression field says.
	// Every other legacy frame is sent uncompressed with the field None, as
	// lib-net 1.3.11 and later send and expect: they never compress and never
	// decompress, whatever the field says (shardus_net/src/lib.rs
	// ENABLE_COMPRESSION = false since commit e6680a8). On receive no list is
	// needed: legacy data that is plain JSON is read as such whatever the
	// field says, and anything else is decompressed as the field says.
	LegacyCompressPeers map[string]bool

	// HashKey is the decoded bytes of the network's hex hashKey (lib-net
	// crypto ShardusCrypto::new hex-decodes it), 16 to 64 bytes. SigningKey
	// is the 64-byte Ed25519 secret key (sodium layout: seed then public
	// key). The legacy lane needs both: lib-net verifies every headered frame
	// and drops the connection on an unsigned one, so New refuses a legacy
	// Lane or PeerLanes entry without them, and a legacy reply fails with
	// ErrNoSigningKey. Raw-lane frames are signed when SignRaw is set.
	//
	// Authentication, per lane, of what is received: with HashKey set, a
	// legacy frame must carry a signature that verifies (else it is dropped
	// as DropUnsigned or DropBadSignature and the connection kept, as
	// lib-net's listener skips it); a raw frame's signature is verified if
	// it has one, and an unsigned raw frame is accepted unless RequireSigned
	// is set; the plain JSON lane is never signed and is accepted unless
	// RequireSigned is set. Without HashKey nothing can be verified and
	// every frame is accepted unauthenticated. A verified signature proves
	// the frame came from Header.Owner; whether that key belongs to the
	// network is the application's check (shardus-core checks
	// NodeList.byPubKey and the sender id, src/p2p/Comms.ts).
	HashKey       []byte
	SigningKey    ed25519.PrivateKey
	SignRaw       bool
	RequireSigned bool

	// HeaderLimit is the largest header in bytes received; zero means 4096
	// (lib-net 1.3.x HEADER_SIZE_LIMIT_IN_BYTES = 2*2048). PayloadLimit is
	// the largest data section and decompressed payload in bytes, received
	// and sent: a message whose payload or encoded data section is larger
	// is refused with ErrTooLarge before anything is written. Zero means
	// 64 MiB (lib-net 1.3.x has no limit; 1.4.x takes 2 MiB frames, which
	// LegacySend keeps to).
	HeaderLimit  int
	PayloadLimit int
	// LegacySend bounds what is sent on the legacy lane so that lib-net
	// 1.4.x reads every frame; its zero fields mean 1.4.x's limits.
	LegacySend SendLimits

	// AskTimeout bounds an Ask whose context has no deadline; zero means 5 s
	// (shardus-core network.timeout).
	AskTimeout time.Duration
	// DialTimeout bounds a connect; zero means 3 s. WriteTimeout bounds one
	// write of queued frames; zero means 10 s. IdleTimeout closes pooled
	// connections unused that long (checked every IdleTimeout/2), and
	// accepted connections on which no frame begins for twice that long,
	// counted in Stats.IdleClosed: a peer with the same IdleTimeout has
	// closed its end by then, so no frame it sends is lost to the race of
	// two closes. Zero means 5 min, negative never.
	DialTimeout  time.Duration
	WriteTimeout time.Duration
	IdleTimeout  time.Duration
	// FrameTimeout bounds the receipt of one frame on any connection: once
	// its first byte has arrived, the rest must arrive within FrameTimeout
	// or the connection is closed and the frame counted as
	// DropFrameTimeout. Zero means 30 s, negative no limit.
	FrameTimeout time.Duration

	// MaxPeers bounds the pool of outbound connections (LRU); zero means
	// 1024. QueueLen bounds each peer's send queue in messages; a full queue
	// blocks the sender until its context ends. Zero means 256.
	MaxPeers int
	QueueLen int
	// AsyncQueueLen bounds what the asynchronous calls (SendFrame,
	// TellAsync and the rest), which never block, may queue to one peer
	// beyond QueueLen; one more is refused with ErrQueueFull. Zero means
	// 65536.
	AsyncQueueLen int
	// MaxInboundConns bounds the accepted connections open at once; a
	// connection accepted beyond it is closed at once and counted in
	// Stats.RefusedConns. Zero means 1024.
	MaxInboundConns int

	// DedupSize is the number of payload hashes remembered per endpoint for
	// routes registered with RouteOptions.Dedup; zero means 16384.
	DedupSize int

	// Handler receives tells and asks on routes without their own handler;
	// nil drops them (counted as DropNoHandler). HandlerDedup deduplicates
	// what reaches it as RouteOptions.Dedup does for a route.
	Handler      Handler
	HandlerDedup bool
	// FrameHandler, if set, receives every legacy frame (plain lane and
	// header version 1) unparsed, for a host that owns lib-net's envelope
	// (see Frame); Handler and the routes then get raw-lane messages only.
	// With it, every frame whose first byte is not 0x01 is the plain lane,
	// as lib-net's listener reads it.
	FrameHandler FrameHandler
	// OnError, if set, is called with every rejected frame (*FrameError),
	// failed reply and failed accept (*AcceptError). It must not block.
	OnError func(err error)
}

// SendLimits bounds legacy frames sent, in bytes. lib-net 1.4.x checks
// these on receive and panics the connection's task over a field limit
// (NetConfig, header_v1.rs check_variable_size, commit 9d454a4).
type SendLimits struct {
	// Frame is the largest frame after the outer length; zero means 2 MiB
	// (NetConfig payload_size_limit, which its listener checks against the
	// outer length). A larger frame is refused with ErrTooLarge.
	Frame int
	// Header is the largest HeaderV1; zero means 2048 (header_size_limit).
	Header int
	// SenderID is the longest sender id; zero means 64. New refuses a
	// longer Config.SenderID when the legacy lane is configured, and a
	// legacy reply with one fails with ErrTooLarge.
	SenderID int
}

func (c *Config) setDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.CompressMin, 1024)
	def(&c.HeaderLimit, 4096)
	def(&c.PayloadLimit, 64<<20)
	def(&c.LegacySend.Frame, 2<<20)
	def(&c.LegacySend.Header, 2048)
	def(&c.LegacySend.SenderID, 64)
	def(&c.MaxPeers, 1024)
	def(&c.QueueLen, 256)
	def(&c.AsyncQueueLen, 65536)
	def(&c.MaxInboundConns, 1024)
	def(&c.DedupSize, 16384)
	defd(&c.AskTimeout, 5*time.Second)
	defd(&c.DialTimeout, 3*time.Second)
	defd(&c.WriteTimeout, 10*time.Second)
	defd(&c.IdleTimeout, 5*time.Minute)
	defd(&c.FrameTimeout, 30*time.Second)
	if c.Compression == CompressDefault {
		c.Compression = CompressNone
	}
}

func (c *Config) validate() error {
	switch {
	case len(c.SenderID) > 255:
		return fmt.Errorf("%w: SenderID over 255 bytes", ErrBadConfig)
	case c.Lane > LaneRaw:
		return fmt.Errorf("%w: Lane %d cannot be sent", ErrBadConfig, c.Lane)
	case c.Compression > CompressZstd:
		return fmt.Errorf("%w: Compression %d", ErrBadConfig, c.Compression)
	case c.HashKey != nil && (len(c.HashKey) < 16 || len(c.HashKey) > 64):
		return fmt.Errorf("%w: HashKey of %d bytes, want 16-64", ErrBadConfig, len(c.HashKey))
	case c.SigningKey != nil && len(c.SigningKey) != ed25519.PrivateKeySize:
		return fmt.Errorf("%w: SigningKey of %d bytes", ErrBadConfig, len(c.SigningKey))
	case c.SigningKey != nil && c.HashKey == nil:
		return fmt.Errorf("%w: SigningKey without HashKey", ErrBadConfig)
	case c.RequireSigned && c.HashKey == nil:
		return fmt.Errorf("%w: RequireSigned without HashKey", ErrBadConfig)
	case c.HeaderLimit < 64 || c.PayloadLimit < 1:
		return fmt.Errorf("%w: limits header %d payload %d", ErrBadConfig, c.HeaderLimit, c.PayloadLimit)
	case c.LegacySend.Frame < 1 || c.LegacySend.Header < wire.V1MinLen || c.LegacySend.SenderID < 0:
		return fmt.Errorf("%w: LegacySend %+v", ErrBadConfig, c.LegacySend)
	case c.MaxPeers < 1 || c.QueueLen < 1 || c.AsyncQueueLen < 1 || c.DedupSize < 1 || c.MaxInboundConns < 1:
		return fmt.Errorf("%w: MaxPeers, QueueLen, AsyncQueueLen, DedupSize and MaxInboundConns must be positive", ErrBadConfig)
	}
	legacy := c.Lane == LaneLegacy
	for p, l := range c.PeerLanes {
		if l > LaneRaw {
			return fmt.Errorf("%w: PeerLanes[%s] = %d", ErrBadConfig, p, l)
		}
		legacy = legacy || l == LaneLegacy
	}
	if legacy {
		return c.legacyReady()
	}
	return nil
}

// legacyReady reports why this endpoint cannot send on the legacy lane,
// wrapped in ErrBadConfig, or nil.
func (c *Config) legacyReady() error {
	if c.SigningKey == nil {
		return fmt.Errorf("%w: %w (set them, or Lane: LaneRaw)", ErrBadConfig, ErrNoSigningKey)
	}
	if len(c.SenderID) > c.LegacySend.SenderID {
		return fmt.Errorf("%w: SenderID of %d bytes on the legacy lane, LegacySend.SenderID %d (lib-net 1.4 panics over 64)",
			ErrBadConfig, len(c.SenderID), c.LegacySend.SenderID)
	}
	return nil
}
