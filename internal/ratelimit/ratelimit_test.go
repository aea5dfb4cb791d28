package ratelimit

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want Settings
	}{
		{nil, Settings{Global: {}, Filter: FilterDefault()}},
		{[]string{"100/1s"}, Settings{Global: {100, time.Second}, Filter: FilterDefault()}},
		{[]string{"store:10/1m"}, Settings{Global: {}, StoreV3: {10, time.Minute}, Filter: FilterDefault()}},
		{[]string{" STORE : 10 / 500ms "}, Settings{Global: {}, StoreV3: {10, 500 * time.Millisecond}, Filter: FilterDefault()}},
		// "store" does not override "storev3", in either order.
		{[]string{"storev3:5/1h", "store:10/1m"}, Settings{Global: {}, StoreV3: {5, time.Hour}, Filter: FilterDefault()}},
		{[]string{"store:10/1m", "storev3:5/1h"}, Settings{Global: {}, StoreV3: {5, time.Hour}, Filter: FilterDefault()}},
		{[]string{"lightpush:1/1s", "lightpush:2/1s", "px:3/1m", "filter:4/1h"},
			Settings{Global: {}, Lightpush: {2, time.Second}, PeerExchange: {3, time.Minute}, Filter: {4, time.Hour}}},
	} {
		got, err := Parse(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "10", "10/1", "10/1d", "relay:1/1s", "store:-1/1s", "1.5/1s", "store 1/1s"} {
		if _, err := Parse([]string{bad}); !errors.Is(err, ErrSetting) {
			t.Errorf("Parse(%q): %v, want ErrSetting", bad, err)
		}
	}
	s, _ := Parse([]string{"7/1s"})
	if s.Get(StoreV3) != (Setting{7, time.Second}) || s.Get(Filter) != FilterDefault() {
		t.Errorf("Get falls back to %v / %v", s.Get(StoreV3), s.Get(Filter))
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func take(l *Limiter, peer string, n int) (ok int) {
	for range n {
		if l.Allow(peer) {
			ok++
		}
	}
	return ok
}

// TestLimiter follows nwaku's RequestRateLimiter for 10 requests a
// second: ratio 10, so a global bucket of 100 over 10 s that starts with
// 10, and 75 per peer per 10 s.
func TestLimiter(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	l := New(Setting{10, time.Second}, c.now)
	if got := take(l, "p1", 20); got != 10 {
		t.Fatalf("first burst admitted %d, want the starting 10", got)
	}
	c.add(time.Second) // the global bucket refills 10 a second
	if got := take(l, "p2", 20); got != 10 {
		t.Fatalf("after 1 s admitted %d, want 10", got)
	}
	c.add(10 * time.Second) // global bucket full: 100
	if got := take(l, "p1", 100); got != 75 {
		t.Fatalf("one peer took %d of a full bucket, want its 75", got)
	}
	if got := take(l, "p3", 100); got != 25 {
		t.Fatalf("another peer took %d, want the 25 left", got)
	}
	c.add(10 * time.Second)
	if got := take(l, "p1", 1); got != 1 {
		t.Fatal("p1's bucket did not refill after its period")
	}
	if New(Setting{0, time.Second}, nil) != nil || New(Setting{5, 0}, nil) != nil {
		t.Fatal("an unlimited setting gave a limiter")
	}
	var none *Limiter
	if !none.Allow("p") {
		t.Fatal("the nil Limiter refused")
	}
}

func TestLimiterForgetsPeers(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	l := New(Setting{1, time.Hour}, c.now) // ratio 2: peers forgotten after 4 h
	for i := range 50 {
		l.Allow(string(rune('a' + i)))
	}
	c.add(4 * time.Hour)
	l.Allow("z")
	if n := len(l.peers); n != 1 {
		t.Fatalf("%d peers remembered, want 1", n)
	}
}

// FuzzParse: any flag value parses or fails with ErrSetting, never panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"100/1s", "store:10/1m", "storev3 : 5 / 500ms", "px:1/1h", "9999999999999999999/1s", "1/9999999999999h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := Parse([]string{s}); err != nil && !errors.Is(err, ErrSetting) {
			t.Fatalf("%q: %v", s, err)
		}
	})
}

// TestPerPeer: each peer has its own full bucket, refilled continuously.
func TestPerPeer(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewPerPeer(Setting{Volume: 3, Period: time.Minute}, func() time.Time { return now })
	for i := range 3 {
		if !l.Allow("a") {
			t.Fatalf("request %d of a refused", i+1)
		}
	}
	if l.Allow("a") {
		t.Fatal("fourth request of a admitted")
	}
	if !l.Allow("b") {
		t.Fatal("b limited by a's requests")
	}
	now = now.Add(20 * time.Second) // a third of the period: one token back
	if !l.Allow("a") || l.Allow("a") {
		t.Fatal("want exactly one token after a third of the period")
	}
	if NewPerPeer(Setting{}, nil) != nil || !(*PerPeer)(nil).Allow("x") {
		t.Fatal("unlimited setting must admit everything")
	}
}
