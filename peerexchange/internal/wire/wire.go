// Package wire is the peer exchange codec (nwaku
// waku_peer_exchange/rpc_codec.nim): PeerExchangeRPC {query = 1
// {num_peers = 1}, response = 2 {peer_infos = 1 {enr = 1}, status_code =
// 10, status_desc = 11}}.
package wire

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/protowalk"
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("peerexchange: malformed RPC")

// Status codes of a response (nwaku waku_peer_exchange/rpc.nim).
const (
	StatusSuccess            uint32 = 200
	StatusBadRequest         uint32 = 400
	StatusTooManyRequests    uint32 = 429
	StatusServiceUnavailable uint32 = 503
)

// Response is a PeerExchangeResponse. ENRs are records in their RLP form.
type Response struct {
	ENRs [][]byte
	// StatusCode is field 10. A response without it is a success when it
	// holds peers, else service-unavailable (older peers and go-waku write
	// no status; nwaku rpc_codec.nim).
	StatusCode uint32
	StatusDesc string
}

// RPC is a PeerExchangeRPC: {query=1 {num_peers=1}, response=2}.
type RPC struct {
	// HasQuery is false when field 1 is absent, which nwaku rejects.
	HasQuery    bool
	NumPeers    uint64
	HasResponse bool
	Response    Response
}

// EncodeRequest encodes a query for numPeers peers.
func EncodeRequest(numPeers uint64) []byte {
	var q []byte
	q = protowire.AppendTag(q, 1, protowire.VarintType)
	q = protowire.AppendVarint(q, numPeers)
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendBytes(b, q)
}

// EncodeResponse encodes r with an empty query in field 1, which nwaku's
// decoder requires even in a response, and the status code always.
func EncodeResponse(r Response) []byte {
	var resp []byte
	for _, e := range r.ENRs {
		var pi []byte
		pi = protowire.AppendTag(pi, 1, protowire.BytesType)
		pi = protowire.AppendBytes(pi, e)
		resp = protowire.AppendTag(resp, 1, protowire.BytesType)
		resp = protowire.AppendBytes(resp, pi)
	}
	resp = protowire.AppendTag(resp, 10, protowire.VarintType)
	resp = protowire.AppendVarint(resp, uint64(r.StatusCode))
	if r.StatusDesc != "" {
		resp = protowire.AppendTag(resp, 11, protowire.BytesType)
		resp = protowire.AppendString(resp, r.StatusDesc)
	}
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, nil)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendBytes(b, resp)
}

// DecodeRPC decodes a PeerExchangeRPC. Unknown fields are skipped, and so
// is a known field of another wire type; a repeated known scalar takes the
// last value. The ENR slices alias b.
func DecodeRPC(b []byte) (RPC, error) {
	var rpc RPC
	r := protowalk.NewReader(b)
	for r.Next() {
		switch {
		case r.Num() == 1 && r.Type() == protowire.BytesType:
			rpc.HasQuery = true
			q := protowalk.NewReader(r.Bytes())
			for q.Next() {
				if q.Num() == 1 && q.Type() == protowire.VarintType {
					rpc.NumPeers = q.Varint()
				}
			}
			if err := q.Err(); err != nil {
				return RPC{}, malformed(err)
			}
		case r.Num() == 2 && r.Type() == protowire.BytesType:
			rpc.HasResponse = true
			v := r.Bytes()
			if v == nil {
				break // the reader's error
			}
			if err := decodeResponse(v, &rpc.Response); err != nil {
				return RPC{}, err
			}
		}
	}
	if err := r.Err(); err != nil {
		return RPC{}, malformed(err)
	}
	return rpc, nil
}

func decodeResponse(b []byte, resp *Response) error {
	hasStatus := false
	r := protowalk.NewReader(b)
	for r.Next() {
		switch {
		case r.Num() == 1 && r.Type() == protowire.BytesType:
			var enr []byte
			p := protowalk.NewReader(r.Bytes())
			for p.Next() {
				if p.Num() == 1 && p.Type() == protowire.BytesType {
					enr = p.Bytes()
				}
			}
			resp.ENRs = append(resp.ENRs, enr)
			if err := p.Err(); err != nil {
				return malformed(err)
			}
		case r.Num() == 10 && r.Type() == protowire.VarintType:
			resp.StatusCode, hasStatus = uint32(r.Varint()), true
		case r.Num() == 11 && r.Type() == protowire.BytesType:
			resp.StatusDesc = string(r.Bytes())
		}
	}
	if err := r.Err(); err != nil {
		return malformed(err)
	}
	if !hasStatus {
		resp.StatusCode = StatusServiceUnavailable
		if len(resp.ENRs) > 0 {
			resp.StatusCode = StatusSuccess
		}
	}
	return nil
}

// malformed gives a protowalk error ErrMalformed's wording: the field and
// protowire's reason.
func malformed(err error) error {
	e := err.(*protowalk.Error)
	if e.Kind == protowalk.BadTag {
		return fmt.Errorf("%w: %w", ErrMalformed, e.Err)
	}
	return fmt.Errorf("%w: field %d: %w", ErrMalformed, e.Num, e.Err)
}
