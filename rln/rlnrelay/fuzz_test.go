package rlnrelay

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	pubsub "github.com/libp2p/go-libp2p-pubsub"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rln"
)

// FuzzValidate feeds arbitrary proof bytes, payloads and timestamps to the
// validator: it never panics, every message gets exactly one reason, a
// message is accepted only with its proof and never twice, and the reason
// is consistent with the decoder's verdict.
func FuzzValidate(f *testing.F) {
	g := loadGolden(f)
	for _, name := range []string{"a0", "b00", "other-id"} {
		m := g.Messages[name]
		f.Add(m.Proof, m.Payload, int64(0))
	}
	f.Add([]byte{}, []byte("x"), int64(0))
	f.Add([]byte{0x0a, 0x80}, []byte("x"), int64(25e9))
	v, _ := newTestValidator(f, nil)
	f.Fuzz(func(t *testing.T, proof, payload []byte, offset int64) {
		m := &message.Message{Payload: payload, ContentTopic: goldenTopic, Timestamp: g.Now + offset%(60e9), RateLimitProof: proof}
		before := v.Stats()
		p, res := v.ValidateMessage(goldenTopic, m)
		after := v.Stats()
		var counted uint64
		for _, r := range Reasons() {
			counted += after.Reasons[r] - before.Reasons[r]
		}
		if counted != 1 {
			t.Fatalf("%d reasons counted for one message", counted)
		}
		if (res == pubsub.ValidationAccept) != (p != nil) {
			t.Fatalf("result %v with proof %v", res, p)
		}
		_, err := rln.DecodeRateLimitProof(proof)
		malformed := errors.Is(err, rln.ErrMalformed)
		if grew := after.Reasons[ReasonMalformed] - before.Reasons[ReasonMalformed]; (grew == 1) != (malformed && len(proof) > 0) {
			t.Fatalf("malformed counted %d for decode error %v", grew, err)
		}
		if res == pubsub.ValidationAccept {
			if _, again := v.ValidateMessage(goldenTopic, m); again == pubsub.ValidationAccept {
				t.Fatal("the same message accepted twice")
			}
		}
	})
}

// FuzzCounterFile opens arbitrary bytes as a counter file: a clear error
// or a counter that then hands out ids and reopens to the same state;
// never a panic.
func FuzzCounterFile(f *testing.F) {
	dir := f.TempDir()
	seed := filepath.Join(dir, "seed")
	c, err := openCounter(seed, testCommitment, 1, 100)
	if err != nil {
		f.Fatal(err)
	}
	for range 3 {
		if _, err := c.reserve(100, 100, 10); err != nil {
			f.Fatal(err)
		}
	}
	c.close()
	data, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:headerSize])
	f.Add(append(data, 1, 2, 3))
	f.Add([]byte(counterMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "ids")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := openCounter(path, testCommitment, 1, 100)
		if err != nil {
			if !errors.Is(err, ErrCounterFile) {
				t.Fatalf("error %v does not wrap ErrCounterFile", err)
			}
			return
		}
		used := c.used(100)
		id, err := c.reserve(100, 100, rln.MaxUserMessageLimit)
		if err != nil && !errors.Is(err, ErrLimit) && !errors.Is(err, ErrEpochTooOld) {
			t.Fatal(err)
		}
		if err == nil && id != used {
			t.Fatalf("reserved %d after %d used", id, used)
		}
		after := c.used(100)
		c.close()
		c, err = openCounter(path, testCommitment, 1, 100)
		if err != nil {
			t.Fatalf("reopening a file the counter wrote: %v", err)
		}
		defer c.close()
		if c.used(100) != after {
			t.Fatalf("reopened with %d used, want %d", c.used(100), after)
		}
	})
}
