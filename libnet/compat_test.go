package libnet

import (
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"encoding/binary"
	"io"
	"net"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"golang.org/x/crypto/blake2b"
)

// handV1Frame builds a signed header-version-1 frame byte by byte from the
// layout of lib-net's message.rs and header_v1.rs (independently of the
// package's encoder): outer u32 BE length, marker 0x01, version 1, u32 LE
// lengths, HeaderV1, data, owner, 96-byte combined signature.
func handV1Frame(t *testing.T, data []byte, compression uint32, uuid [16]byte, sender string) []byte {
	t.Helper()
	return v1Frame(t, v1Spec{data: data, comp: compression, uuid: uuid, sender: sender})
}

// v1Spec describes a frame as lib-net's sender lays it out
// (shardus_net_sender.rs send_with_header, header_v1.rs serialize,
// message.rs sign, @2832f1d).
type v1Spec struct {
	data            []byte
	comp            uint32
	uuid            [16]byte
	sender, tracker string
	unsigned        bool   // owner and signature empty
	hashKey         []byte // signs with this key instead of the test key
}

func v1Frame(t *testing.T, s v1Spec) []byte {
	t.Helper()
	key, sk := testKeys(t)
	if s.hashKey != nil {
		key = s.hashKey
	}
	le := binary.LittleEndian
	var hdr []byte
	hdr = append(hdr, s.uuid[:]...)
	hdr = le.AppendUint32(hdr, uint32(len(s.data))) // message_length
	hdr = le.AppendUint32(hdr, uint32(len(s.sender)))
	hdr = append(hdr, s.sender...)
	hdr = le.AppendUint32(hdr, uint32(len(s.tracker)))
	hdr = append(hdr, s.tracker...)
	hdr = le.AppendUint32(hdr, 0) // verification_data
	hdr = le.AppendUint32(hdr, s.comp)
	signed := []byte{1}
	signed = le.AppendUint32(signed, uint32(len(hdr)))
	signed = append(signed, hdr...)
	signed = le.AppendUint32(signed, uint32(len(s.data)))
	signed = append(signed, s.data...)
	var owner, sig []byte
	if !s.unsigned {
		h, _ := blake2b.New256(key)
		h.Write(signed)
		sum := h.Sum(nil)
		sig = append(ed25519.Sign(sk, sum), sum...)
		owner = sk.Public().(ed25519.PublicKey)
	}
	body := append([]byte{0x01}, signed...)
	body = le.AppendUint32(body, uint32(len(owner)))
	body = append(body, owner...)
	body = le.AppendUint32(body, uint32(len(sig)))
	body = append(body, sig...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func brotliBytes(b []byte) []byte {
	var buf bytes.Buffer
	w := brotli.NewWriterOptions(&buf, brotli.WriterOptions{Quality: 5, LGWin: 22})
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// readHandFrame reads one frame from r and takes it apart by hand.
func readHandFrame(t *testing.T, r io.Reader) (hdr, data, owner, sig, signed []byte) {
	t.Helper()
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(l[:]))
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatal(err)
	}
	if body[0] != 0x01 || body[1] != 1 {
		t.Fatalf("marker %d version %d", body[0], body[1])
	}
	le := binary.LittleEndian
	off := 2
	next := func() []byte {
		n := int(le.Uint32(body[off:]))
		v := body[off+4 : off+4+n]
		off += 4 + n
		return v
	}
	hdr, data = next(), next()
	signed = body[1:off]
	owner, sig = next(), next()
	if off != len(body) {
		t.Fatalf("%d trailing bytes", len(body)-off)
	}
	return
}

// TestHeaderV1HandBuiltFrames plays a lib-net node: it writes signed
// header-v1 asks built byte by byte (uncompressed, gzip, brotli) and reads
// the Go node's replies, which lib-net sends to ADDRESS:PORT of augData.
func TestHeaderV1HandBuiltFrames(t *testing.T) {
	key, sk := testKeys(t)
	b, err := New(Config{ListenAddr: "127.0.0.1:0", SenderID: "go-node", HashKey: key, SigningKey: sk, RequireSigned: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got := make(chan []byte, 1)
	b.Handle("binary/echo", func(h *Header, p []byte, respond Respond) {
		if h.SenderID != "lib-net-node" || h.Lane() != LaneLegacy || len(h.Owner) != 32 {
			t.Errorf("header %+v", h)
		}
		got <- append([]byte(nil), p...)
		if err := respond(p); err != nil {
			t.Error(err)
		}
	}, RouteOptions{})
	replies, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer replies.Close()
	_, port, _ := net.SplitHostPort(replies.Addr().String())
	// The Go node dials the reply port once and reuses the connection, as
	// lib-net does; closing it between asks would race the pool's reuse.
	var rc net.Conn
	defer func() {
		if rc != nil {
			rc.Close()
		}
	}()

	payload := []byte{0, 1, 2, 0xfe, 0xff, 'h', 'i'}
	uuid := [16]byte{0x55, 0x0e, 0x84, 0x00, 0xe2, 0x9b, 0x41, 0xd4, 0xa7, 0x16, 0x44, 0x66, 0x55, 0x44, 0, 0}
	aug := `{"ADDRESS":"127.0.0.1","PORT":` + port + `,"UUID":"550e8400-e29b-41d4-a716-446655440000",` +
		`"data":{"payload":{"value":"AAEC/v9oaQ==","dataType":"bb"},"route":"binary/echo"},"msgDir":"ask",` +
		`"receivedTime":0,"replyReceivedTime":0,"replyTime":0,"sendTime":` + strconv.FormatInt(time.Now().UnixMilli(), 10) + `,"timeout":5000}`
	for _, tc := range []struct {
		name string
		code uint32
		data []byte
	}{
		{"none", 0, []byte(aug)},
		{"gzip", 1, gzipBytes([]byte(aug))},
		{"brotli", 2, brotliBytes([]byte(aug))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", b.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(handV1Frame(t, tc.data, tc.code, uuid, "lib-net-node")); err != nil {
				t.Fatal(err)
			}
			if p := recv(t, got); !bytes.Equal(p, payload) {
				t.Fatalf("payload %x", p)
			}
			if rc == nil {
				if rc, err = replies.Accept(); err != nil {
					t.Fatal(err)
				}
			}
			hdr, data, owner, sig, signed := readHandFrame(t, rc)
			if !bytes.Equal(hdr[:16], uuid[:]) || binary.LittleEndian.Uint32(hdr[16:]) != uint32(len(data)) {
				t.Fatalf("reply header %x", hdr)
			}
			h, _ := blake2b.New256(key)
			h.Write(signed)
			sum := h.Sum(nil)
			if !bytes.Equal(owner, sk.Public().(ed25519.PublicKey)) || len(sig) != 96 ||
				!bytes.Equal(sig[64:], sum) || !ed25519.Verify(owner, sum, sig[:64]) {
				t.Fatal("reply signature does not verify")
			}
			// The reply's data is the Buffer itself, as shardus-core's
			// askBinary reads it (src/p2p/Comms.ts @cde14fd).
			re := regexp.MustCompile(`^\{"PORT":` + port + `,"UUID":"550e8400-e29b-41d4-a716-446655440000","data":\{"value":"AAEC/v9oaQ==","dataType":"bb"\},"msgDir":"resp","receivedTime":\d+,"replyReceivedTime":0,"replyTime":\d+,"sendTime":\d+\}$`)
			if !re.Match(data) {
				t.Fatalf("reply data %s", data)
			}
		})
	}
}
