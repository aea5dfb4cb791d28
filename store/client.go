package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/message"
)

// Errors of Query.
var (
	// ErrRequestID: a successful response carries another request id than
	// the request's.
	ErrRequestID = errors.New("store: response for another request id")
	// ErrDial: no stream to the peer could be opened (nwaku's
	// PEER_DIAL_FAILURE).
	ErrDial = errors.New("store: peer dial failure")
)

// StatusError is returned by Query for a response whose status code is
// not 2xx. Code and Desc are the response's.
type StatusError struct {
	Code uint32
	Desc string
}

func (e *StatusError) Error() string { return fmt.Sprintf("store: status %d: %s", e.Code, e.Desc) }

// Query sends req to peer p over h and returns the response. A request
// without a RequestID gets a random one (32 hex digits); req itself is not
// modified. ctx bounds the whole exchange, dialing included.
//
// The response's messages are decoded once each, counted in c (nil means
// not counted), and alias the response frame. Absent fields 1, 10 and 11
// of the response read as zero values, and a key-value's message and
// pubsub topic are kept only when both are present, as nwaku reads them.
// A response whose status
// is not 2xx is returned as a *StatusError; a 2xx response for another
// request id as ErrRequestID; a failure to open the stream wraps ErrDial.
// A request whose cursor is all zeroes is not sent: it is refused with a
// *StatusError{Code: StatusBadRequest, Desc: "invalid cursor"}, as nwaku's
// store client does before dialing (waku/waku_store/client.nim, query).
// Other errors come from the stream or wrap ErrMalformed or
// lpframe.ErrTooLarge.
func Query(ctx context.Context, h host.Host, p peer.ID, req *Request, c *message.Counters) (*Response, error) {
	if req.Cursor != nil && *req.Cursor == (message.Hash{}) {
		return nil, &StatusError{Code: StatusBadRequest, Desc: "invalid cursor"}
	}
	r := *req
	if r.RequestID == "" {
		var id [16]byte
		rand.Read(id[:])
		r.RequestID = hex.EncodeToString(id[:])
	}
	st, err := h.NewStream(ctx, p, ProtocolID)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDial, p, err)
	}
	stop := context.AfterFunc(ctx, func() { st.Reset() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		st.SetDeadline(dl)
	}
	if err := lpframe.Write(st, r.Append(nil)); err != nil {
		st.Reset()
		return nil, fmt.Errorf("store: write request: %w", err)
	}
	st.CloseWrite()
	data, err := lpframe.Read(st, MaxResponseSize)
	if err != nil {
		st.Reset()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("store: read response: %w", err)
	}
	st.Close()
	resp, err := decodeResponse(data, c)
	switch {
	case err != nil:
		return nil, err
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, &StatusError{Code: resp.StatusCode, Desc: resp.StatusDesc}
	case resp.RequestID != r.RequestID:
		return nil, fmt.Errorf("%w: %q, sent %q", ErrRequestID, resp.RequestID, r.RequestID)
	}
	return resp, nil
}
