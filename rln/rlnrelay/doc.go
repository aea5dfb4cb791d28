// Package rlnrelay is RLN relay (17/WAKU2-RLN-RELAY) on top of package
// rln's cryptography, as nwaku v0.38.1 runs it
// (waku/waku_rln_relay/rln_relay.nim): the gossipsub validator that checks
// every relayed message's RateLimitProof and keeps the nullifier log, and
// the Publisher that attaches proofs to the node's own messages with a
// message id counter that survives restarts.
//
// # The validator
//
// Validator.ValidateMessage is relay.Config.RLN: the relay's topic
// validator calls it once per message after its own decode, so the proof
// is decoded once and verified once, and the verified *rln.RateLimitProof
// rides in the message's envelope (message.Envelope.RateLimitProof). The
// checks run in nwaku's order (validateMessage):
//
//  1. decode the proof (rln.DecodeRateLimitProof): ReasonMalformed;
//  2. clock gap: the timestamp within MaxClockGap of local time, in whole
//     seconds as nwaku truncates: ReasonClockGap; then a message with no
//     proof at all is ReasonNoProof;
//  3. epoch: the proof's epoch equals the epoch of the message's timestamp,
//     with no tolerance (nwaku's MaxEpochGap only bounds its log):
//     ReasonEpoch;
//  4. root: in the membership's window of acceptable roots (Roots):
//     ReasonRoot;
//  5. the proof, one rln.Verifier.Verify: ReasonProof, or the Ignored
//     ReasonRLNIdentifier and ReasonNonCanonical;
//  6. the nullifier log of the proof's epoch, checked and updated in one
//     step: ReasonDuplicate (same nullifier, same shares), ReasonSpam (same
//     nullifier, other shares: the secret is recovered and handed to
//     Config.OnSpam), or the Ignored ReasonLogFull.
//
// Every failure is a gossipsub Reject, as in nwaku, except the three
// Ignored reasons (see Reason). The log keeps the epochs a message
// accepted now can be in, those within the clock gap of now (nwaku keeps
// fewer: with epochs of 20 s or more only the current one, so at each
// epoch boundary it forgets the previous epoch while its messages are
// still accepted), and at most Config.MaxLogEntries nullifiers.
//
// Verification takes about a millisecond of one core and no lock: the
// relay registers its topic validators inline, so go-libp2p-pubsub runs
// them on its validation workers, runtime.NumCPU() of them, each
// verifying its own message at the same time. Only the nullifier log's
// check and insert, a map lookup, is serialised.
//
// Stats counts every message under its reason and Collector exposes the
// counts as nwaku's waku_rln_* metrics.
//
// # Publishing
//
// Publisher.Attach makes the proof of a message the node publishes for
// its own membership (REST relay publish, the lightpush service) with the
// next message id of the epoch of the message's timestamp, up to the user
// message limit, and refuses beyond it with nwaku's error text
// (LimitError). The id is written to the counter file and synced before
// the proof is made, so no crash or restart hands it out again.
package rlnrelay
