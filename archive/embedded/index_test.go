package embedded_test

import (
	"context"
	"slices"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

// TestEmbeddedHkeyTies: hashes that share their first 8 bytes (the
// indexes' hkey) are distinct messages, none a duplicate of another; with
// one timestamp they come back in hash order, page by page after cursors
// in both directions, and each one is found by its hash.
func TestEmbeddedHkeyTies(t *testing.T) {
	a := openT(t, t.TempDir(), archive.Config{})
	defer a.Close()
	var hashes []message.Hash
	for _, last := range []byte{9, 3, 7, 1, 5} { // appended out of hash order
		h := message.Hash{0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89}
		h[31] = last
		hashes = append(hashes, h)
		m := &message.Message{Payload: []byte{last}, ContentTopic: "/a/1/b/c", Timestamp: 42, Present: message.HasTimestamp}
		appendWait(t, a, message.NewEnvelopeWithHash(m, "p", m.Encode(nil), h))
	}
	other := message.Hash{0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x88, 0xff} // a smaller hkey, same timestamp
	m := &message.Message{Payload: []byte("o"), ContentTopic: "/a/1/b/c", Timestamp: 42, Present: message.HasTimestamp}
	appendWait(t, a, message.NewEnvelopeWithHash(m, "p", m.Encode(nil), other))
	if st := a.Stats(); st.Inserts != 6 || st.Duplicates != 0 {
		t.Fatalf("stats %+v, want 6 stored", st)
	}
	want := append([]message.Hash{other}, hashes...)
	slices.SortFunc(want[1:], func(x, y message.Hash) int { return int(x[31]) - int(y[31]) })
	ctx := context.Background()
	for _, q := range []archive.Query{{PubsubTopic: "p", ContentTopics: []string{"/a/1/b/c"}}, {PubsubTopic: "p"}, {}} {
		for _, forward := range []bool{true, false} {
			q.Forward, q.Limit, q.Cursor = forward, 2, nil
			var got []message.Hash
			for {
				res, err := a.Query(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				var page []message.Hash
				for _, s := range res.Messages {
					page = append(page, s.Hash)
				}
				if forward {
					got = append(got, page...)
				} else {
					got = append(page, got...)
				}
				if res.Cursor == nil {
					break
				}
				q.Cursor = res.Cursor
			}
			if !slices.Equal(got, want) {
				t.Fatalf("query %+v: order\n%x\nwant\n%x", q, got, want)
			}
		}
	}
	for _, h := range want {
		res, err := a.Query(ctx, archive.Query{Hashes: []message.Hash{h}})
		if err != nil || len(res.Messages) != 1 || res.Messages[0].Hash != h {
			t.Fatalf("lookup of %x: %+v, %v", h, res, err)
		}
	}
}
