package archive

import (
	"sync/atomic"
	"time"
)

// counters are the Stats counters both drivers keep.
type counters struct {
	inserts, dups, eph, failed, batches, bytes atomic.Uint64
	syncs, syncErrors, ckpts, queries          atomic.Uint64
	deleted, retentionRuns, retentionErrors    atomic.Uint64
	retries                                    atomic.Uint64
	commitNs, maxCommitNs, syncNs, ckptNs      atomic.Int64
	writerCPUNs                                atomic.Int64
}

func (c *counters) commitTook(d time.Duration) {
	c.batches.Add(1)
	c.commitNs.Add(int64(d))
	for {
		m := c.maxCommitNs.Load()
		if int64(d) <= m || c.maxCommitNs.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

func (c *counters) snapshot() Stats {
	return Stats{
		Inserts: c.inserts.Load(), Duplicates: c.dups.Load(), Ephemeral: c.eph.Load(),
		Failed: c.failed.Load(), Batches: c.batches.Load(), BytesAppended: c.bytes.Load(),
		CommitTime: time.Duration(c.commitNs.Load()), MaxCommit: time.Duration(c.maxCommitNs.Load()),
		Syncs: c.syncs.Load(), SyncErrors: c.syncErrors.Load(), SyncTime: time.Duration(c.syncNs.Load()),
		Checkpoints: c.ckpts.Load(), CheckpointTime: time.Duration(c.ckptNs.Load()),
		Queries: c.queries.Load(), Deleted: c.deleted.Load(),
		RetentionRuns: c.retentionRuns.Load(), RetentionErrors: c.retentionErrors.Load(),
		Retries: c.retries.Load(), WriterCPU: time.Duration(c.writerCPUNs.Load()),
	}
}
