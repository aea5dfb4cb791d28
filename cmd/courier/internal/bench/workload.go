package bench

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// Profile is a payload size mix: Sizes[i] bytes for Percents[i] % of the
// messages. Sizes are in bytes (kB = 1000 bytes).
type Profile struct {
	Name     string
	Sizes    []int
	Percents []int
}

// SeedProfile is the seed mix: 25/50/25 % of 10/50/150 kB
// (docs/benchmark.md).
const SeedProfile = "10/50/150kB@25/50/25"

// ParseProfile parses "10/50/150kB@25/50/25" or a single size "100kB".
func ParseProfile(s string) (Profile, error) {
	sizesPart, pctPart, hasPct := strings.Cut(s, "@")
	num, ok := strings.CutSuffix(sizesPart, "kB")
	if !ok {
		return Profile{}, fmt.Errorf("bench: profile %q: sizes must end in kB", s)
	}
	p := Profile{Name: s}
	for _, f := range strings.Split(num, "/") {
		v, err := strconv.Atoi(f)
		if err != nil || v < 1 || v > 150 {
			return Profile{}, fmt.Errorf("bench: profile %q: size %q must be 1..150 kB", s, f)
		}
		p.Sizes = append(p.Sizes, v*1000)
	}
	if !hasPct {
		if len(p.Sizes) != 1 {
			return Profile{}, fmt.Errorf("bench: profile %q: several sizes need @percentages", s)
		}
		p.Percents = []int{100}
		return p, nil
	}
	total := 0
	for _, f := range strings.Split(pctPart, "/") {
		v, err := strconv.Atoi(f)
		if err != nil || v < 0 {
			return Profile{}, fmt.Errorf("bench: profile %q: bad percentage %q", s, f)
		}
		p.Percents = append(p.Percents, v)
		total += v
	}
	if len(p.Percents) != len(p.Sizes) || total != 100 {
		return Profile{}, fmt.Errorf("bench: profile %q: one percentage per size, summing to 100", s)
	}
	return p, nil
}

// Workload makes the messages of a run: warm-up messages first, then the
// measured ones. Sizes follow the profile exactly within each part, in an
// order shuffled by the seed; payloads are the message index (8 bytes,
// big-endian) followed by a slice of one random pool, so they are unique,
// identical run to run and cheap to make.
type Workload struct {
	Warmup, N    int
	ContentTopic string
	sizes        []int
	pool         []byte
}

const prefixLen = 8

// NewWorkload builds the size schedule and the random pool from seed.
func NewWorkload(p Profile, seed int64, warmup, n int, contentTopic string) *Workload {
	w := &Workload{Warmup: warmup, N: n, ContentTopic: contentTopic}
	w.sizes = append(schedule(p, warmup, seed+1), schedule(p, n, seed)...)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x636f7572696572))
	w.pool = make([]byte, 150_000+65_536)
	for i := range w.pool {
		w.pool[i] = byte(rng.Uint32())
	}
	return w
}

// schedule returns n sizes in the profile's exact proportions (the
// remainder of the rounding goes to the first sizes), shuffled by seed.
func schedule(p Profile, n int, seed int64) []int {
	out := make([]int, 0, n)
	for i, size := range p.Sizes {
		for range n * p.Percents[i] / 100 {
			out = append(out, size)
		}
	}
	for i := 0; len(out) < n; i++ {
		out = append(out, p.Sizes[i%len(p.Sizes)])
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 42))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// Total is the number of messages, warm-up included.
func (w *Workload) Total() int { return len(w.sizes) }

// Size returns the payload size in bytes of message i.
func (w *Workload) Size(i int) int { return w.sizes[i] }

// MeasuredPayloadBytes returns the payload bytes of the measured messages.
func (w *Workload) MeasuredPayloadBytes() int64 {
	var t int64
	for _, s := range w.sizes[w.Warmup:] {
		t += int64(s)
	}
	return t
}

// FillPayload writes message i's payload into dst, which must be Size(i)
// bytes long.
func (w *Workload) FillPayload(dst []byte, i int) {
	binary.BigEndian.PutUint64(dst, uint64(i))
	off := (i * 7919) % 65_536
	copy(dst[prefixLen:], w.pool[off:off+len(dst)-prefixLen])
}

// Wire returns a fresh buffer holding message i encoded as a WakuMessage
// (payload, content topic, timestamp ts in ns), as gossipsub would hand it
// to the validator. It is written with protowire directly: this is the
// harness making its input, not the node encoding.
func (w *Workload) Wire(i int, ts int64) []byte {
	size := w.sizes[i]
	n := 1 + protowire.SizeBytes(size) + 1 + protowire.SizeBytes(len(w.ContentTopic)) + 1 + protowire.SizeVarint(protowire.EncodeZigZag(ts))
	b := make([]byte, 0, n)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	start := len(b)
	b = b[:start+size]
	w.FillPayload(b[start:], i)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, w.ContentTopic)
	b = protowire.AppendTag(b, 10, protowire.VarintType)
	return protowire.AppendVarint(b, protowire.EncodeZigZag(ts))
}

// indexOf returns the message index a payload starts with, or -1.
func indexOf(payload []byte) int {
	if len(payload) < prefixLen {
		return -1
	}
	return int(binary.BigEndian.Uint64(payload))
}

// wireIndex returns the message index inside wire bytes made by Wire,
// reading the known layout (tag, length, prefix), without decoding.
func wireIndex(wire []byte) int {
	if len(wire) < 2 {
		return -1
	}
	_, n := protowire.ConsumeVarint(wire[1:])
	if n < 0 {
		return -1
	}
	return indexOf(wire[1+n:])
}
