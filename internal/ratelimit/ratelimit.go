// Package ratelimit implements nwaku's --rate-limit flag for the Waku
// request/response services: its grammar (waku/common/rate_limit/setting.nim)
// and its RequestRateLimiter, a global token bucket plus one bucket per
// peer (waku/common/rate_limit/request_limiter.nim, v0.38.1).
package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrSetting is wrapped by every error of Parse.
var ErrSetting = errors.New("ratelimit: invalid rate-limit setting")

// Setting is a volume of requests per period. A volume or period of zero
// or less means no limit.
type Setting struct {
	Volume int
	Period time.Duration
}

// Unlimited reports whether s sets no limit.
func (s Setting) Unlimited() bool { return s.Volume <= 0 || s.Period <= 0 }

// String returns "no-limit" or "<volume>/<period>".
func (s Setting) String() string {
	if s.Unlimited() {
		return "no-limit"
	}
	return fmt.Sprintf("%d/%v", s.Volume, s.Period)
}

// Protocol names a rate-limited service as the flag names it.
type Protocol string

// The services --rate-limit knows. "store" in a flag sets StoreV3 unless a
// "storev3:" setting is given too.
const (
	Global       Protocol = "global"
	StoreV3      Protocol = "storev3"
	Lightpush    Protocol = "lightpush"
	PeerExchange Protocol = "px"
	Filter       Protocol = "filter"
)

// FilterDefault returns the filter service's limit when no flag sets one
// (nwaku FilterDefaultPerPeerRateLimit): 30 requests a minute.
func FilterDefault() Setting { return Setting{Volume: 30, Period: time.Minute} }

// Settings maps each service to its limit.
type Settings map[Protocol]Setting

// Get returns p's setting, else the Global one, else no limit.
func (s Settings) Get(p Protocol) Setting {
	if v, ok := s[p]; ok {
		return v
	}
	return s[Global]
}

var flagRE = regexp.MustCompile(`^\s*((store|storev3|lightpush|px|filter)\s*:)?\s*(\d+)\s*/\s*(\d+)\s*(ms|s|m|h)\s*$`)

// Parse reads --rate-limit values such as "100/1s", "store:10/1m",
// "lightpush : 5 / 500ms" (case-insensitive; units ms, s, m, h). A value
// without a service sets Global; for the same service the last value wins,
// except that "store:" never overrides "storev3:". Without a Global value
// Global is unlimited; without a filter value Filter is FilterDefault.
func Parse(values []string) (Settings, error) {
	out := Settings{}
	for _, v := range values {
		m := flagRE.FindStringSubmatch(strings.ToLower(v))
		if m == nil {
			return nil, fmt.Errorf("%w: %q", ErrSetting, v)
		}
		volume, err1 := strconv.Atoi(m[3])
		n, err2 := strconv.ParseInt(m[4], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: %q: number out of range", ErrSetting, v)
		}
		unit := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour}[m[5]]
		if n > math.MaxInt64/int64(unit) {
			return nil, fmt.Errorf("%w: %q: period out of range", ErrSetting, v)
		}
		s := Setting{Volume: volume, Period: time.Duration(n) * unit}
		switch m[2] {
		case "":
			out[Global] = s
		case "store":
			if _, ok := out[StoreV3]; !ok {
				out[StoreV3] = s
			}
		default:
			out[Protocol(m[2])] = s
		}
	}
	if _, ok := out[Global]; !ok {
		out[Global] = Setting{}
	}
	if _, ok := out[Filter]; !ok {
		out[Filter] = FilterDefault()
	}
	return out, nil
}

// perPeerShare is the part of the global volume one peer may use
// (PER_PEER_ALLOWED_PERCENT_OF_VOLUME).
const perPeerShare = 0.75

// Limiter admits requests as nwaku's RequestRateLimiter does. A setting of
// V requests per P is widened by a ratio r (10 when P <= 1 s, 3 when
// P <= 1 min, else 2): a global bucket holds up to V*r tokens, refilled
// continuously over P*r and starting with V, and each peer has a bucket of
// trunc(0.75*V*r) tokens refilled whole every P*r. A request takes one
// token from its peer's bucket, then one from the global bucket; it is
// refused when either is empty. A peer silent for 2*P*r is forgotten.
// A Limiter is safe for concurrent use; the nil Limiter admits everything.
type Limiter struct {
	now     func() time.Time
	volume  int
	global  bucket
	perPeer Setting
	forget  time.Duration

	mu        sync.Mutex
	started   bool
	peers     map[string]*peerBucket
	lastSweep time.Time
}

type peerBucket struct {
	bucket
	seen time.Time
}

// New returns a Limiter for s, or nil when s is unlimited. now gives the
// time (nil means time.Now).
func New(s Setting, now func() time.Time) *Limiter {
	if s.Unlimited() {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	ratio := 2
	switch {
	case s.Period <= time.Second:
		ratio = 10
	case s.Period <= time.Minute:
		ratio = 3
	}
	period := s.Period * time.Duration(ratio)
	return &Limiter{
		now:     now,
		volume:  s.Volume,
		global:  bucket{capacity: float64(s.Volume * ratio), fill: period, continuous: true},
		perPeer: Setting{Volume: int(math.Trunc(float64(s.Volume*ratio) * perPeerShare)), Period: period},
		forget:  2 * period,
		peers:   map[string]*peerBucket{},
	}
}

// Allow takes a token for a request from peer and reports whether the
// request is admitted.
func (l *Limiter) Allow(peer string) bool {
	if l == nil {
		return true
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started {
		// The global bucket starts with one period's volume, not its burst
		// capacity (newMainTokenBucket).
		l.started = true
		l.global.tokens, l.global.last = float64(l.volume), now
	}
	l.sweep(now)
	p := l.peers[peer]
	if p == nil {
		p = &peerBucket{bucket: bucket{capacity: float64(l.perPeer.Volume), fill: l.perPeer.Period,
			tokens: float64(l.perPeer.Volume), last: now}}
		l.peers[peer] = p
	}
	p.seen = now
	if !p.take(now) {
		return false
	}
	return l.global.take(now)
}

// sweep forgets peers silent for l.forget, at most once per l.forget.
func (l *Limiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < l.forget {
		return
	}
	l.lastSweep = now
	for k, p := range l.peers {
		if now.Sub(p.seen) >= l.forget {
			delete(l.peers, k)
		}
	}
}

// bucket is a token bucket: continuous refills capacity/fill tokens per
// unit of time; otherwise the bucket is refilled whole once fill has
// passed since the last refill.
type bucket struct {
	capacity   float64
	fill       time.Duration
	continuous bool
	tokens     float64
	last       time.Time
}

func (b *bucket) take(now time.Time) bool {
	elapsed := now.Sub(b.last)
	switch {
	case elapsed <= 0:
	case b.continuous:
		b.tokens = min(b.capacity, b.tokens+b.capacity*float64(elapsed)/float64(b.fill))
		b.last = now
	case elapsed >= b.fill:
		b.tokens = b.capacity
		b.last = b.last.Add(elapsed / b.fill * b.fill)
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// PerPeer admits requests as nwaku's PerPeerRateLimiter, the filter
// service's (waku/common/rate_limit/per_peer_limiter.nim): each peer has a
// bucket of V tokens of its own, starting full and refilled continuously
// over P; there is no global bucket. A peer silent for 2*P is forgotten.
// A PerPeer is safe for concurrent use; the nil PerPeer admits everything.
type PerPeer struct {
	now    func() time.Time
	s      Setting
	forget time.Duration

	mu        sync.Mutex
	peers     map[string]*peerBucket
	lastSweep time.Time
}

// NewPerPeer returns a PerPeer for s, or nil when s is unlimited. now gives
// the time (nil means time.Now).
func NewPerPeer(s Setting, now func() time.Time) *PerPeer {
	if s.Unlimited() {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	return &PerPeer{now: now, s: s, forget: 2 * s.Period, peers: map[string]*peerBucket{}}
}

// Allow takes a token from peer's bucket and reports whether the request
// is admitted.
func (l *PerPeer) Allow(peer string) bool {
	if l == nil {
		return true
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) >= l.forget {
		l.lastSweep = now
		for k, p := range l.peers {
			if now.Sub(p.seen) >= l.forget {
				delete(l.peers, k)
			}
		}
	}
	p := l.peers[peer]
	if p == nil {
		p = &peerBucket{bucket: bucket{capacity: float64(l.s.Volume), fill: l.s.Period, continuous: true,
			tokens: float64(l.s.Volume), last: now}}
		l.peers[peer] = p
	}
	p.seen = now
	return p.take(now)
}
