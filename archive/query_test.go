package archive_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

// fixture stores named messages and maps hashes back to names.
type fixture struct {
	a     archive.Archive
	env   map[string]*message.Envelope
	names map[message.Hash]string
}

// newFixture stores these messages (pubsub topic, content topic, time):
//
//	a1 A x 10   a2 A y 20   t? A x 30 (two: tLo < tHi by hash)
//	a5 A z 40   a6 A x 50   b1 B x 25 b2 B y 35
//
// On pubsub topic A the forward order is a1 a2 tLo tHi a5 a6.
func newFixture(t *testing.T, d driver) *fixture {
	t.Helper()
	a, _ := d.open(t, archive.Config{})
	f := &fixture{a: a, env: map[string]*message.Envelope{}, names: map[message.Hash]string{}}
	add := func(name, pubsub, content string, ts int64) {
		env := newEnv(t, pubsub, "/app/1/"+content+"/proto", ts, []byte("payload of "+name))
		f.env[name] = env
		f.names[env.Hash()] = name
		appendWait(t, f.a, env)
	}
	add("a1", "A", "x", 10)
	add("a2", "A", "y", 20)
	add("t3", "A", "x", 30)
	add("t4", "A", "x", 30)
	add("a5", "A", "z", 40)
	add("a6", "A", "x", 50)
	add("b1", "B", "x", 25)
	add("b2", "B", "y", 35)
	// Name the two messages with the same timestamp by hash order.
	h3, h4 := f.env["t3"].Hash(), f.env["t4"].Hash()
	lo, hi := f.env["t3"], f.env["t4"]
	if bytes.Compare(h3[:], h4[:]) > 0 {
		lo, hi = hi, lo
	}
	f.env["tLo"], f.env["tHi"] = lo, hi
	f.names[lo.Hash()], f.names[hi.Hash()] = "tLo", "tHi"
	delete(f.env, "t3")
	delete(f.env, "t4")
	return f
}

func (f *fixture) hash(name string) *message.Hash {
	h := f.env[name].Hash()
	return &h
}

// page renders a result as "n1 n2 ... | cursor" with cursor "-" for nil.
func (f *fixture) page(r *archive.Result) string {
	var s []string
	for _, m := range r.Messages {
		s = append(s, f.names[m.Hash])
	}
	c := "-"
	if r.Cursor != nil {
		c = f.names[*r.Cursor]
	}
	return strings.Join(s, " ") + " | " + c
}

func i64(v int64) *int64 { return &v }

func TestQuery(t *testing.T) {
	forDrivers(t, func(t *testing.T, d driver) {
		f := newFixture(t, d)
		ct := func(s ...string) []string {
			for i := range s {
				s[i] = "/app/1/" + s[i] + "/proto"
			}
			return s
		}
		tests := []struct {
			name string
			q    archive.Query
			want string
		}{
			{"all forward", archive.Query{Forward: true}, "a1 a2 b1 tLo tHi b2 a5 a6 | -"},
			{"all backward default", archive.Query{}, "a1 a2 b1 tLo tHi b2 a5 a6 | -"},
			{"topic forward", archive.Query{PubsubTopic: "A", Forward: true}, "a1 a2 tLo tHi a5 a6 | -"},
			{"topic forward page 1", archive.Query{PubsubTopic: "A", Forward: true, Limit: 3}, "a1 a2 tLo | tLo"},
			{"topic forward page 2", archive.Query{PubsubTopic: "A", Forward: true, Limit: 3, Cursor: f.hash("tLo")}, "tHi a5 a6 | -"},
			{"topic forward page 2 of 2s", archive.Query{PubsubTopic: "A", Forward: true, Limit: 2, Cursor: f.hash("a2")}, "tLo tHi | tHi"},
			{"topic forward cursor at end", archive.Query{PubsubTopic: "A", Forward: true, Cursor: f.hash("a6")}, " | -"},
			{"topic backward page 1", archive.Query{PubsubTopic: "A", Limit: 4}, "tLo tHi a5 a6 | tLo"},
			{"topic backward page 2", archive.Query{PubsubTopic: "A", Limit: 4, Cursor: f.hash("tLo")}, "a1 a2 | -"},
			{"topic backward cursor between ties", archive.Query{PubsubTopic: "A", Limit: 2, Cursor: f.hash("tHi")}, "a2 tLo | a2"},
			{"topic backward exact fit", archive.Query{PubsubTopic: "A", Limit: 6}, "a1 a2 tLo tHi a5 a6 | -"},
			{"start inclusive", archive.Query{PubsubTopic: "A", Forward: true, StartTime: i64(30)}, "tLo tHi a5 a6 | -"},
			{"end inclusive", archive.Query{PubsubTopic: "A", Forward: true, EndTime: i64(30)}, "a1 a2 tLo tHi | -"},
			{"range", archive.Query{PubsubTopic: "A", Forward: true, StartTime: i64(20), EndTime: i64(40)}, "a2 tLo tHi a5 | -"},
			{"one instant", archive.Query{PubsubTopic: "A", Forward: true, StartTime: i64(30), EndTime: i64(30)}, "tLo tHi | -"},
			{"empty range", archive.Query{PubsubTopic: "A", Forward: true, StartTime: i64(31), EndTime: i64(39)}, " | -"},
			{"reversed range", archive.Query{PubsubTopic: "A", Forward: true, StartTime: i64(40), EndTime: i64(30)}, " | -"},
			{"range backward paged", archive.Query{PubsubTopic: "A", StartTime: i64(20), EndTime: i64(49), Limit: 2}, "tHi a5 | tHi"},
			{"range all topics", archive.Query{StartTime: i64(25), EndTime: i64(35), Forward: true}, "b1 tLo tHi b2 | -"},
			{"content x", archive.Query{PubsubTopic: "A", ContentTopics: ct("x"), Forward: true}, "a1 tLo tHi a6 | -"},
			{"content x other pubsub", archive.Query{PubsubTopic: "B", ContentTopics: ct("x"), Forward: true}, "b1 | -"},
			{"content x y", archive.Query{PubsubTopic: "A", ContentTopics: ct("y", "x"), Forward: true}, "a1 a2 tLo tHi a6 | -"},
			{"content x y paged", archive.Query{PubsubTopic: "A", ContentTopics: ct("x", "y", "x"), Forward: true, Limit: 2, Cursor: f.hash("a2")}, "tLo tHi | tHi"},
			{"content x z backward", archive.Query{PubsubTopic: "A", ContentTopics: ct("x", "z"), Limit: 3}, "tHi a5 a6 | tHi"},
			{"content x z backward page 2", archive.Query{PubsubTopic: "A", ContentTopics: ct("x", "z"), Limit: 3, Cursor: f.hash("tHi")}, "a1 tLo | -"},
			{"content with range", archive.Query{PubsubTopic: "A", ContentTopics: ct("x"), StartTime: i64(11), EndTime: i64(49), Forward: true}, "tLo tHi | -"},
			{"content without pubsub", archive.Query{ContentTopics: ct("x"), Forward: true}, "a1 b1 tLo tHi a6 | -"},
			{"content x y without pubsub backward", archive.Query{ContentTopics: ct("x", "y"), Limit: 3}, "tHi b2 a6 | tHi"},
			{"content x y without pubsub page 2", archive.Query{ContentTopics: ct("x", "y"), Limit: 3, Cursor: f.hash("tHi")}, "a2 b1 tLo | a2"},
			{"eleven content topics without cursor", archive.Query{PubsubTopic: "A", ContentTopics: ct("x", "y", "c", "d", "e", "f", "g", "h", "i", "j", "k"), Forward: true, Limit: 3}, "a1 a2 tLo | tLo"},
			{"content unknown", archive.Query{PubsubTopic: "A", ContentTopics: ct("w"), Forward: true}, " | -"},
			{"hashes", archive.Query{Hashes: []message.Hash{*f.hash("a6"), *f.hash("b1"), *f.hash("a1"), {1}}, Forward: true}, "a1 b1 a6 | -"},
			{"hashes paged forward", archive.Query{Hashes: []message.Hash{*f.hash("a6"), *f.hash("b1"), *f.hash("a1")}, Forward: true, Limit: 2}, "a1 b1 | b1"},
			{"hashes page 2", archive.Query{Hashes: []message.Hash{*f.hash("a6"), *f.hash("b1"), *f.hash("a1")}, Forward: true, Limit: 2, Cursor: f.hash("b1")}, "a6 | -"},
			{"hashes backward", archive.Query{Hashes: []message.Hash{*f.hash("a6"), *f.hash("b1"), *f.hash("a1")}, Limit: 2}, "b1 a6 | b1"},
			{"hashes backward page 2", archive.Query{Hashes: []message.Hash{*f.hash("a6"), *f.hash("b1"), *f.hash("a1")}, Limit: 2, Cursor: f.hash("b1")}, "a1 | -"},
			{"hashes repeated", archive.Query{Hashes: []message.Hash{*f.hash("a2"), *f.hash("a2")}}, "a2 | -"},
			{"hashes and pubsub topic", archive.Query{Hashes: []message.Hash{*f.hash("a6"), *f.hash("b1"), *f.hash("a1")}, PubsubTopic: "A", Forward: true}, "a1 a6 | -"},
			{"hashes and content topic", archive.Query{Hashes: []message.Hash{*f.hash("a2"), *f.hash("b2"), *f.hash("a1")}, ContentTopics: ct("y"), Forward: true}, "a2 b2 | -"},
			{"hashes and time", archive.Query{Hashes: []message.Hash{*f.hash("a6"), *f.hash("tLo"), *f.hash("a1")}, StartTime: i64(10), EndTime: i64(30), Forward: true}, "a1 tLo | -"},
			{"hashes and other pubsub topic", archive.Query{Hashes: []message.Hash{*f.hash("a6")}, PubsubTopic: "B"}, " | -"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				for _, data := range []bool{false, true} {
					q := tt.q
					q.IncludeData = data
					res, err := f.a.Query(context.Background(), q)
					if err != nil {
						t.Fatal(err)
					}
					if got := f.page(res); got != tt.want {
						t.Fatalf("IncludeData %v: got %q, want %q", data, got, tt.want)
					}
					for _, m := range res.Messages {
						env := f.env[f.names[m.Hash]]
						if m.PubsubTopic != env.PubsubTopic() || m.Timestamp != env.Message().Timestamp {
							t.Fatalf("%s: topic %q time %d", f.names[m.Hash], m.PubsubTopic, m.Timestamp)
						}
						if data != (m.Wire != nil) {
							t.Fatalf("IncludeData %v but Wire %v", data, m.Wire != nil)
						}
						if data && !bytes.Equal(m.Wire, env.Wire()) {
							t.Fatalf("%s does not read back", f.names[m.Hash])
						}
					}
				}
			})
		}
	})
}

func TestQueryPageSize(t *testing.T) {
	forDrivers(t, func(t *testing.T, d driver) {
		a, _ := d.open(t, archive.Config{})
		for i := range 130 {
			if err := a.Append(context.Background(), newEnv(t, "p", "/a/1/b/c", int64(i+1), []byte{byte(i)}), nil); err != nil {
				t.Fatal(err)
			}
		}
		appendWait(t, a, newEnv(t, "p", "/a/1/b/c", 1000, []byte("last")))
		for _, tt := range []struct{ limit, want int }{{0, archive.DefaultPageSize}, {7, 7}, {100, 100}, {1000, archive.MaxPageSize}} {
			res, err := a.Query(context.Background(), archive.Query{PubsubTopic: "p", Limit: tt.limit, Forward: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Messages) != tt.want || res.Cursor == nil || *res.Cursor != res.Messages[tt.want-1].Hash {
				t.Fatalf("limit %d: %d messages, cursor %v; want %d and the last as cursor", tt.limit, len(res.Messages), res.Cursor, tt.want)
			}
			if res.Messages[0].Timestamp != 1 || res.Messages[tt.want-1].Timestamp != int64(tt.want) {
				t.Fatalf("limit %d: page spans %d..%d", tt.limit, res.Messages[0].Timestamp, res.Messages[tt.want-1].Timestamp)
			}
		}
		// Walk all 131 backward: pages of 100 and 31, no repeats, no gaps.
		var seen []int64
		q := archive.Query{PubsubTopic: "p", Limit: 100}
		for pages := 0; ; pages++ {
			res, err := a.Query(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			var ts []int64
			for _, m := range res.Messages {
				ts = append(ts, m.Timestamp)
			}
			seen = append(ts, seen...)
			if res.Cursor == nil {
				if pages != 1 {
					t.Fatalf("%d pages, want 2", pages+1)
				}
				break
			}
			q.Cursor = res.Cursor
		}
		if len(seen) != 131 || !slices.IsSorted(seen) || seen[0] != 1 || seen[130] != 1000 {
			t.Fatalf("walk saw %d messages from %d to %d", len(seen), seen[0], seen[len(seen)-1])
		}
	})
}

func TestQueryBad(t *testing.T) {
	forDrivers(t, func(t *testing.T, d driver) {
		f := newFixture(t, d)
		zero := message.Hash{}
		unknown := message.Hash{9}
		tooMany := make([]string, archive.MaxContentTopics+1)
		for i := range tooMany {
			tooMany[i] = fmt.Sprint(i)
		}
		for _, tt := range []struct {
			name string
			q    archive.Query
			want error
		}{
			{"negative limit", archive.Query{Limit: -1}, archive.ErrBadQuery},
			{"too many hashes", archive.Query{Hashes: make([]message.Hash, archive.MaxQueryHashes+1)}, archive.ErrBadQuery},
			{"too many content topics with a cursor", archive.Query{PubsubTopic: "A", ContentTopics: tooMany, Cursor: f.hash("a1")}, archive.ErrTooManyContentTopics},
			{"zero cursor", archive.Query{Cursor: &zero}, archive.ErrZeroCursor},
			{"zero cursor before too many content topics", archive.Query{ContentTopics: tooMany, Cursor: &zero}, archive.ErrZeroCursor},
			{"unknown cursor", archive.Query{Cursor: &unknown}, archive.ErrUnknownCursor},
		} {
			t.Run(tt.name, func(t *testing.T) {
				res, err := f.a.Query(context.Background(), tt.q)
				if !errors.Is(err, tt.want) || !errors.Is(err, archive.ErrBadQuery) || res != nil {
					t.Fatalf("got %v, %v; want %v", res, err, tt.want)
				}
			})
		}
	})
}
