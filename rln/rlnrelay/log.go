package rlnrelay

import (
	"sync"

	"github.com/couriernet/courier/rln"
)

// shares are the Shamir shares a logged proof revealed: x (the signal's
// hash) and y = secret + x·a1.
type shares struct{ x, y rln.Field }

// logOutcome is what the nullifier log says of a new proof.
type logOutcome uint8

const (
	logNew       logOutcome = iota // first proof with this nullifier in its epoch: logged
	logDuplicate                   // same nullifier and same shares: the same message seen again
	logSpam                        // same nullifier, other shares: a second message with one message id
	logFull                        // not logged: the log holds its maximum of entries
)

// nullifierLog is nwaku's nullifierLog (rln_relay.nim): per epoch, the
// nullifiers of the valid messages seen and their shares. Check and insert
// are one step under one lock, so that two validators racing with the two
// messages of a spammer cannot both find the nullifier absent (nwaku's
// hasDuplicate and updateLog are two steps, which its single thread makes
// safe).
//
// The log is bounded twice. In time: it keeps only the epochs a message
// accepted now can have, those that meet [now − clock gap, now + clock
// gap] (see keep), and drops the others whenever that range moves. In
// size: at most max entries in all; a new nullifier beyond that is not
// logged (logFull), and the validator Ignores its message rather than
// relay what it could not check for spam.
type nullifierLog struct {
	mu      sync.Mutex
	epochs  map[uint64]map[rln.Field]shares
	entries int
	max     int
	lo, hi  uint64 // the range of epochs kept, as of the last prune
}

func newNullifierLog(max int) *nullifierLog {
	return &nullifierLog{epochs: map[uint64]map[rln.Field]shares{}, max: max}
}

// insert logs nullifier n with shares s in epoch e, if it is new, after
// dropping the epochs outside [lo, hi], the range a message accepted now can
// fall in. It returns what it found; for logSpam, the shares first logged.
func (l *nullifierLog) insert(lo, hi, e uint64, n rln.Field, s shares) (logOutcome, shares) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lo != l.lo || hi != l.hi {
		l.pruneLocked(lo, hi)
	}
	byNullifier := l.epochs[e]
	if prev, ok := byNullifier[n]; ok {
		if prev == s {
			return logDuplicate, prev
		}
		return logSpam, prev
	}
	if l.entries >= l.max {
		return logFull, shares{}
	}
	if byNullifier == nil {
		byNullifier = map[rln.Field]shares{}
		l.epochs[e] = byNullifier
	}
	byNullifier[n] = s
	l.entries++
	return logNew, shares{}
}

// pruneLocked drops every epoch outside [lo, hi] (nwaku clearNullifierLog).
func (l *nullifierLog) pruneLocked(lo, hi uint64) {
	for e, byNullifier := range l.epochs {
		if e < lo || e > hi {
			l.entries -= len(byNullifier)
			delete(l.epochs, e)
		}
	}
	l.lo, l.hi = lo, hi
}

// size returns the number of epochs and of entries logged.
func (l *nullifierLog) size() (epochs, entries int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.epochs), l.entries
}
