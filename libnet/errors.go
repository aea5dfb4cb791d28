package libnet

import (
	"errors"
	"fmt"
	"time"

	"github.com/couriernet/courier/libnet/internal/legacy"
	"github.com/couriernet/courier/libnet/internal/wire"
)

// Errors of frame and header parsing (lib-net message.rs, header_v1.rs). A
// frame that fails with one of them is dropped (DropBadFrame) and its
// connection kept, as lib-net skips it; only a frame that cannot be delimited (an
// outer length over the limits, ErrPayloadTooLarge; a stream cut short,
// ErrTruncated) closes the connection.
var (
	ErrTruncated       = wire.ErrTruncated       // a field runs past the frame
	ErrEmptyFrame      = wire.ErrEmptyFrame      // outer length 0
	ErrUnknownVersion  = wire.ErrUnknownVersion  // header version not 1 or 2
	ErrUnknownLane     = wire.ErrUnknownLane     // first byte neither 0x01 nor '{'
	ErrHeaderTooLarge  = wire.ErrHeaderTooLarge  // header over Config.HeaderLimit
	ErrPayloadTooLarge = wire.ErrPayloadTooLarge // data over Config.PayloadLimit
	ErrFieldTooLarge   = wire.ErrFieldTooLarge   // owner, signature or string too long
	ErrLengthMismatch  = wire.ErrLengthMismatch  // a length that lies about the bytes
	ErrMalformed       = wire.ErrMalformed       // a header field with a bad value
	ErrBadEnvelope     = legacy.ErrBadEnvelope   // augData JSON that cannot be read
)

// Errors of the API.
var (
	ErrClosed       = errors.New("libnet: endpoint closed")
	ErrTimeout      = errors.New("libnet: ask timed out")
	ErrNotAsk       = errors.New("libnet: respond to a message that is not an ask")
	ErrNoListener   = errors.New("libnet: legacy ask needs a listener for the reply")
	ErrUnsigned     = errors.New("libnet: unsigned message on a network that requires signatures")
	ErrRouteTooLong = errors.New("libnet: route or sender id over 255 bytes")
	ErrBadConfig    = errors.New("libnet: bad config")
	// ErrNoSigningKey refuses to send on the legacy lane without HashKey
	// and SigningKey: lib-net verifies every headered frame and panics on
	// an empty owner ("Invalid public key"), dropping the connection.
	ErrNoSigningKey = errors.New("libnet: the legacy lane needs HashKey and SigningKey")
	// ErrAskExpired is returned by Respond to a legacy ask whose sendTime
	// + timeout has passed; nothing is written, as in lib-net's respond()
	// (src/index.ts), since the asker has given up.
	ErrAskExpired = errors.New("libnet: ask expired before the reply")
	// ErrBadMsg refuses a Msg whose Compression is not one of the
	// Compression constants; nothing is written.
	ErrBadMsg = errors.New("libnet: bad message")
	// ErrTooLarge refuses a message to send (or a reply) whose payload or
	// encoded data section is over Config.PayloadLimit; nothing is written.
	// The wrapping error names the size and the limit in bytes.
	ErrTooLarge = errors.New("libnet: message too large to send")
	// ErrFrameTimeout ends a connection on which a frame's bytes did not
	// all arrive within Config.FrameTimeout of its first byte; it reaches
	// OnError wrapped in a *FrameError.
	ErrFrameTimeout = errors.New("libnet: frame not received in time")
	// ErrDial is joined to the error of a send whose connection could not
	// be made (errors.Is(err, ErrDial) holds, and so does errors.Is for the
	// dial's own error, such as syscall.ECONNREFUSED); a send that failed
	// on an open connection does not match it.
	ErrDial = errors.New("libnet: dial failed")
	// ErrQueueFull refuses an asynchronous send (SendFrame, TellAsync and
	// the rest) to a peer whose queue holds Config.QueueLen messages;
	// nothing is written. The wrapping error names the peer and the limit.
	ErrQueueFull = errors.New("libnet: send queue full")
	// ErrNoLegacyHeader refuses an OutFrame with a header version other
	// than 0 (no header) or 1: lib-net's header factory knows no other
	// (header_factory.rs header_from_json_string), and lib-net's JavaScript
	// sees it as "Failed to parse header".
	ErrNoLegacyHeader = errors.New("libnet: failed to parse header")
)

// SignatureError reports a signed frame whose signature does not verify
// (lib-net crypto/src/lib.rs verify). errors.Is(err, ErrBadSignature) holds.
type SignatureError struct {
	Owner  []byte // the claimed 32-byte public key (a copy)
	Reason string
}

// ErrBadSignature is the sentinel every *SignatureError matches.
var ErrBadSignature = errors.New("libnet: bad signature")

func (e *SignatureError) Error() string {
	return fmt.Sprintf("libnet: bad signature from owner %x: %s", e.Owner, e.Reason)
}

// Is reports whether target is ErrBadSignature.
func (e *SignatureError) Is(target error) bool { return target == ErrBadSignature }

// FrameError reports a received frame that was rejected, with the remote
// address; it wraps one of the parse sentinels above, ErrUnsigned,
// ErrFrameTimeout or a *SignatureError.
type FrameError struct {
	Remote string
	Err    error
}

func (e *FrameError) Error() string { return "libnet: frame from " + e.Remote + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *FrameError) Unwrap() error { return e.Err }

// AcceptError reports a failed accept on the listener (for example too
// many open files); the endpoint retries after Retry. It unwraps to the
// listener's error.
type AcceptError struct {
	Err   error
	Retry time.Duration
}

func (e *AcceptError) Error() string {
	return fmt.Sprintf("libnet: accept: %v (retrying in %v)", e.Err, e.Retry)
}

// Unwrap returns the listener's error.
func (e *AcceptError) Unwrap() error { return e.Err }
