package libnet

import (
	"github.com/couriernet/courier/libnet/internal/wire"
)

// Lane is the wire lane a message travels on.
type Lane uint8

const (
	// LaneLegacy is lib-net header version 1: the payload travels base64 in
	// a JSON augData envelope (lib-net header_v1.rs, src/index.ts). It is the
	// zero value, so a network talks to today's lib-net nodes by default.
	LaneLegacy Lane = iota
	// LaneRaw is header version 2: a fixed binary header and the payload as
	// opaque bytes (laid out in the package comment).
	LaneRaw
	// LaneJSON is lib-net's plain lane (no header), accepted on receive only.
	LaneJSON
)

func (l Lane) String() string {
	switch l {
	case LaneLegacy:
		return "legacy"
	case LaneRaw:
		return "raw"
	case LaneJSON:
		return "json"
	}
	return "unknown"
}

// Dir is a message's direction and intent (lib-net augData msgDir).
type Dir uint8

// Directions; the values are the raw header's dir byte.
const (
	DirTell Dir = wire.DirTell // one-way
	DirAsk  Dir = wire.DirAsk  // request that expects a DirResp
	DirResp Dir = wire.DirResp // reply to an ask
)

func (d Dir) String() string {
	switch d {
	case DirTell:
		return "tell"
	case DirAsk:
		return "ask"
	case DirResp:
		return "resp"
	}
	return "unknown"
}

func dirFromText(s string) (Dir, bool) {
	switch s {
	case "tell":
		return DirTell, true
	case "ask":
		return DirAsk, true
	case "resp":
		return DirResp, true
	}
	return 0, false
}

// Compression selects how a payload is compressed. The zero value means
// "the endpoint's default" in a Msg; a Header always reports the codec used.
type Compression uint8

const (
	CompressDefault Compression = iota // Config.Compression
	CompressNone                       // wire value 0
	CompressGzip                       // wire value 1 (lib-net Gzip)
	CompressBrotli                     // wire value 2 (lib-net Brotli)
	CompressZstd                       // wire value 3, raw lane only
)

func (c Compression) code() uint8 { return uint8(c) - 1 }

func compressionFromCode(code uint8) Compression { return Compression(code + 1) }

func (c Compression) String() string {
	switch c {
	case CompressNone:
		return "none"
	case CompressGzip:
		return "gzip"
	case CompressBrotli:
		return "brotli"
	case CompressZstd:
		return "zstd"
	}
	return "default"
}

// Header describes a received message. A Handler's *Header is valid until
// the Handler returns; Owner aliases the frame and must be copied to keep.
type Header struct {
	Version   uint8 // 0 plain JSON lane, 1 header version 1, 2 raw lane
	UUID      [16]byte
	Dir       Dir
	SenderID  string // the sender's id (HeaderV1 sender_id, raw sender id)
	Route     string // raw header route; legacy: data.route
	TrackerID string // HeaderV1 only; a legacy reply echoes the ask's
	// Compression is the header's codec field. On the legacy lane it is
	// reported as sent, although lib-net 1.3.11 and later send data
	// uncompressed whatever it says.
	Compression Compression
	// Owner is the 32-byte Ed25519 public key whose signature was verified,
	// or nil for an unsigned message.
	Owner []byte
	// Remote is the TCP peer address the frame came from ("ip:port").
	Remote string
	// SendTime, ReceiveTime and ReplyTime are Unix nanoseconds from the
	// raw header's trace block or augData (ms resolution); 0 when absent.
	SendTime, ReceiveTime, ReplyTime int64
}

// Lane returns the lane the message arrived on.
func (h *Header) Lane() Lane {
	switch h.Version {
	case wire.VersionRaw:
		return LaneRaw
	case wire.VersionV1:
		return LaneLegacy
	}
	return LaneJSON
}

// Msg is one message to send.
type Msg struct {
	// Route names the handler at the receiver, at most 255 bytes.
	Route string
	// Payload is read, never modified, and not kept after the sending call
	// returns; the caller may reuse it then.
	Payload []byte
	// Compression for this message; CompressDefault uses the endpoint's.
	// Payloads shorter than Config.CompressMin are never compressed.
	Compression Compression
	// Trace adds send/receive/reply timestamps to a raw-lane header.
	Trace bool
	// TrackerID is the legacy header's tracker_id (shardus-core sets one
	// per message, src/p2p/Comms.ts createMsgTracker); the raw lane has no
	// such field and ignores it.
	TrackerID string
}

// Reply is the answer to an Ask. Payload is owned by the caller.
type Reply struct {
	Header  Header
	Payload []byte
}

// Respond answers an ask with payload, which is read before Respond returns
// and not kept. Raw-lane asks are answered on the connection they arrived
// on; legacy asks go to the sender's listen port, as lib-net's respond()
// does (src/index.ts). Responding to a tell or resp returns ErrNotAsk; a
// payload over Config.PayloadLimit returns ErrTooLarge (wrapped) and
// nothing is written.
type Respond func(payload []byte) error

// Handler handles one received tell or ask. payload is valid only until
// the Handler returns and must not be modified; copy it to keep it. The
// Handler runs on the connection's read loop, so the next frame of that
// connection is read after it returns (that is the receive backpressure).
type Handler func(h *Header, payload []byte, respond Respond)
