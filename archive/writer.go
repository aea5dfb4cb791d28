package archive

import (
	"context"
	"fmt"
	"hash/crc32"
	"runtime"
	"time"

	"github.com/couriernet/courier/message"
)

// Append implements Archive. It computes the record's CRC-32C here, on the
// caller's goroutine, so the writer does not.
func (a *Embedded) Append(ctx context.Context, env *message.Envelope, done func(error)) error {
	if env == nil || env.Message() == nil {
		return fmt.Errorf("%w: nil envelope or message", ErrBadEnvelope)
	}
	if n := len(env.Wire()); n > maxRecord {
		return fmt.Errorf("%w: %d wire bytes, over %d", ErrBadEnvelope, n, maxRecord)
	}
	it := item{env: env, done: done, recv: a.cfg.Now().UnixNano(), size: int64(len(env.Wire())) + itemOverhead}
	if a.cfg.OnInsert != nil {
		it.in = sinceStart()
	}
	if !env.Message().Ephemeral {
		it.crc = crc32.Checksum(env.Wire(), castagnoli)
	}
	return a.q.put(ctx, it)
}

func (a *Embedded) writeLoop() {
	defer close(a.writerDone)
	// The writer keeps one OS thread, so that the thread's CPU time is
	// the writer's (Stats.WriterCPU).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var batch []item
	for {
		var ok bool
		if batch, ok = a.q.take(batch, a.cfg.MaxBatch, a.ckpt); !ok {
			return
		}
		cpu := threadCPU()
		err := a.commit(batch)
		a.st.writerCPUNs.Add(int64(threadCPU() - cpu))
		a.q.release(batch)
		finish(batch, err, &a.st, a.cfg.OnInsert)
		clear(batch)
		select {
		case f := <-a.ckpt:
			f()
		default:
		}
	}
}

// commit stores batch: one index transaction, the new records written to
// the segment with pwritev before the transaction commits.
func (a *Embedded) commit(batch []item) (err error) {
	start := time.Now()
	defer func() { a.st.commitTook(time.Since(start)) }()
	ctx := context.Background()
	if _, err = a.wcon.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	var inserts, dups, bytes uint64
	var last int64 // id of the last row inserted
	defer func() {
		if err != nil {
			a.wcon.ExecContext(ctx, "ROLLBACK")
			a.end = a.commitEnd
			return
		}
		a.commitEnd = a.end
		a.st.inserts.Add(inserts)
		a.st.dups.Add(dups)
		a.st.bytes.Add(bytes)
	}()
	if cap(a.hdrs) < recHeaderSize*len(batch) {
		a.hdrs = make([]byte, recHeaderSize*len(batch))
	}
	a.iov = a.iov[:0]
	pending := a.end // where the first pending iovec goes
	for i := range batch {
		env := batch[i].env
		msg := env.Message()
		if msg.Ephemeral {
			continue
		}
		wire := env.Wire()
		rec := int64(recHeaderSize + len(wire))
		if a.end+rec > a.cfg.SegmentSize && a.end > int64(segHeaderSize) {
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
			ts = batch[i].recv
		}
		h := env.Hash()
		res, err := a.ins.ExecContext(ctx, h[:], ts, env.PubsubTopic(), msg.ContentTopic, a.curID, a.end+recHeaderSize, len(wire))
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
		putRecHeader(hdr, len(wire), batch[i].crc)
		a.iov = append(a.iov, hdr, wire)
		a.end += rec
		inserts++
		bytes += uint64(rec)
	}
	if len(a.iov) > 0 {
		if err = writeVec(a.cur, a.iov, pending); err != nil {
			return fmt.Errorf("archive: segment: %w", err)
		}
	}
	clear(a.iov)
	if _, err = a.wcon.ExecContext(ctx, "COMMIT"); err != nil {
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
func (a *Embedded) roll() error {
	f, err := createSegment(a.dir, a.curID+1)
	if err != nil {
		return fmt.Errorf("archive: segment: %w", err)
	}
	a.segMu.Lock()
	a.retired = append(a.retired, a.cur)
	a.cur, a.curID = f, a.curID+1
	a.segMu.Unlock()
	a.end, a.commitEnd = int64(segHeaderSize), int64(segHeaderSize)
	return nil
}
