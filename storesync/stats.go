package storesync

import "sync/atomic"

type counters struct {
	rounds, roundsFailed, served, sessionsRefused atomic.Uint64
	roundTrips, ranges, differences               atomic.Uint64
	reconBytesSent, reconBytesReceived            atomic.Uint64
	transferBytesSent, transferBytesReceived      atomic.Uint64
	messagesSent, messagesReceived, rejected      atomic.Uint64
}

// Stats is a snapshot of a service's counters.
type Stats struct {
	Rounds, RoundsFailed uint64 // sessions this side started, and those that failed
	Served               uint64 // sessions answered
	SessionsRefused      uint64 // sessions reset because MaxInboundSessions were running
	RoundTrips           uint64 // payloads received
	Ranges               uint64 // ranges received
	Differences          uint64 // hashes found missing on either side
	// Bytes of reconciliation and transfer frames; sent counts include
	// the length prefix, received counts do not.
	ReconciliationBytesSent, ReconciliationBytesReceived uint64
	TransferBytesSent, TransferBytesReceived             uint64
	MessagesSent, MessagesReceived                       uint64 // transferred messages
	Rejected                                             uint64 // transferred messages refused
	Items                                                int    // items in the index
	Evicted                                              uint64 // items dropped from a full index
}

// Stats returns a snapshot of the counters.
func (s *Service) Stats() Stats {
	return Stats{
		Rounds: s.st.rounds.Load(), RoundsFailed: s.st.roundsFailed.Load(), Served: s.st.served.Load(),
		SessionsRefused: s.st.sessionsRefused.Load(),
		RoundTrips:      s.st.roundTrips.Load(), Ranges: s.st.ranges.Load(), Differences: s.st.differences.Load(),
		ReconciliationBytesSent: s.st.reconBytesSent.Load(), ReconciliationBytesReceived: s.st.reconBytesReceived.Load(),
		TransferBytesSent: s.st.transferBytesSent.Load(), TransferBytesReceived: s.st.transferBytesReceived.Load(),
		MessagesSent: s.st.messagesSent.Load(), MessagesReceived: s.st.messagesReceived.Load(),
		Rejected: s.st.rejected.Load(), Items: s.storage.Len(), Evicted: s.storage.Evicted(),
	}
}
