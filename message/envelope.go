package message

// Envelope is one message as a node carries it: the decoded Message, the
// pubsub topic it travels on, its deterministic hash and its encoded bytes.
// An Envelope is immutable and is shared by pointer among all consumers; the
// hash is computed once, when it is made.
type Envelope struct {
	msg         *Message
	pubsubTopic string
	hash        Hash
	wire        []byte
}

// NewEnvelope binds msg, pubsubTopic and wire and computes the deterministic
// hash once (counted in c). wire must be the encoding msg was decoded from or
// encoded to; msg aliases it, so neither may be modified afterwards.
func NewEnvelope(msg *Message, pubsubTopic string, wire []byte, c *Counters) *Envelope {
	return &Envelope{msg: msg, pubsubTopic: pubsubTopic, hash: msg.Hash(pubsubTopic, c), wire: wire}
}

// NewEnvelopeWithHash is NewEnvelope for a message whose hash is already
// known, for example one read back from an archive. It does not hash.
func NewEnvelopeWithHash(msg *Message, pubsubTopic string, wire []byte, h Hash) *Envelope {
	return &Envelope{msg: msg, pubsubTopic: pubsubTopic, hash: h, wire: wire}
}

// Message returns the decoded message. It must not be modified.
func (e *Envelope) Message() *Message { return e.msg }

// PubsubTopic returns the pubsub topic the message travels on.
func (e *Envelope) PubsubTopic() string { return e.pubsubTopic }

// Hash returns the deterministic message hash.
func (e *Envelope) Hash() Hash { return e.hash }

// Wire returns the encoded WakuMessage (at most MaxSize bytes). The slice is
// shared with gossipsub's message cache and every consumer: read it, store
// it or write it, but never modify it or return it to a pool.
func (e *Envelope) Wire() []byte { return e.wire }
