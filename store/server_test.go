package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
)

func newHost(t testing.TB) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// pair returns a client host connected to a server host serving a.
func pair(t testing.TB, a archive.Archive, cfg Config) (client host.Host, server peer.ID, s *Server) {
	t.Helper()
	sh, ch := newHost(t), newHost(t)
	s, err := NewServer(sh, a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ch.Connect(ctx, peer.AddrInfo{ID: sh.ID(), Addrs: sh.Addrs()}); err != nil {
		t.Fatal(err)
	}
	return ch, sh.ID(), s
}

// openArchive opens an embedded archive in a test directory.
func openArchive(t testing.TB) archive.Archive {
	t.Helper()
	a, err := embedded.Open(t.TempDir(), archive.Config{}, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func appendWait(t testing.TB, a archive.Archive, env *message.Envelope) {
	t.Helper()
	ack := make(chan error, 1)
	if err := a.Append(context.Background(), env, func(err error) { ack <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-ack; err != nil {
		t.Fatal(err)
	}
}

func newEnv(t testing.TB, pubsub, content string, ts int64, payload string) *message.Envelope {
	t.Helper()
	m := &message.Message{Payload: []byte(payload), ContentTopic: content, Timestamp: ts, Present: message.HasTimestamp}
	wire := m.Encode(nil)
	dm, err := message.Decode(wire, nil)
	if err != nil {
		t.Fatal(err)
	}
	return message.NewEnvelope(dm, pubsub, wire, nil)
}

const (
	topicA = "/waku/2/rs/0/0"
	topicB = "/waku/2/rs/0/1"
)

func ct(name string) string { return "/app/1/" + name + "/proto" }

// fixture is a store node's archive with named messages:
//
//	a1 A x 10   a2 A y 20   tLo,tMid,tHi A x 30 (same time, by hash)
//	a6 A z 40   a7 A x 50   b1 B x 25   b2 B y 35
//
// On pubsub topic A and content topic x the forward order is
// a1 tLo tMid tHi a7.
type fixture struct {
	client host.Host
	server peer.ID
	srv    *Server
	env    map[string]*message.Envelope
	names  map[message.Hash]string
}

func newFixture(t *testing.T, open func(testing.TB) archive.Archive, cfg Config) *fixture {
	t.Helper()
	a := open(t)
	f := &fixture{env: map[string]*message.Envelope{}, names: map[message.Hash]string{}}
	add := func(name, pubsub, content string, ts int64) {
		env := newEnv(t, pubsub, ct(content), ts, "payload of "+name)
		f.env[name], f.names[env.Hash()] = env, name
		appendWait(t, a, env)
	}
	add("a1", topicA, "x", 10)
	add("a2", topicA, "y", 20)
	add("t1", topicA, "x", 30)
	add("t2", topicA, "x", 30)
	add("t3", topicA, "x", 30)
	add("a6", topicA, "z", 40)
	add("a7", topicA, "x", 50)
	add("b1", topicB, "x", 25)
	add("b2", topicB, "y", 35)
	ties := []*message.Envelope{f.env["t1"], f.env["t2"], f.env["t3"]}
	slices.SortFunc(ties, func(x, y *message.Envelope) int {
		hx, hy := x.Hash(), y.Hash()
		return bytes.Compare(hx[:], hy[:])
	})
	for i := range 3 {
		delete(f.env, fmt.Sprintf("t%d", i+1))
	}
	for i, name := range []string{"tLo", "tMid", "tHi"} {
		f.env[name], f.names[ties[i].Hash()] = ties[i], name
	}
	f.client, f.server, f.srv = pair(t, a, cfg)
	return f
}

func (f *fixture) hash(name string) *message.Hash {
	h := f.env[name].Hash()
	return &h
}

func (f *fixture) query(t *testing.T, r *Request) (*Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return Query(ctx, f.client, f.server, r, nil)
}

// page renders a response as "n1 n2 ... | cursor", "-" for no cursor.
func (f *fixture) page(t *testing.T, r *Response, data bool) string {
	t.Helper()
	var s []string
	for _, kv := range r.Messages {
		name := f.names[kv.Hash]
		env := f.env[name]
		if name == "" {
			t.Fatalf("unknown hash %s", kv.Hash)
		}
		if data {
			if !bytes.Equal(kv.Wire, env.Wire()) || kv.PubsubTopic != env.PubsubTopic() || !kv.Message.Equal(env.Message()) {
				t.Fatalf("%s: message or pubsub topic differs", name)
			}
		} else if kv.Wire != nil || kv.Message != nil || kv.PubsubTopic != "" {
			t.Fatalf("%s: data in a query without include_data", name)
		}
		s = append(s, name)
	}
	c := "-"
	if r.Cursor != nil {
		c = f.names[*r.Cursor]
	}
	return strings.Join(s, " ") + " | " + c
}

// TestQueryForms runs every query form through a client and a server on
// two libp2p hosts over loopback, with and without data.
func TestQueryForms(t *testing.T) { testQueryForms(t, openArchive) }

func testQueryForms(t *testing.T, open func(testing.TB) archive.Archive) {
	f := newFixture(t, open, Config{})
	h := func(names ...string) []message.Hash {
		var out []message.Hash
		for _, n := range names {
			out = append(out, *f.hash(n))
		}
		return out
	}
	for _, tt := range []struct {
		name string
		r    Request
		want string
	}{
		{"everything backward (default)", Request{}, "a1 a2 b1 tLo tMid tHi b2 a6 a7 | -"},
		{"pubsub topic", Request{PubsubTopic: topicA, Forward: true}, "a1 a2 tLo tMid tHi a6 a7 | -"},
		{"content topic", Request{PubsubTopic: topicA, ContentTopics: []string{ct("x")}, Forward: true}, "a1 tLo tMid tHi a7 | -"},
		{"two content topics", Request{PubsubTopic: topicA, ContentTopics: []string{ct("y"), ct("z")}}, "a2 a6 | -"},
		{"content topic without pubsub topic", Request{ContentTopics: []string{ct("y")}, Forward: true}, "a2 b2 | -"},
		{"time range, both ends inclusive", Request{PubsubTopic: topicA, StartTime: i64(20), EndTime: i64(40), Forward: true}, "a2 tLo tMid tHi a6 | -"},
		{"start only", Request{PubsubTopic: topicB, StartTime: i64(26)}, "b2 | -"},
		{"end only", Request{EndTime: i64(25), Forward: true}, "a1 a2 b1 | -"},
		{"one instant", Request{StartTime: i64(30), EndTime: i64(30)}, "tLo tMid tHi | -"},
		{"content and time", Request{PubsubTopic: topicA, ContentTopics: []string{ct("x")}, StartTime: i64(11), EndTime: i64(50)}, "tLo tMid tHi a7 | -"},
		{"hashes", Request{Hashes: h("a7", "b1", "a1")}, "a1 b1 a7 | -"},
		{"hashes with an unknown one", Request{Hashes: append(h("a2"), message.Hash{1})}, "a2 | -"},
		{"hashes and pubsub topic ANDed", Request{Hashes: h("a7", "b1", "a1"), PubsubTopic: topicA}, "a1 a7 | -"},
		{"hashes and time ANDed", Request{Hashes: h("a7", "b1", "a1"), StartTime: i64(20)}, "b1 a7 | -"},
		{"hashes paged", Request{Hashes: h("a7", "b1", "a1"), Forward: true, Limit: 2}, "a1 b1 | b1"},
		{"hashes page 2", Request{Hashes: h("a7", "b1", "a1"), Forward: true, Limit: 2, Cursor: f.hash("b1")}, "a7 | -"},
		{"nothing matches", Request{PubsubTopic: "/waku/2/rs/0/9"}, " | -"},
	} {
		for _, data := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/data=%v", tt.name, data), func(t *testing.T) {
				r := tt.r
				r.IncludeData = data
				r.RequestID = "id-" + tt.name
				resp, err := f.query(t, &r)
				if err != nil {
					t.Fatal(err)
				}
				if resp.RequestID != r.RequestID || resp.StatusCode != StatusOK || resp.StatusDesc != "OK" {
					t.Fatalf("response %q %d %q", resp.RequestID, resp.StatusCode, resp.StatusDesc)
				}
				if got := f.page(t, resp, data); got != tt.want {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
			})
		}
	}
}

// TestPaging walks pages of every size both ways across the three
// messages with one timestamp, and checks what js-waku relies on: pages in
// forward order, the cursor on the last message of the page in query
// direction, and an empty 200 after the last page.
func TestPaging(t *testing.T) { testPaging(t, openArchive) }

func testPaging(t *testing.T, open func(testing.TB) archive.Archive) {
	f := newFixture(t, open, Config{})
	all := []string{"a1", "a2", "tLo", "tMid", "tHi", "a6", "a7"}
	for _, forward := range []bool{true, false} {
		for limit := 1; limit <= len(all)+1; limit++ {
			t.Run(fmt.Sprintf("forward=%v/limit=%d", forward, limit), func(t *testing.T) {
				var got []string
				r := Request{PubsubTopic: topicA, Forward: forward, Limit: uint64(limit), IncludeData: limit%2 == 0}
				for pages := 0; ; pages++ {
					if pages > len(all)+1 {
						t.Fatal("paging does not end")
					}
					resp, err := f.query(t, &r)
					if err != nil {
						t.Fatal(err)
					}
					var names []string
					for _, kv := range resp.Messages {
						names = append(names, f.names[kv.Hash])
					}
					f.page(t, resp, r.IncludeData)
					if len(names) > limit {
						t.Fatalf("page of %d, limit %d", len(names), limit)
					}
					if forward {
						got = append(got, names...)
					} else {
						got = append(names, got...)
					}
					if resp.Cursor == nil {
						break
					}
					want := resp.Messages[len(resp.Messages)-1].Hash
					if !forward {
						want = resp.Messages[0].Hash
					}
					if *resp.Cursor != want {
						t.Fatalf("cursor %s is not the page's last message in query direction", f.names[*resp.Cursor])
					}
					r.Cursor = resp.Cursor
				}
				if !slices.Equal(got, all) {
					t.Fatalf("walk gave %v, want %v", got, all)
				}
			})
		}
	}
	// js-waku's own cursor: the last message it received. The page after it
	// is an empty 200.
	for _, tt := range []struct {
		forward bool
		cursor  string
	}{{true, "a7"}, {false, "a1"}} {
		resp, err := f.query(t, &Request{PubsubTopic: topicA, Forward: tt.forward, Cursor: f.hash(tt.cursor)})
		if err != nil || len(resp.Messages) != 0 || resp.Cursor != nil || resp.StatusCode != StatusOK {
			t.Fatalf("page after %s: %+v, %v; want an empty 200", tt.cursor, resp, err)
		}
	}
}

func TestPageSize(t *testing.T) {
	a := openArchive(t)
	for i := range 130 {
		if err := a.Append(context.Background(), newEnv(t, topicA, ct("x"), int64(i+1), fmt.Sprint(i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	appendWait(t, a, newEnv(t, topicA, ct("x"), 1000, "last"))
	client, server, _ := pair(t, a, Config{})
	for _, tt := range []struct {
		limit uint64
		want  int
	}{{0, 20}, {7, 7}, {100, 100}, {101, 100}, {1 << 63, 100}} {
		resp, err := Query(context.Background(), client, server, &Request{Forward: true, Limit: tt.limit}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Messages) != tt.want || resp.Cursor == nil {
			t.Fatalf("limit %d: %d messages, cursor %v; want %d", tt.limit, len(resp.Messages), resp.Cursor, tt.want)
		}
	}
}

// raw sends body as one frame and returns the decoded response frame.
func raw(t *testing.T, f *fixture, body []byte) *Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := f.client.NewStream(ctx, f.server, ProtocolID)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.SetDeadline(time.Now().Add(time.Minute))
	if _, err := st.Write(protowire.AppendBytes(nil, body)); err != nil {
		t.Fatal(err)
	}
	data, err := lpframe.Read(st, MaxResponseSize)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := decodeResponse(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestErrors checks nwaku's status code, text and request id for every
// error a query can meet.
func TestErrors(t *testing.T) { testErrors(t, openArchive) }

func testErrors(t *testing.T, open func(testing.TB) archive.Archive) {
	f := newFixture(t, open, Config{})
	unknown := hashOf(7)
	zero := message.Hash{}
	c := *f.hash("a2")
	// A 16-byte cursor field is padded with zeros, so it is not stored.
	shortField := append((&Request{RequestID: "s"}).Append(nil), protowire.AppendBytes(protowire.AppendTag(nil, 51, protowire.BytesType), c[:16])...)
	zeroShort := append((&Request{RequestID: "z"}).Append(nil), protowire.AppendBytes(protowire.AppendTag(nil, 51, protowire.BytesType), make([]byte, 8))...)
	topics := make([]string, 11)
	for i := range topics {
		topics[i] = ct(fmt.Sprint(i))
	}
	for _, tt := range []struct {
		name string
		body []byte
		code uint32
		desc string
	}{
		{"unknown cursor", (&Request{RequestID: "u", Cursor: &unknown}).Append(nil), 300,
			"BAD_RESPONSE: archive error: DRIVER_ERROR: cursor not found"},
		{"short cursor", shortField, 300, "BAD_RESPONSE: archive error: DRIVER_ERROR: cursor not found"},
		{"all-zero cursor", (&Request{RequestID: "z", Cursor: &zero}).Append(nil), 300,
			"BAD_RESPONSE: archive error: INVALID_QUERY: all zeroes cursor hash"},
		{"short all-zero cursor", zeroShort, 300, "BAD_RESPONSE: archive error: INVALID_QUERY: all zeroes cursor hash"},
		{"too many content topics with a cursor", (&Request{RequestID: "t", PubsubTopic: topicA, ContentTopics: topics, Cursor: &c}).Append(nil), 300,
			"BAD_RESPONSE: archive error: INVALID_QUERY: too many content topics"},
		{"no request id", nil, 400, "decoding rpc failed: MissingRequiredField request_id"},
		{"undecodable", []byte{0x0a, 0x05, 'a'}, 400, "decoding rpc failed: MessageIncomplete"},
		{"wrong wire type", []byte{0x08, 0x01}, 400, "decoding rpc failed: BadWireType"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := raw(t, f, tt.body)
			if resp.StatusCode != tt.code || resp.StatusDesc != tt.desc || resp.RequestID != "" || len(resp.Messages) != 0 || resp.Cursor != nil {
				t.Fatalf("got %d %q id %q, want %d %q and no request id", resp.StatusCode, resp.StatusDesc, resp.RequestID, tt.code, tt.desc)
			}
		})
	}
	// More than ten content topics without a cursor is answered (nwaku
	// checks the count only with a cursor).
	resp, err := f.query(t, &Request{PubsubTopic: topicA, ContentTopics: append(topics, ct("y"))})
	if err != nil || f.page(t, resp, false) != "a2 | -" {
		t.Fatalf("eleven content topics without a cursor: %+v, %v", resp, err)
	}
	// The client reports an error status as a *StatusError.
	_, err = f.query(t, &Request{Cursor: &unknown})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 300 || se.Desc != "BAD_RESPONSE: archive error: DRIVER_ERROR: cursor not found" {
		t.Fatalf("client error %v", err)
	}
	// An all-zero cursor is refused by the client without asking the
	// server (nwaku's waku/waku_store/client.nim, query).
	_, err = f.query(t, &Request{Cursor: &zero})
	if !errors.As(err, &se) || se.Code != 400 || se.Desc != "invalid cursor" {
		t.Fatalf("client with an all-zero cursor: %v", err)
	}
}

// TestRateLimit: with --rate-limit store:1/1h the first request is served
// and the next answered 429 TOO_MANY_REQUESTS with request id "N/A".
func TestRateLimit(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	f := newFixture(t, openArchive, Config{RateLimit: ratelimit.Setting{Volume: 1, Period: time.Hour}, Now: func() time.Time { return now }})
	if _, err := f.query(t, &Request{}); err != nil {
		t.Fatal(err)
	}
	resp := raw(t, f, (&Request{RequestID: "second"}).Append(nil))
	if resp.StatusCode != 429 || resp.StatusDesc != "TOO_MANY_REQUESTS" || resp.RequestID != "N/A" {
		t.Fatalf("got %d %q id %q", resp.StatusCode, resp.StatusDesc, resp.RequestID)
	}
	var se *StatusError
	if _, err := f.query(t, &Request{}); !errors.As(err, &se) || se.Code != 429 {
		t.Fatalf("client error %v", err)
	}
	// The server counts an answer after writing it, so the client may have
	// read the last one first.
	testwait.Until(t, "three answers counted", func() bool { return f.srv.Stats().Answered >= 3 })
	if st := f.srv.Stats(); st.RateLimited != 2 || st.Answered != 3 || st.Queries != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestServerClose(t *testing.T) {
	f := newFixture(t, openArchive, Config{})
	if err := f.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Close(); err != nil {
		t.Fatalf("second Close: %v, want nil", err)
	}
	if _, err := f.query(t, &Request{}); err == nil {
		t.Fatal("query answered after Close")
	}
}
