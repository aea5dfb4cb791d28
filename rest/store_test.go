package rest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/store"
)

// storeFake answers local queries from an archive (nil: store not
// mounted) and remote ones with remote.
type storeFake struct {
	*fakeBackend
	a      archive.Archive
	remote func(ctx context.Context, peerAddr string, req *store.Request) (*store.Response, error)
	got    []*store.Request
}

func (f *storeFake) StoreLocal(ctx context.Context, req *store.Request) (*store.Response, error) {
	f.got = append(f.got, req)
	if f.a == nil {
		return nil, ErrNoLocalStore
	}
	return store.Answer(ctx, f.a, req)
}

func (f *storeFake) StoreRemote(ctx context.Context, peerAddr string, req *store.Request) (*store.Response, error) {
	f.got = append(f.got, req)
	return f.remote(ctx, peerAddr, req)
}

func i64(v int64) *int64 { return &v }

func TestParseStoreQuery(t *testing.T) {
	h := message.Hash{0xab, 1, 2, 3}
	hexH := "0x" + fmt.Sprintf("%x", h[:])
	for _, tt := range []struct {
		query string
		want  *store.Request
		err   string
	}{
		{"", &store.Request{Forward: true, Limit: 20}, ""},
		{"includeData=true&pubsubTopic=%2Fwaku%2F2%2Frs%2F0%2F0&contentTopics=%2Fa%2F1%2Fb%2Fc,%2Fa%2F1%2Fd%2Fe&startTime=10&endTime=20&ascending=false&pageSize=7",
			&store.Request{IncludeData: true, PubsubTopic: "/waku/2/rs/0/0", ContentTopics: []string{"/a/1/b/c", "/a/1/d/e"},
				StartTime: i64(10), EndTime: i64(20), Limit: 7}, ""},
		{"includeData=YES&startTime=0&endTime=-5&ascending=TRUE", &store.Request{IncludeData: true, Limit: 20}, ""},
		{"pageSize=1000", &store.Request{Forward: true, Limit: 100}, ""},
		{"hashes=" + hexH + "," + url.QueryEscape(base64.StdEncoding.EncodeToString(h[:])) + "," + base64.RawURLEncoding.EncodeToString(h[:]) + "&cursor=" + hexH[2:],
			&store.Request{Forward: true, Limit: 20, Hashes: []message.Hash{h, h, h}, Cursor: &h}, ""},
		{"includeData=maybe", nil, "include data parsing error: cannot interpret as a bool: maybe"},
		{"startTime=soon", nil, "time parsing error: invalid integer: soon"},
		{"pageSize=-1", nil, "page size parsing error: invalid integer: -1"},
		{"cursor=0x0102", nil, "waku message hash parsing error: invalid hash length: 2"},
		{"hashes=%21%21", nil, `Exception converting hex string to bytes: "!!" is neither hex nor base64`},
	} {
		q, _ := url.ParseQuery(tt.query)
		got, err := parseStoreQuery(q)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: error %v, want %q", tt.query, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %+v, %v; want %+v", tt.query, got, err, tt.want)
		}
	}
}

func newStoreArchive(t *testing.T) (archive.Archive, []*message.Envelope) {
	t.Helper()
	a, err := embedded.Open(t.TempDir(), archive.Config{}, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	var envs []*message.Envelope
	for i, m := range []*message.Message{
		{Payload: []byte("first"), ContentTopic: "/app/1/chat/proto", Timestamp: 1_700_000_000_000_000_001, Present: message.HasTimestamp},
		{Payload: []byte("second"), ContentTopic: "/app/1/chat/proto", Timestamp: 1_700_000_000_000_000_002, Meta: []byte("m"),
			Version: 1, Present: message.HasTimestamp | message.HasMeta | message.HasVersion},
	} {
		wire := m.Encode(nil)
		env := message.NewEnvelope(m, "/waku/2/rs/0/0", wire, nil)
		done := make(chan error, 1)
		if err := a.Append(context.Background(), env, func(err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
		if err := testwait.Recv(t, done, "the acknowledgement"); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		envs = append(envs, env)
	}
	return a, envs
}

// TestStoreLocal: without peerAddr a store node answers from its own
// archive with nwaku's JSON (golden file).
func TestStoreLocal(t *testing.T) {
	a, envs := newStoreArchive(t)
	f := &storeFake{fakeBackend: newFake(t), a: a}
	s := newServer(t, f.fakeBackend, Config{Store: f})
	expect(t, s, "GET", "/store/v3/messages?includeData=true&pubsubTopic=%2Fwaku%2F2%2Frs%2F0%2F0&pageSize=1", "", 200, golden(t, "store_local.json"))
	var resp StoreResponse
	_, _, body := do(t, s, "GET", "/store/v3/messages?ascending=false", "")
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Messages) != 2 || resp.Messages[1].MessageHash != hex0x(envs[1].Hash()) || resp.Messages[0].Message != nil {
		t.Fatalf("hashes only, backward: %s", body)
	}
	// A cursor given in base64 (go-waku) pages like the hex one.
	c := envs[0].Hash()
	expect(t, s, "GET", "/store/v3/messages?cursor="+url.QueryEscape(base64.StdEncoding.EncodeToString(c[:])), "", 200,
		`{"requestId":"","statusCode":200,"statusDesc":"OK","messages":[{"messageHash":"`+hex0x(envs[1].Hash())+`"}]}`)
	unknown := message.Hash{7}
	expect(t, s, "GET", "/store/v3/messages?cursor="+hex0x(unknown), "", 500,
		"error in handleSelfStoreRequest: BAD_RESPONSE: archive error: DRIVER_ERROR: cursor not found")
}

// TestStoreRemote: with peerAddr, or on a node without store, the query
// goes to a store node; its failures answer as nwaku's REST API does.
func TestStoreRemote(t *testing.T) {
	f := &storeFake{fakeBackend: newFake(t)}
	s := newServer(t, f.fakeBackend, Config{Store: f})
	h := message.Hash{1}
	var gotAddr string
	for _, tt := range []struct {
		name     string
		err      error
		code     int
		want     string
		peerAddr string
	}{
		{"ok", nil, 200, `{"requestId":"r","statusCode":200,"statusDesc":"OK","messages":[{"messageHash":"` + hex0x(h) + `"}],"paginationCursor":"` + hex0x(h) + `"}`, ""},
		{"archive error", &store.StatusError{Code: 300, Desc: "archive error: DRIVER_ERROR: cursor not found"}, 200,
			`{"requestId":"","statusCode":300,"statusDesc":"BAD_RESPONSE: archive error: DRIVER_ERROR: cursor not found","messages":[]}`, ""},
		{"rate limited", &store.StatusError{Code: 429, Desc: "TOO_MANY_REQUESTS"}, 429, "Request rate limit reached", ""},
		{"dial", fmt.Errorf("%w: x", store.ErrDial), 200,
			`{"requestId":"","statusCode":504,"statusDesc":"PEER_DIAL_FAILURE: /ip4/127.0.0.1/tcp/1/p2p/x","messages":[]}`, "/ip4/127.0.0.1/tcp/1/p2p/x"},
		{"no peer", ErrNoStorePeer, 412, "No suitable service peer & no discovery method", ""},
		{"bad peer address", fmt.Errorf("%w: no /p2p", ErrPeerAddr), 400, "Failed parsing remote peer info: rest: bad peer address: no /p2p", "nonsense"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f.remote = func(ctx context.Context, peerAddr string, req *store.Request) (*store.Response, error) {
				gotAddr = peerAddr
				if tt.err != nil {
					return nil, tt.err
				}
				return &store.Response{RequestID: "r", StatusCode: 200, StatusDesc: "OK", Messages: []store.KeyValue{{Hash: h}}, Cursor: &h}, nil
			}
			path := "/store/v3/messages"
			if tt.peerAddr != "" {
				path += "?peerAddr=" + url.QueryEscape(tt.peerAddr)
			}
			expect(t, s, "GET", path, "", tt.code, tt.want)
			if gotAddr != tt.peerAddr {
				t.Fatalf("peer address %q, want %q", gotAddr, tt.peerAddr)
			}
		})
	}
	// A node without a store backend answers as one without a store peer.
	plain := newServer(t, newFake(t), Config{})
	expect(t, plain, "GET", "/store/v3/messages", "", 412, "No suitable service peer & no discovery method")
}

// FuzzParseStoreQuery: any query string parses into a request or an
// error, never a panic; a parsed request's page size is at most 100.
func FuzzParseStoreQuery(f *testing.F) {
	f.Add("includeData=true&pubsubTopic=%2Fwaku%2F2%2Frs%2F0%2F0&contentTopics=a,b&startTime=1&endTime=2&ascending=false&pageSize=7")
	f.Add("hashes=0x" + strings.Repeat("ab", 32) + "&cursor=" + strings.Repeat("q", 43))
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		r, err := parseStoreQuery(q)
		if err == nil && r.Limit > 100 {
			t.Fatalf("page size %d", r.Limit)
		}
	})
}
