package peerexchange

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
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

// DecodeRPC decodes a PeerExchangeRPC. Unknown fields are skipped; a
// repeated known scalar takes the last value. The ENR slices alias b.
func DecodeRPC(b []byte) (RPC, error) {
	var rpc RPC
	err := walk(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			rpc.HasQuery = true
			return walk(v, func(num protowire.Number, typ protowire.Type, _ []byte, x uint64) error {
				if num == 1 && typ == protowire.VarintType {
					rpc.NumPeers = x
				}
				return nil
			})
		case num == 2 && typ == protowire.BytesType:
			rpc.HasResponse = true
			return decodeResponse(v, &rpc.Response)
		}
		return nil
	})
	if err != nil {
		return RPC{}, err
	}
	return rpc, nil
}

func decodeResponse(b []byte, r *Response) error {
	hasStatus := false
	err := walk(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			var enr []byte
			err := walk(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num == 1 && typ == protowire.BytesType {
					enr = v
				}
				return nil
			})
			r.ENRs = append(r.ENRs, enr)
			return err
		case num == 10 && typ == protowire.VarintType:
			r.StatusCode, hasStatus = uint32(x), true
		case num == 11 && typ == protowire.BytesType:
			r.StatusDesc = string(v)
		}
		return nil
	})
	if err == nil && !hasStatus {
		r.StatusCode = StatusServiceUnavailable
		if len(r.ENRs) > 0 {
			r.StatusCode = StatusSuccess
		}
	}
	return err
}

// walk calls f for each field of b: v holds a bytes field's value, x a
// varint's. Fixed-width and group fields are skipped.
func walk(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %w", ErrMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %w", ErrMalformed, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}
