package lightpush

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/message"
)

// ErrDial is matched by a *DialError: no stream to the service peer could
// be opened (nwaku's dial_failure, waku/waku_lightpush/client.nim).
var ErrDial = errors.New("lightpush: peer dial failure")

// DialError is returned when no stream to Peer could be opened; Err is
// go-libp2p's reason. errors.Is(err, ErrDial) holds.
type DialError struct {
	Peer peer.ID
	Err  error
}

func (e *DialError) Error() string {
	return fmt.Sprintf("lightpush: open stream to %s: %v", e.Peer, e.Err)
}

// Is reports target == ErrDial.
func (e *DialError) Is(target error) bool { return target == ErrDial }

func (e *DialError) Unwrap() error { return e.Err }

// StatusError is a v3 answer other than 200, or a v2 answer with
// is_success false (Code 0 then).
type StatusError struct {
	Code uint32
	Desc string
}

func (e *StatusError) Error() string {
	if e.Code == 0 {
		return "lightpush: refused: " + e.Desc
	}
	return fmt.Sprintf("lightpush: status %d: %s", e.Code, e.Desc)
}

// Err returns nil for a 200 answer and a *StatusError otherwise.
func (r Response) Err() error {
	if r.StatusCode == StatusOK {
		return nil
	}
	return &StatusError{Code: r.StatusCode, Desc: r.StatusDesc}
}

// ClientConfig configures a Client.
type ClientConfig struct {
	// Counters receives the encode counts. Nil means not counted.
	Counters *message.Counters
	// Timeout bounds one request when the context has no deadline.
	// Default 10 s.
	Timeout time.Duration
}

// Client sends lightpush requests.
type Client struct {
	h   host.Host
	cfg ClientConfig
}

// setDefaults fills in the default of every zero (or negative) field.
func (c *ClientConfig) setDefaults() {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
}

// NewClient returns a client that opens its streams on h.
func NewClient(h host.Host, cfg ClientConfig) *Client {
	cfg.setDefaults()
	return &Client{h: h, cfg: cfg}
}

// Push encodes msg once and asks p to publish it with lightpush v3 on
// pubsubTopic, or on the topic autosharding gives when pubsubTopic is "".
// It returns the answer whatever its status (see Response.Err); errors are
// a *DialError when no stream to p opens, else transport, framing or
// decode errors.
// The message is encoded once, straight into the framed request.
func (c *Client) Push(ctx context.Context, p peer.ID, pubsubTopic string, msg *message.Message) (Response, error) {
	req := Request{RequestID: newRequestID(), PubsubTopic: pubsubTopic, HasPubsubTopic: pubsubTopic != ""}
	return c.send(ctx, p, req, appendRequestFrame(nil, &req, msg, c.cfg.Counters))
}

// Send sends one v3 request as it is and returns the answer.
func (c *Client) Send(ctx context.Context, p peer.ID, req Request) (Response, error) {
	return c.send(ctx, p, req, lpframe.Append(nil, req.Append(nil)))
}

// appendRequestFrame appends the framed encoding of req with msg encoded in
// place as its message (req.Message is ignored): length prefix, request id,
// pubsub topic, message.
func appendRequestFrame(dst []byte, req *Request, msg *message.Message, ctr *message.Counters) []byte {
	head := req.appendHead(nil)
	n := msg.Size()
	size := len(head) + protowire.SizeTag(fieldMessage) + protowire.SizeBytes(n)
	if dst == nil {
		dst = make([]byte, 0, binary.MaxVarintLen64+size)
	}
	dst = binary.AppendUvarint(dst, uint64(size))
	dst = append(dst, head...)
	dst = protowire.AppendTag(dst, fieldMessage, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(n))
	return msg.Append(dst, ctr)
}

func (c *Client) send(ctx context.Context, p peer.ID, req Request, frame []byte) (Response, error) {
	b, err := c.exchange(ctx, p, ProtocolID, frame)
	if err != nil {
		return Response{}, err
	}
	resp, err := decodeResponse(b)
	if err != nil {
		return Response{}, err
	}
	if resp.RequestID != req.RequestID && resp.RequestID != "N/A" {
		return resp, fmt.Errorf("%w: answer to request %q, sent %q", ErrMalformed, resp.RequestID, req.RequestID)
	}
	return resp, nil
}

// PushLegacy asks p to publish msg on pubsubTopic with lightpush v2. A
// refusal is a *StatusError with Code 0 and nwaku's info text.
func (c *Client) PushLegacy(ctx context.Context, p peer.ID, pubsubTopic string, msg *message.Message) error {
	return c.SendLegacy(ctx, p, LegacyRequest{PubsubTopic: pubsubTopic, Message: msg.Encode(c.cfg.Counters)})
}

// SendLegacy sends one v2 request as it is; errors as PushLegacy.
func (c *Client) SendLegacy(ctx context.Context, p peer.ID, req LegacyRequest) error {
	rpc := LegacyRPC{RequestID: newRequestID(), Request: &req}
	b, err := c.exchange(ctx, p, LegacyProtocolID, lpframe.Append(nil, rpc.Append(nil)))
	if err != nil {
		return err
	}
	back, err := decodeLegacyRPC(b)
	if err != nil {
		return err
	}
	if back.Response == nil {
		return fmt.Errorf("%w: response", ErrMissingField)
	}
	if !back.Response.IsSuccess {
		return &StatusError{Desc: back.Response.Info}
	}
	return nil
}

// exchange writes frame (a request behind its length prefix) on a new
// stream to p and reads the response. A stream that cannot be opened is a
// *DialError.
func (c *Client) exchange(ctx context.Context, p peer.ID, proto protocol.ID, frame []byte) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	st, err := c.h.NewStream(ctx, p, proto)
	if err != nil {
		return nil, &DialError{Peer: p, Err: err}
	}
	stop := context.AfterFunc(ctx, func() { st.Reset() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		st.SetDeadline(dl)
	}
	if _, err := st.Write(frame); err != nil {
		st.Reset()
		return nil, fmt.Errorf("lightpush: write request: %w", err)
	}
	st.CloseWrite()
	b, err := lpframe.Read(st, MaxResponseSize)
	if err != nil {
		st.Reset()
		return nil, fmt.Errorf("lightpush: read response: %w", err)
	}
	st.Close()
	return b, nil
}

func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
