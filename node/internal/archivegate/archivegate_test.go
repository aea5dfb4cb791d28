package archivegate

import (
	"context"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

type appendRecorder struct {
	archive.Archive
	got []int64
}

func (a *appendRecorder) Append(_ context.Context, env *message.Envelope, done func(error)) error {
	a.got = append(a.got, env.Message().Timestamp)
	done(nil)
	return nil
}

// TestArchiveGate checks nwaku's bounds (waku/waku_archive/archive.nim
// validate): a timestamp more than 20 s before or after the clock is
// refused, the bounds themselves pass, ephemeral messages and a message
// without timestamp are judged as nwaku judges them.
func TestArchiveGate(t *testing.T) {
	rec := &appendRecorder{}
	g := New(rec, 20*time.Second) // nwaku's MaxMessageTimestampVariance
	now := time.Unix(1_800_000_000, 0)
	g.now = func() time.Time { return now }
	s := int64(time.Second)
	for _, c := range []struct {
		ts        int64
		ephemeral bool
		kept      bool
	}{
		{now.UnixNano(), false, true},
		{now.UnixNano() - 20*s, false, true},
		{now.UnixNano() + 20*s, false, true},
		{now.UnixNano() - 20*s - 1, false, false},
		{now.UnixNano() + 20*s + 1, false, false},
		{0, false, false},
		{0, true, true}, // the archive acknowledges it without storing
	} {
		m := &message.Message{Payload: []byte("p"), ContentTopic: "/a/1/b/c", Timestamp: c.ts, Ephemeral: c.ephemeral}
		before := len(rec.got)
		acked := false
		if err := g.Append(context.Background(), message.NewEnvelope(m, "/waku/2/rs/0/0", m.Encode(nil), nil), func(err error) { acked = err == nil }); err != nil {
			t.Fatal(err)
		}
		if kept := len(rec.got) > before; kept != c.kept || !acked {
			t.Errorf("timestamp %d ephemeral %v: passed on %v, acknowledged %v; want passed on %v", c.ts, c.ephemeral, kept, acked, c.kept)
		}
	}
	if old, future := g.Refused(); old != 2 || future != 1 {
		t.Errorf("refused too old %d, future %d; want 2 and 1", old, future)
	}
}
