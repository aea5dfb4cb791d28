package relay

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"unsafe"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"

	"github.com/couriernet/courier/message"
)

// earlyDecode moves a received message's decode and deterministic hash to
// the moment gossipsub asks its message id, so that the message id
// (sha256 of the encoded WakuMessage) and the deterministic hash (sha256
// of the pubsub topic, payload, content topic, meta and timestamp) are
// computed in one pass (message.HashAndID): about 1.35 times the CPU of
// one of them, where the two apart take 2, for the 65 kB of the seed's
// median payload. It keeps the decoded message and its hash, or the
// decode's error, for the topic validator (take), which then decodes and
// hashes nothing: still one decode and one hash per message.
//
// gossipsub asks the id of every copy a peer sends, before its seen cache
// finds duplicates, and of the node's own publishes. So a message is
// decoded early only on its first sight: a fingerprint of its topic,
// length and first and last 64 bytes not met among the last seenSlots
// (copies are byte for byte the same, so a duplicate that gossipsub is
// about to drop is not decoded; two different messages of the same
// fingerprint only send the second one the usual way, decode and hash in
// the validator). A message under earlyMin bytes, where pairing saves
// under a microsecond, and a local publish (markLocal), which carries its
// envelope and needs no hash, go the usual way too.
//
// What is kept waits for the validator in a ring of a fixed size: a copy
// gossipsub drops before validating it (a duplicate, a full validation
// queue: DuplicateMessage, RejectMessage) is removed, and anything else the
// validator never asks for is overwritten by later messages, after which
// the validator would decode it itself. None of this changes what is
// accepted: the validator applies every rule to the decoded message
// whichever way it was decoded.
//
// id runs on gossipsub's event loop; take on validation goroutines;
// markLocal on publishers'; the tracer events on either.
type earlyDecode struct {
	noTrace
	counters *message.Counters
	seed     maphash.Seed
	seen     [seenSlots]atomic.Uint64 // fingerprints, 0 for none

	mu      sync.Mutex
	pending map[*pb.Message]decoded
	ring    []*pb.Message // pending's keys in order of arrival; nil when taken
	next    int           // the ring's oldest slot, the next one written
	local   map[*byte]int // first bytes of the wire of each local publish under way
}

// decoded is what earlyDecode keeps of one message: the decoded message
// and its hash, or the decode's error.
type decoded struct {
	msg  *message.Message
	hash message.Hash
	err  error
	slot int // in the ring
}

const (
	// earlyMin is the smallest encoded message decoded early, in bytes.
	earlyMin = 2048
	// seenSlots is the number of fingerprints kept.
	seenSlots = 4096
)

var _ pubsub.RawTracer = (*earlyDecode)(nil)

// newEarlyDecode keeps up to size decoded messages for the validator; size
// should cover the validation queue.
func newEarlyDecode(c *message.Counters, size int) *earlyDecode {
	return &earlyDecode{
		counters: c,
		seed:     maphash.MakeSeed(),
		pending:  make(map[*pb.Message]decoded, size),
		ring:     make([]*pb.Message, size),
		local:    map[*byte]int{},
	}
}

// id decodes m and returns its message id computed with its deterministic
// hash, keeping both for the validator, when m is on its first sight and
// large enough; ok is false when it did not compute the id (the caller
// hashes m.Data itself). A message that does not decode is kept with its
// error, so that the validator counts no second decode.
func (e *earlyDecode) id(m *pb.Message) (id [32]byte, ok bool) {
	if len(m.Data) < earlyMin || e.isLocal(m.Data) || !e.firstSight(m) {
		return id, false
	}
	msg, err := message.Decode(m.Data, e.counters)
	if err != nil {
		e.put(m, decoded{err: err})
		return id, false
	}
	h, id := msg.HashAndID(m.GetTopic(), m.Data, e.counters)
	e.put(m, decoded{msg: msg, hash: h})
	return id, true
}

// firstSight records m's fingerprint and reports whether it was not
// already there.
func (e *earlyDecode) firstSight(m *pb.Message) bool {
	d := m.Data
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(d)))
	var h maphash.Hash
	h.SetSeed(e.seed)
	h.WriteString(m.GetTopic())
	h.Write(n[:])
	h.Write(d[:64])
	h.Write(d[len(d)-64:])
	fp := h.Sum64() | 1
	slot := &e.seen[fp%seenSlots]
	if slot.Load() == fp {
		return false
	}
	slot.Store(fp)
	return true
}

// put keeps d for m, in place of the ring's oldest entry.
func (e *earlyDecode) put(m *pb.Message, d decoded) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if old := e.ring[e.next]; old != nil {
		delete(e.pending, old)
	}
	d.slot = e.next
	e.ring[e.next] = m
	e.pending[m] = d
	e.next = (e.next + 1) % len(e.ring)
}

// take returns and forgets what was kept for m, if anything.
func (e *earlyDecode) take(m *pb.Message) (decoded, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, ok := e.pending[m]
	if ok {
		delete(e.pending, m)
		e.ring[d.slot] = nil
	}
	return d, ok
}

// markLocal notes that wire is being published by this node, until
// unmarkLocal: its message id is computed the usual way.
func (e *earlyDecode) markLocal(wire []byte) {
	if len(wire) < earlyMin {
		return
	}
	e.mu.Lock()
	e.local[unsafe.SliceData(wire)]++
	e.mu.Unlock()
}

// unmarkLocal ends what markLocal(wire) began.
func (e *earlyDecode) unmarkLocal(wire []byte) {
	if len(wire) < earlyMin {
		return
	}
	p := unsafe.SliceData(wire)
	e.mu.Lock()
	if e.local[p]--; e.local[p] <= 0 {
		delete(e.local, p)
	}
	e.mu.Unlock()
}

func (e *earlyDecode) isLocal(data []byte) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.local[unsafe.SliceData(data)] > 0
}

// DuplicateMessage and RejectMessage forget what was kept for a copy that
// gossipsub dropped (or rejected) without the validator taking it.
func (e *earlyDecode) DuplicateMessage(msg *pubsub.Message) { e.take(msg.Message) }

func (e *earlyDecode) RejectMessage(msg *pubsub.Message, _ string) { e.take(msg.Message) }
