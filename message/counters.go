package message

import "sync/atomic"

// Counters counts the codec and hash work of one node. All fields are
// updated atomically and may be read at any time; the zero value is ready to
// use. Counters must not be copied after first use.
type Counters struct {
	Decodes      atomic.Uint64 // calls of Decode, successful or not
	Encodes      atomic.Uint64 // calls of (*Message).Append and Encode
	Hashes       atomic.Uint64 // deterministic message hashes computed
	DecodedBytes atomic.Uint64 // encoded bytes given to Decode
	HashedBytes  atomic.Uint64 // bytes fed to the deterministic hash
	EncodedBytes atomic.Uint64 // bytes produced by the encoder
}

// discard receives the counts of calls made with a nil *Counters; nobody
// reads it.
var discard Counters

func (c *Counters) orDiscard() *Counters {
	if c == nil {
		return &discard
	}
	return c
}

// CounterSnapshot is a copy of Counters at one instant.
type CounterSnapshot struct {
	Decodes, Encodes, Hashes                uint64
	DecodedBytes, HashedBytes, EncodedBytes uint64
}

// Snapshot returns the current values (all zero for a nil *Counters). Each
// field is read atomically; the set as a whole is not a consistent cut while
// other goroutines count.
func (c *Counters) Snapshot() CounterSnapshot {
	if c == nil {
		return CounterSnapshot{}
	}
	return CounterSnapshot{
		Decodes:      c.Decodes.Load(),
		Encodes:      c.Encodes.Load(),
		Hashes:       c.Hashes.Load(),
		DecodedBytes: c.DecodedBytes.Load(),
		HashedBytes:  c.HashedBytes.Load(),
		EncodedBytes: c.EncodedBytes.Load(),
	}
}

// Sub returns s minus o, field by field: the work done between two snapshots.
func (s CounterSnapshot) Sub(o CounterSnapshot) CounterSnapshot {
	return CounterSnapshot{
		Decodes:      s.Decodes - o.Decodes,
		Encodes:      s.Encodes - o.Encodes,
		Hashes:       s.Hashes - o.Hashes,
		DecodedBytes: s.DecodedBytes - o.DecodedBytes,
		HashedBytes:  s.HashedBytes - o.HashedBytes,
		EncodedBytes: s.EncodedBytes - o.EncodedBytes,
	}
}

// Add returns s plus o, field by field.
func (s CounterSnapshot) Add(o CounterSnapshot) CounterSnapshot {
	return CounterSnapshot{
		Decodes:      s.Decodes + o.Decodes,
		Encodes:      s.Encodes + o.Encodes,
		Hashes:       s.Hashes + o.Hashes,
		DecodedBytes: s.DecodedBytes + o.DecodedBytes,
		HashedBytes:  s.HashedBytes + o.HashedBytes,
		EncodedBytes: s.EncodedBytes + o.EncodedBytes,
	}
}
