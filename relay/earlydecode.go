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
// computed in one pass (message.HashAndID): about 1.2 times the CPU of
// one of them, the wire's CRC-32C included, where the three apart take
// about 2.1, for the 65 kB of the seed's median payload (package
// sha256x2). It keeps the decoded message and its hash, or the
// decode's error, for the topic validator (take), which then decodes and
// hashes nothing: still one decode and one hash per message. The work
// moves from the validation goroutines to gossipsub's event loop, which
// computes every message id: in the CPU budget of `courier bench`'s
// macro rows on this project's machine, 52 µs there for a message of
// 65 kB instead of 38 µs (before the CRC-32C joined the pass, about 1.5 µs
// more), above sha256x2's figure, as the pass reads a wire just
// received.
//
// gossipsub asks the id of every copy a peer sends, before its seen cache
// finds duplicates, so a message is decoded early only on its first
// sight: a fingerprint of its topic, length and first and last 64 bytes
// not among the last ones recorded (seenSets sets of two; copies are byte
// for byte the same, so a duplicate that gossipsub is about to drop is not
// decoded; two different messages of the same fingerprint only send the
// second one the usual way, decode and hash in the validator). The node's
// own publishes record their fingerprint (markLocal), so that a peer's
// echo of one is not decoded either; their message id is the one their
// envelope computed with its hash (message.Envelope.HashWithID), if it
// did, else computed the usual way. A message under earlyMin bytes,
// where pairing saves under a microsecond, one with a field StrictNoSign
// forbids (gossipsub rejects it before validating it), and every message
// while nothing takes what the relay delivers (no archive, no handler: a
// relay that only forwards needs neither the deterministic hash nor the
// CRC-32C, so the message id alone costs it less than the pair) go the
// usual way too.
//
// What is kept waits for the validator, which takes it; a copy gossipsub
// drops or rejects before validating it (a duplicate, a full validation
// queue) is forgotten on its tracer event (DuplicateMessage,
// RejectMessage). At most size messages are kept, the validation queue's
// length: past that, messages go the usual way until the validator has
// taken some, so an overloaded node does no early work for messages its
// full queue then drops (their message id costs what it did), and what it
// keeps is never pushed out by them. Anything never taken is forgotten
// after between rotateEvery and twice that many later messages kept (two
// generations), after which the validator, should it still come, decodes
// itself. None of this changes what is accepted: the validator applies
// every rule to the decoded message whichever way it was decoded.
//
// id runs on gossipsub's event loop; take on validation goroutines;
// markLocal on publishers'; the tracer events on either.
type earlyDecode struct {
	noTrace
	counters *message.Counters
	seed     maphash.Seed
	seen     [2 * seenSets]atomic.Uint64 // fingerprints, 0 for none; set i is slots 2i (newer) and 2i+1

	mu       sync.Mutex
	size     int
	cur, old map[*pb.Message]decoded  // this generation's and the last one's
	puts     int                      // into cur
	local    map[wireKey]localPublish // each local publish under way
}

// wireKey is a wire's first byte and length: a local publish's wire is
// the very slice gossipsub asks the id of.
type wireKey struct {
	p *byte
	n int
}

// localPublish is a local publish under way: how many publishes of its
// wire, and its message id when its envelope computed it (hasID).
type localPublish struct {
	n     int
	id    [32]byte
	hasID bool
}

// decoded is what earlyDecode keeps of one message: the decoded message,
// its hash and the CRC-32C of its wire, or the decode's error.
type decoded struct {
	msg     *message.Message
	hash    message.Hash
	wireCRC uint32
	err     error
}

const (
	// earlyMin is the smallest encoded message decoded early, in bytes.
	earlyMin = message.PairMin
	// seenSets is the number of sets of two fingerprints.
	seenSets = 8192
	// rotateEvery, times size, is how many messages a generation keeps
	// before the one before it is forgotten.
	rotateEvery = 4
)

var _ pubsub.RawTracer = (*earlyDecode)(nil)

// newEarlyDecode keeps up to size decoded messages for the validator. size
// is the validation queue's length: with that many kept, the queue is
// full or nearly, and a message decoded early now might only be dropped.
func newEarlyDecode(c *message.Counters, size int) *earlyDecode {
	return &earlyDecode{
		counters: c,
		seed:     maphash.MakeSeed(),
		size:     size,
		cur:      map[*pb.Message]decoded{},
		old:      map[*pb.Message]decoded{},
		local:    map[wireKey]localPublish{},
	}
}

// id decodes m and returns its message id computed with its deterministic
// hash, keeping both for the validator, when pair is set (something takes
// what the relay delivers, and so will ask the hash) and m is on its first
// sight and large enough, or returns the id a local publish of m.Data
// brought (markLocal); ok is false when it has no id (the caller hashes
// m.Data itself). Without pair, a first sight is still recorded, so that
// a copy that comes once pair is set is not decoded. A message that does
// not decode is kept with its error, so that the validator counts no
// second decode.
func (e *earlyDecode) id(m *pb.Message, pair bool) (id [32]byte, ok bool) {
	if len(m.Data) < earlyMin || m.Signature != nil || m.Key != nil || m.From != nil || m.Seqno != nil {
		return id, false
	}
	if l, local, full := e.lookup(m.Data); local || full || !e.firstSight(m.GetTopic(), m.Data) || !pair {
		return l.id, l.hasID
	}
	msg, err := message.Decode(m.Data, e.counters)
	if err != nil {
		e.put(m, decoded{err: err})
		return id, false
	}
	h, id, crc := msg.HashAndID(m.GetTopic(), m.Data, e.counters)
	e.put(m, decoded{msg: msg, hash: h, wireCRC: crc})
	return id, true
}

// fingerprint is a message's fingerprint: its topic, length and first
// and last 64 bytes (data holds at least earlyMin bytes), never 0.
func (e *earlyDecode) fingerprint(topic string, data []byte) uint64 {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(data)))
	var h maphash.Hash
	h.SetSeed(e.seed)
	h.WriteString(topic)
	h.Write(n[:])
	h.Write(data[:64])
	h.Write(data[len(data)-64:])
	return h.Sum64() | 1
}

// firstSight records the message's fingerprint in its set, the older of
// the two giving way, and reports whether it was not there already.
func (e *earlyDecode) firstSight(topic string, data []byte) bool {
	fp := e.fingerprint(topic, data)
	set := e.seen[2*(fp%seenSets):][:2]
	newer := set[0].Load()
	if newer == fp || set[1].Load() == fp {
		return false
	}
	set[1].Store(newer)
	set[0].Store(fp)
	return true
}

// lookup returns data's local publish, if it is one under way (markLocal),
// and whether size messages are kept already.
func (e *earlyDecode) lookup(data []byte) (l localPublish, local, full bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, local = e.local[wireKey{unsafe.SliceData(data), len(data)}]
	return l, local, len(e.cur)+len(e.old) >= e.size
}

// put keeps d for m, starting a new generation every rotateEvery × size
// messages.
func (e *earlyDecode) put(m *pb.Message, d decoded) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.puts++; e.puts > rotateEvery*e.size {
		e.old, e.cur, e.puts = e.cur, map[*pb.Message]decoded{}, 1
	}
	e.cur[m] = d
}

// take returns and forgets what was kept for m, if anything.
func (e *earlyDecode) take(m *pb.Message) (decoded, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if d, ok := e.cur[m]; ok {
		delete(e.cur, m)
		return d, true
	}
	d, ok := e.old[m]
	delete(e.old, m)
	return d, ok
}

// markLocal notes that wire is being published by this node on topic,
// until unmarkLocal: its fingerprint is recorded, so that a peer's copy of
// it is not decoded, and its message id is id when hasID (its envelope's
// MessageID), else computed the usual way.
func (e *earlyDecode) markLocal(topic string, wire []byte, id [32]byte, hasID bool) {
	if len(wire) < earlyMin {
		return
	}
	e.firstSight(topic, wire)
	k := wireKey{unsafe.SliceData(wire), len(wire)}
	e.mu.Lock()
	l := e.local[k]
	l.n++
	if hasID {
		l.id, l.hasID = id, true
	}
	e.local[k] = l
	e.mu.Unlock()
}

// unmarkLocal ends what markLocal(wire) began.
func (e *earlyDecode) unmarkLocal(wire []byte) {
	if len(wire) < earlyMin {
		return
	}
	k := wireKey{unsafe.SliceData(wire), len(wire)}
	e.mu.Lock()
	if l := e.local[k]; l.n <= 1 {
		delete(e.local, k)
	} else {
		l.n--
		e.local[k] = l
	}
	e.mu.Unlock()
}

// DuplicateMessage and RejectMessage forget what was kept for a copy that
// gossipsub dropped (or rejected) without the validator taking it.
func (e *earlyDecode) DuplicateMessage(msg *pubsub.Message) { e.take(msg.Message) }

func (e *earlyDecode) RejectMessage(msg *pubsub.Message, _ string) { e.take(msg.Message) }
