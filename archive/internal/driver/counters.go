package driver

import (
	"sync/atomic"
	"time"

	"github.com/couriernet/courier/archive"
)

// Counters are the counters behind archive.Stats that both drivers keep,
// updated atomically by whoever does the work.
type Counters struct {
	Inserts, Dups, Eph, Failed, Batches, Bytes atomic.Uint64
	Syncs, SyncErrors, Ckpts, Queries          atomic.Uint64
	Deleted, RetentionRuns, RetentionErrors    atomic.Uint64
	Retries                                    atomic.Uint64
	CommitNs, MaxCommitNs, SyncNs, CkptNs      atomic.Int64
	WriterCPUNs, CkptWriterNs                  atomic.Int64
}

// CommitTook counts one batch that took d.
func (c *Counters) CommitTook(d time.Duration) {
	c.Batches.Add(1)
	c.CommitNs.Add(int64(d))
	for {
		m := c.MaxCommitNs.Load()
		if int64(d) <= m || c.MaxCommitNs.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// Snapshot returns the counters as Stats; Messages and the queue's fields
// are the driver's to fill.
func (c *Counters) Snapshot() archive.Stats {
	return archive.Stats{
		Inserts: c.Inserts.Load(), Duplicates: c.Dups.Load(), Ephemeral: c.Eph.Load(),
		Failed: c.Failed.Load(), Batches: c.Batches.Load(), BytesAppended: c.Bytes.Load(),
		CommitTime: time.Duration(c.CommitNs.Load()), MaxCommit: time.Duration(c.MaxCommitNs.Load()),
		Syncs: c.Syncs.Load(), SyncErrors: c.SyncErrors.Load(), SyncTime: time.Duration(c.SyncNs.Load()),
		Checkpoints: c.Ckpts.Load(), CheckpointTime: time.Duration(c.CkptNs.Load()),
		WriterCheckpointTime: time.Duration(c.CkptWriterNs.Load()),
		Queries:              c.Queries.Load(), Deleted: c.Deleted.Load(),
		RetentionRuns: c.RetentionRuns.Load(), RetentionErrors: c.RetentionErrors.Load(),
		Retries: c.Retries.Load(), WriterCPU: time.Duration(c.WriterCPUNs.Load()),
	}
}
