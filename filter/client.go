package filter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/internal/lifecycle"
	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/message"
)

// ErrDial is matched by a *DialError: no stream to the service peer could
// be opened (nwaku's PEER_DIAL_FAILURE, waku/waku_filter_v2/client.nim).
var ErrDial = errors.New("filter: peer dial failure")

// DialError is returned when no stream to Peer could be opened; Err is
// go-libp2p's reason. errors.Is(err, ErrDial) holds.
type DialError struct {
	Peer peer.ID
	Err  error
}

func (e *DialError) Error() string {
	return fmt.Sprintf("filter: open stream to %s: %v", e.Peer, e.Err)
}

// Is reports target == ErrDial.
func (e *DialError) Is(target error) bool { return target == ErrDial }

func (e *DialError) Unwrap() error { return e.Err }

// StatusError is a response whose status code is not 200.
type StatusError struct {
	Code uint32
	Desc string
}

func (e *StatusError) Error() string { return fmt.Sprintf("filter: status %d: %s", e.Code, e.Desc) }

// ClientConfig configures a Client.
type ClientConfig struct {
	// Handler receives every pushed message as an envelope whose message was
	// decoded once from the push; it runs on the push stream's goroutine, so
	// a slow handler slows that stream only. Nil drops pushes (counted).
	Handler func(env *message.Envelope, from peer.ID)
	// Counters receives the decode and hash counts. Nil means not counted.
	Counters *message.Counters
	// Timeout bounds one request when the context has no deadline. Default 10 s.
	Timeout time.Duration
	// Logger receives debug records. Nil means slog.Default().
	Logger *slog.Logger
}

// Client is the light-client side of filter v2: it sends subscribe requests
// and serves the push protocol.
type Client struct {
	h   host.Host
	cfg ClientConfig

	life *lifecycle.Group
	mu   sync.Mutex
	open map[network.Stream]struct{}

	received, invalid atomic.Uint64
}

// setDefaults fills in the default of every zero (or negative) field.
func (c *ClientConfig) setDefaults() {
	if c.Timeout <= 0 {
		c.Timeout = DefaultRequestTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// NewClient mounts the push protocol on h.
func NewClient(h host.Host, cfg ClientConfig) *Client {
	cfg.setDefaults()
	c := &Client{h: h, cfg: cfg, life: lifecycle.New(), open: map[network.Stream]struct{}{}}
	h.SetStreamHandler(PushProtocolID, c.handlePush)
	return c
}

// Close removes the push handler, resets the push streams being read and
// waits for their goroutines. Calling it again returns nil.
func (c *Client) Close() error {
	return c.life.Close(func() error {
		c.mu.Lock()
		for st := range c.open {
			st.Reset()
		}
		c.mu.Unlock()
		c.h.RemoveStreamHandler(PushProtocolID)
		return nil
	})
}

// Received returns the number of pushes handed to the handler and the number
// of pushes that did not decode.
func (c *Client) Received() (ok, invalid uint64) { return c.received.Load(), c.invalid.Load() }

func (c *Client) handlePush(st network.Stream) {
	c.mu.Lock() // held while entering, so that Close's stop step finds st in open
	if !c.life.Enter() {
		c.mu.Unlock()
		st.Reset()
		return
	}
	c.open[st] = struct{}{}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.open, st)
		c.mu.Unlock()
		c.life.Leave()
	}()
	from := st.Conn().RemotePeer()
	for {
		b, err := lpframe.Read(st, MaxPushSize)
		if err != nil {
			if errors.Is(err, io.EOF) {
				st.Close()
			} else {
				st.Reset()
			}
			return
		}
		env, err := decodePushEnvelope(b, c.cfg.Counters)
		if err != nil {
			c.invalid.Add(1)
			c.cfg.Logger.Debug("filter: invalid push", "peer", from, "err", err)
			st.Reset()
			return
		}
		c.received.Add(1)
		if c.cfg.Handler != nil {
			c.cfg.Handler(env, from)
		}
	}
}

// decodePushEnvelope decodes a MessagePush and its WakuMessage once; the
// envelope aliases b.
func decodePushEnvelope(b []byte, ctr *message.Counters) (*message.Envelope, error) {
	p, err := DecodePush(b)
	if err != nil {
		return nil, err
	}
	m, err := message.Decode(p.Wire, ctr)
	if err != nil {
		return nil, err
	}
	return message.NewEnvelope(m, p.PubsubTopic, p.Wire, ctr), nil
}

// Subscribe asks p to push messages on pubsubTopic whose content topic is
// one of contentTopics (1 to 100 of them). A non-200 answer is a
// *StatusError.
func (c *Client) Subscribe(ctx context.Context, p peer.ID, pubsubTopic string, contentTopics ...string) error {
	return c.do(ctx, p, SubscribeRequest{Type: Subscribe, PubsubTopic: pubsubTopic, HasPubsubTopic: true, ContentTopics: contentTopics})
}

// Unsubscribe removes the given criteria at p.
func (c *Client) Unsubscribe(ctx context.Context, p peer.ID, pubsubTopic string, contentTopics ...string) error {
	return c.do(ctx, p, SubscribeRequest{Type: Unsubscribe, PubsubTopic: pubsubTopic, HasPubsubTopic: true, ContentTopics: contentTopics})
}

// UnsubscribeAll removes every criterion of this client at p.
func (c *Client) UnsubscribeAll(ctx context.Context, p peer.ID) error {
	return c.do(ctx, p, SubscribeRequest{Type: UnsubscribeAll})
}

// Ping refreshes this client's subscriptions at p; a peer with none answers
// 404 (a *StatusError).
func (c *Client) Ping(ctx context.Context, p peer.ID) error {
	return c.do(ctx, p, SubscribeRequest{Type: SubscriberPing})
}

func (c *Client) do(ctx context.Context, p peer.ID, req SubscribeRequest) error {
	req.RequestID = NewRequestID()
	resp, err := c.Request(ctx, p, req)
	if err != nil {
		return err
	}
	if resp.StatusCode != StatusOK {
		return &StatusError{Code: resp.StatusCode, Desc: resp.StatusDesc}
	}
	return nil
}

// Request sends req to p and returns the response as it came, whatever its
// status. A stream that cannot be opened is a *DialError; other errors
// are stream, framing or decode errors, or a response whose
// request id differs (other than "N/A", which a rate-limited answer has).
func (c *Client) Request(ctx context.Context, p peer.ID, req SubscribeRequest) (SubscribeResponse, error) {
	if c.life.Closed() {
		return SubscribeResponse{}, errClosed
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	st, err := c.h.NewStream(ctx, p, SubscribeProtocolID)
	if err != nil {
		return SubscribeResponse{}, &DialError{Peer: p, Err: err}
	}
	stop := context.AfterFunc(ctx, func() { st.Reset() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		st.SetDeadline(dl)
	}
	if err := lpframe.Write(st, req.Append(nil)); err != nil {
		st.Reset()
		return SubscribeResponse{}, fmt.Errorf("filter: write request: %w", err)
	}
	st.CloseWrite()
	b, err := lpframe.Read(st, MaxResponseSize)
	if err != nil {
		st.Reset()
		return SubscribeResponse{}, fmt.Errorf("filter: read response: %w", err)
	}
	st.Close()
	resp, err := DecodeSubscribeResponse(b)
	if err != nil {
		return SubscribeResponse{}, err
	}
	if resp.RequestID != req.RequestID && resp.RequestID != "N/A" { // "N/A": nwaku's rate-limit answer
		return resp, fmt.Errorf("%w: response to request %q, sent %q", ErrMalformed, resp.RequestID, req.RequestID)
	}
	return resp, nil
}

// NewRequestID returns 16 random bytes in hex, a fresh request id.
func NewRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
