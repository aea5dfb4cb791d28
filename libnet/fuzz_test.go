package libnet

import (
	"testing"

	"github.com/couriernet/courier/libnet/internal/legacy"
	"github.com/couriernet/courier/libnet/internal/wire"
)

func fuzzSeeds(f *testing.F) {
	f.Add(container(2, 24, rawHdr(1, 0, 3), 3, []byte("abc"), 0, nil))
	f.Add(container(2, 24, rawHdr(2, 8, 0), 0, nil, 0, nil))
	f.Add(container(1, wire.V1MinLen, make([]byte, wire.V1MinLen), 2, []byte("{}"), 0, nil))
	f.Add([]byte(`{"UUID":"550e8400-e29b-41d4-a716-446655440000","PORT":1,"msgDir":"tell","data":{"payload":{"value":"AA==","dataType":"bb"},"route":"r"}}`))
	f.Add([]byte{1})
}

// FuzzParseFrame checks that the container and header parsers never panic
// and that what they accept lies inside the input.
func FuzzParseFrame(f *testing.F) {
	fuzzSeeds(f)
	lim := wire.Limits{Header: 2048, Payload: 1 << 16}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := wire.ParseFrame(b, lim)
		if err != nil {
			return
		}
		if len(fr.Header) > lim.Header || len(fr.Data) > lim.Payload || len(fr.Owner) > wire.MaxOwner || len(fr.Sig) > wire.MaxSignature {
			t.Fatalf("limits not enforced: %d %d %d %d", len(fr.Header), len(fr.Data), len(fr.Owner), len(fr.Sig))
		}
		if h, err := wire.ParseRaw(fr.Header); err == nil {
			if wire.RawLen(h.Flags, string(h.SenderID), string(h.Route)) != len(fr.Header) {
				t.Fatal("raw header length does not round-trip")
			}
		}
		_, _ = wire.ParseV1(fr.Header)
	})
}

// FuzzLegacyEnvelope checks the augData reader on arbitrary JSON.
func FuzzLegacyEnvelope(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		a, _, err := legacy.Parse(b)
		if err == nil && a.Binary && a.Data != nil {
			t.Fatal("binary envelope kept raw data")
		}
	})
}

// FuzzHandleFrame runs whole frames through a connection's receive path
// (parse, verify, decompress, envelope, dispatch) without a socket.
func FuzzHandleFrame(f *testing.F) {
	fuzzSeeds(f)
	key, _ := testKeys(f)
	e, err := New(Config{HashKey: key, PayloadLimit: 1 << 16, Handler: func(*Header, []byte, Respond) {}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	c := &conn{ep: e, remote: "fuzz"}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		c.handle(b, len(b)+4)
	})
}
