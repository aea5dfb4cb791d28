package embedded

import (
	"context"
	"fmt"
	"hash/crc32"
	"runtime"
	"time"

	"github.com/couriernet/courier/archive/internal/queue"
	"github.com/couriernet/courier/message"
)

// Append implements archive.Archive. The record's CRC-32C is the one the
// envelope carries (message.Envelope.WireCRC, computed with the relay's
// hashes) or is computed here, on the caller's goroutine, so the writer
// does not.
func (a *Archive) Append(ctx context.Context, env *message.Envelope, done func(error)) error {
	it, err := queue.NewItem(env, done, a.cfg.Now, a.cfg.OnInsert != nil)
	if err != nil {
		return err
	}
	if !env.Message().Ephemeral {
		var ok bool
		if it.CRC, ok = env.WireCRC(); !ok {
			it.CRC = crc32.Checksum(env.Wire(), castagnoli)
		}
	}
	return a.q.Put(ctx, it)
}

func (a *Archive) writeLoop() {
	defer close(a.writerDone)
	var batch []queue.Item
	for {
		var ok bool
		if batch, ok = a.q.Take(batch, a.cfg.MaxBatch, a.ckpt); !ok {
			return
		}
		err := a.timedCommit(batch)
		a.q.Release(batch)
		queue.Finish(batch, err, &a.st, a.cfg.OnInsert, a.cfg.OnFailure)
		clear(batch)
		select {
		case f := <-a.ckpt:
			f()
		default:
		}
	}
}

// timedCommit commits batch on one OS thread, whose CPU time it adds to
// Stats.WriterCPU. The thread is the writer's only while it commits: a
// goroutine locked to its thread while it waits for work would need that
// very thread woken (a futex wake and the OS scheduling it) at every
// batch, where any idle thread would do.
func (a *Archive) timedCommit(batch []queue.Item) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := threadCPU()
	err := a.commit(batch)
	a.st.WriterCPUNs.Add(int64(threadCPU() - cpu))
	return err
}

// commit stores batch: one index transaction, the new records written to
// the segment with pwritev before the transaction commits. A row is
// inserted unless its hash is stored (insertRow; insertRowAnyTime for a
// message without a timestamp), so a duplicate, in the archive or earlier
// in the batch, writes nothing.
func (a *Archive) commit(batch []queue.Item) (err error) {
	start := time.Now()
	defer func() { a.st.CommitTook(time.Since(start)) }()
	ctx := context.Background()
	if _, err = a.begin.ExecContext(ctx); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	var inserts, dups, bytes uint64
	var last int64 // id of the last row inserted
	defer func() {
		if err != nil {
			a.rollback.ExecContext(ctx)
			a.end = a.commitEnd
			clear(a.topics) // the ids of topics added in the transaction are gone
			return
		}
		a.commitEnd = a.end
		a.changed.Add(inserts)
		a.st.Inserts.Add(inserts)
		a.st.Dups.Add(dups)
		a.st.Bytes.Add(bytes)
	}()
	if cap(a.hdrs) < recHeaderSize*len(batch) {
		a.hdrs = make([]byte, recHeaderSize*len(batch))
	}
	a.iov = a.iov[:0]
	pending := a.end // where the first pending iovec goes
	for i := range batch {
		env := batch[i].Env
		msg := env.Message()
		if msg.Ephemeral {
			continue
		}
		wire := env.Wire()
		rec := int64(recHeaderSize + len(wire))
		if a.end+rec > a.cfg.SegmentSize && a.end > int64(segHeaderSize) {
			a.reserveTo(a.end)
			if err = writeVec(a.cur, a.iov, pending); err != nil {
				return fmt.Errorf("archive: segment: %w", err)
			}
			a.iov = a.iov[:0]
			if err = a.roll(); err != nil {
				return err
			}
			pending = a.end
		}
		ts := msg.Timestamp
		if ts <= 0 {
			ts = batch[i].Recv
		}
		var pubsub, content int64
		if pubsub, err = a.topicID(ctx, env.PubsubTopic()); err != nil {
			return err
		}
		if content, err = a.topicID(ctx, msg.ContentTopic); err != nil {
			return err
		}
		ins := a.ins
		if ts != msg.Timestamp {
			ins = a.insAnyTime
		}
		h := env.Hash()
		res, err := ins.ExecContext(ctx, hkey(h[:]), h[:], ts, pubsub, content, a.curID, a.end+recHeaderSize, len(wire))
		if err != nil {
			return fmt.Errorf("archive: index: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			dups++
			continue
		}
		if id, err := res.LastInsertId(); err == nil {
			last = id
		}
		hdr := a.hdrs[i*recHeaderSize : (i+1)*recHeaderSize]
		putRecHeader(hdr, len(wire), batch[i].CRC)
		a.iov = append(a.iov, hdr, wire)
		a.end += rec
		inserts++
		bytes += uint64(rec)
	}
	if len(a.iov) > 0 {
		a.reserveTo(a.end)
		if err = writeVec(a.cur, a.iov, pending); err != nil {
			return fmt.Errorf("archive: segment: %w", err)
		}
	}
	clear(a.iov)
	if _, err = a.commitTx.ExecContext(ctx); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	if inserts > 0 {
		a.segMu.Lock()
		a.committed = last
		a.segMu.Unlock()
	}
	return nil
}

// roll starts a new segment; the syncer fsyncs and closes the old one.
func (a *Archive) roll() error {
	f, err := createSegment(a.dir, a.curID+1)
	if err != nil {
		return fmt.Errorf("archive: segment: %w", err)
	}
	a.segMu.Lock()
	a.retired = append(a.retired, a.cur)
	a.cur, a.curID = f, a.curID+1
	a.segMu.Unlock()
	a.end, a.commitEnd, a.reserved = int64(segHeaderSize), int64(segHeaderSize), int64(segHeaderSize)
	return nil
}

// reserveAhead is how far past the records being written the writer
// reserves the current segment's blocks: one fallocate(2) per 16 MiB of
// records, and never more than 16 MiB of blocks held past what the
// segment holds.
const reserveAhead = 16 << 20

// reserveTo makes sure the current segment's blocks are reserved up to
// end, reserving up to reserveAhead past it (not past the segment's
// size) when they are not: a record's write into reserved blocks does not
// allocate them page by page (reserve).
func (a *Archive) reserveTo(end int64) {
	if end <= a.reserved {
		return
	}
	to := max(min(end+reserveAhead, a.cfg.SegmentSize), end)
	reserve(a.cur, a.reserved, to)
	a.reserved = to
}
