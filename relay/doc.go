// Package relay is 11/WAKU2-RELAY: gossipsub on go-libp2p-pubsub under
// /vac/waku/relay/2.0.0, with the decode-once, hash-once receive path.
//
// # Receive path
//
//	gossipsub RPC -> message id = sha256(data)            (pubsub, counted)
//	     on a message's first sight (2 kB and more), when the relay
//	     delivers to anything: message.Decode(data) and the deterministic
//	     hash with the id, in one pass (earlyDecode)
//	  -> topic validator: message.Decode(data) once (aliases data) unless
//	     done with the id, Reject rules, deterministic hash once (unless
//	     done with the id, or nothing is delivered to: then only if a
//	     consumer asks it) -> *message.Envelope stored in
//	     pubsub.Message.ValidatorData
//	  -> gossipsub forwards the original bytes (no re-encode)
//	  -> subscription loop -> Dispatcher: the same *Envelope to the archive
//	     (lossless, pushes back), then to every Handler through its own
//	     bounded queue (lossy, every drop counted by reason)
//
// Local publishes encode once, hash once and pass the envelope with
// pubsub.WithValidatorData, so the local validator decodes nothing. A
// message of 2 kB or more has its hash computed with its message id in one
// pass (message.Envelope.HashWithID) when the relay, subscribed to the
// topic, delivers to anything (the archive, a handler) or the publisher
// did so already (the lightpush service), and gossipsub takes that id.
//
// # Reject or Ignore
//
// gossipsub penalises the peer that forwarded a Rejected message, so only
// what no honest implementation sends is rejected, as nwaku does: bytes that
// do not decode, an encoded message over 153600 bytes, meta over 64 bytes, a
// missing payload or content topic field (rfc-index 14/WAKU2-MESSAGE and
// 11/WAKU2-RELAY). A message that decodes but whose content topic is empty,
// white space or over message.MaxContentTopicSize (1024) bytes fails
// message.Validate, the rule every way into the node applies (local
// publish, REST, lightpush), and is Ignored: nwaku relays such messages,
// so the peer that forwarded one is not penalised, but this node neither
// forwards nor archives it. The timestamp window of 64/WAKU2-NETWORK is a
// network policy: it is off unless Config.MaxTimestampSkew is set, and then
// Ignores. RLN relay (Config.RLN, package rln/rlnrelay) runs last, with its
// own results: nwaku Rejects every message that fails it.
//
// # Topics
//
// Subscribe, Publish and PublishEnvelope join the topic they are given,
// for good (with its validator and traffic figures), so the topics joined
// on a remote peer's behalf are kept to a bounded set: the node follows
// filter subscriptions and the lightpush service publishes pushes only on
// the static-shard topics of the node's cluster, at most 1024 topics of at
// most 21 bytes. The node's configuration and the REST API, the
// operator's, hand in static-shard topics too. PublishEnvelope,
// lightpush's way in, joins a topic only when a peer follows it, so a push
// that reaches nobody (and is refused) leaves nothing behind.
//
// # Peers' subscriptions
//
// gossipsub remembers every topic a peer says it subscribes to, for as
// long as the peer stays connected, and go-libp2p-pubsub (like
// nim-libp2p, whose topicsHigh nwaku leaves unlimited) puts no bound on
// them: one peer sending 60 MB of SUBSCRIBE entries for new 24-byte topics
// grew a node's heap by 830 MB, and could go on. The relay keeps a peer's
// subscription only to a topic it has joined or one Config.PeerTopics
// allows (the node allows the static-shard topics of its cluster, those
// a lightpush may be published on); the others are dropped as they
// arrive. So what peers' subscriptions hold is at most (joined topics +
// topics PeerTopics allows) x connected peers entries: 1024 x 150 of
// them, a few MB, on a node with the default --max-connections.
//
// # Loss
//
// No drop is silent: the validator's rejects, gossipsub's own queue drops
// (seen through a RawTracer), the messages of the RPCs gossipsub ignores
// from a peer below the graylist threshold (DropGraylisted, told apart in
// graylist.go) and the dispatcher's full handler queues are counted by
// reason in Stats.
package relay
