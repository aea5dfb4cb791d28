package queue_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/couriernet/courier/archive/internal/archivetest"
	"github.com/couriernet/courier/archive/internal/driver"
	"github.com/couriernet/courier/archive/internal/queue"
	"github.com/couriernet/courier/message"
)

// TestFinishFailure: a failed batch of two stored messages and an
// ephemeral one calls onFailure once with the error and 2, before the done
// callbacks, which get the error (the ephemeral one nil); onInsert is not
// called. A committed batch calls onInsert for the two and never
// onFailure.
func TestFinishFailure(t *testing.T) {
	em := &message.Message{Payload: []byte("c"), ContentTopic: "/t/1/a/proto", Ephemeral: true}
	eph := message.NewEnvelope(em, "/waku/2/rs/0/0", em.Encode(nil), nil)
	envs := []*message.Envelope{
		archivetest.NewEnv(t, "/waku/2/rs/0/0", "/t/1/a/proto", 1, []byte("a")),
		archivetest.NewEnv(t, "/waku/2/rs/0/0", "/t/1/a/proto", 2, []byte("b")),
		eph,
	}
	var events []string
	batch := func() []queue.Item {
		var b []queue.Item
		for i, env := range envs {
			b = append(b, queue.Item{Env: env, Done: func(err error) { events = append(events, fmt.Sprint("done ", i, " ", errText(err))) }})
		}
		return b
	}
	onInsert := func(env *message.Envelope, _ time.Duration) {
		events = append(events, "insert "+string(env.Message().Payload))
	}
	onFailure := func(err error, n int) { events = append(events, fmt.Sprint("failure ", errText(err), " ", n)) }

	full := errors.New("no space left on device")
	var st driver.Counters
	queue.Finish(batch(), full, &st, onInsert, onFailure)
	want := []string{"failure no space left on device 2", "done 0 no space left on device", "done 1 no space left on device", "done 2 nil"}
	if !slices.Equal(events, want) {
		t.Errorf("failed batch: %q, want %q", events, want)
	}
	if st.Failed.Load() != 2 || st.Eph.Load() != 1 {
		t.Errorf("counted %d failed, %d ephemeral; want 2 and 1", st.Failed.Load(), st.Eph.Load())
	}

	events = nil
	queue.Finish(batch(), nil, &st, onInsert, onFailure)
	want = []string{"insert a", "done 0 nil", "insert b", "done 1 nil", "done 2 nil"}
	if !slices.Equal(events, want) {
		t.Errorf("committed batch: %q, want %q", events, want)
	}
}

func errText(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
