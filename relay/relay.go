package relay

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/couriernet/courier/internal/harness"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rln"
)

// Errors of the relay API.
var (
	ErrClosed        = errors.New("relay: closed")
	ErrNotSubscribed = errors.New("relay: not subscribed to pubsub topic")
	ErrInvalid       = errors.New("relay: invalid message")
	ErrNoOwner       = errors.New("relay: subscription owner is empty")
)

// Relay is a node's 11/WAKU2-RELAY service.
type Relay struct {
	cfg     Config
	host    host.Host
	ps      *pubsub.PubSub
	ctx     context.Context
	cancel  context.CancelFunc
	c       counters
	disp    *dispatcher
	mesh    *meshTracker
	traffic *traffic
	pubsub  *pubsubCounts
	scores  scoreBoard
	gray    *graylistCounter
	early   *earlyDecode

	mu     sync.Mutex
	topics map[string]*topicState
	// joined holds the names of r.topics for gossipsub's event loop, which
	// must not take r.mu (Join waits for the loop with r.mu held). It is
	// replaced, never changed, with r.mu held.
	joined atomic.Pointer[map[string]struct{}]
	closed bool
	wg     sync.WaitGroup
}

type topicState struct {
	topic  *pubsub.Topic
	sub    *pubsub.Subscription // nil when no owner needs the topic
	owners map[Owner]struct{}   // who needs sub; empty exactly when sub is nil
	stats  *topicCounters
}

// New starts gossipsub on h with the Waku relay protocol id first and the
// meshsub ids go-waku also registers, StrictNoSign and message id =
// sha256(data) (11/WAKU2-RELAY). It subscribes to nothing.
func New(h host.Host, cfg Config) (*Relay, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Relay{cfg: cfg, host: h, ctx: ctx, cancel: cancel, topics: map[string]*topicState{}, mesh: newMeshTracker(), traffic: newTraffic(), pubsub: newPubsubCounts()}
	r.gray = newGraylistCounter(&r.c)
	r.early = newEarlyDecode(cfg.Counters, cfg.ValidateQueueSize)
	r.disp = &dispatcher{ctx: ctx, archive: cfg.Archive, archiveDone: cfg.ArchiveDone, queueLen: cfg.HandlerQueueSize, c: &r.c}
	score, thresholds := nwakuPeerScore()
	ps, err := pubsub.NewGossipSub(ctx, h,
		pubsub.WithGossipSubParams(*cfg.GossipSub),
		pubsub.WithGossipSubProtocols(protocols, features),
		pubsub.WithMessageSignaturePolicy(pubsub.StrictNoSign),
		pubsub.WithNoAuthor(),
		pubsub.WithMessageIdFn(r.messageID),
		pubsub.WithSeenMessagesTTL(cfg.SeenTTL),
		pubsub.WithValidateQueueSize(cfg.ValidateQueueSize),
		pubsub.WithPeerOutboundQueueSize(cfg.PeerOutboundQueueSize),
		pubsub.WithMaxMessageSize(message.MaxSize+64*1024),
		pubsub.WithFloodPublish(true),
		pubsub.WithPeerExchange(true),
		pubsub.WithPeerScore(score, thresholds),
		pubsub.WithPeerScoreInspect(pubsub.PeerScoreInspectFn(r.inspectScores), cfg.GossipSub.HeartbeatInterval),
		pubsub.WithRawTracer(tracer{c: &r.c}),
		pubsub.WithRawTracer(r.gray),
		pubsub.WithRawTracer(r.early),
		pubsub.WithAppSpecificRpcInspector(r.gray.inspectRPC),
		pubsub.WithRawTracer(r.mesh),
		pubsub.WithRawTracer(r.traffic),
		pubsub.WithRawTracer(r.pubsub),
		pubsub.WithSubscriptionFilter(peerSubscriptions{r}),
	)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("relay: start gossipsub: %w", err)
	}
	r.ps = ps
	return r, nil
}

// protocols are the relay's protocol ids, Waku's first (nwaku inserts it at
// index 0; go-waku relay/config.go adds the meshsub and floodsub ids).
var protocols = []protocol.ID{ProtocolID, pubsub.GossipSubID_v11, pubsub.GossipSubID_v10, pubsub.FloodSubID}

// features gives the Waku id gossipsub v1.1's feature set: mesh and peer
// exchange, as go-waku does.
func features(feat pubsub.GossipSubFeature, proto protocol.ID) bool {
	switch feat {
	case pubsub.GossipSubFeatureMesh:
		return proto == ProtocolID || proto == pubsub.GossipSubID_v11 || proto == pubsub.GossipSubID_v10
	case pubsub.GossipSubFeaturePX:
		return proto == ProtocolID || proto == pubsub.GossipSubID_v11
	}
	return false
}

// messageID is gossipsub's message id: sha256 of the encoded WakuMessage
// (nwaku waku_relay/message_id.nim, go-waku relay/config.go msgIDFn).
func (r *Relay) messageID(m *pb.Message) string {
	r.c.msgIDHashes.Add(1)
	r.gray.seen(m)
	if id, ok := r.early.id(m, r.disp.delivers()); ok {
		return string(id[:])
	}
	sum := sha256.Sum256(m.Data)
	return string(sum[:])
}

// Counters returns the node's decode and hash counters.
func (r *Relay) Counters() *message.Counters { return r.cfg.Counters }

// TopicPeers returns the peers gossipsub knows to be subscribed to
// pubsubTopic (mesh or not), in no particular order; nil when there are none.
func (r *Relay) TopicPeers(pubsubTopic string) []peer.ID { return r.ps.ListPeers(pubsubTopic) }

// WaitTopicPeers returns once at least n relay peers follow pubsubTopic
// (TopicPeers), which the relay must have joined (Subscribe, Publish). It
// waits on gossipsub's peer events of the topic, so that an application can
// publish as soon as someone will hear it, and a lightpush service will not
// answer NO_PEERS_TO_RELAY. Errors wrap
// ErrNotSubscribed (the topic is not joined) or ErrClosed (the relay is,
// or closes while waiting), or are ctx's.
func (r *Relay) WaitTopicPeers(ctx context.Context, pubsubTopic string, n int) error {
	r.mu.Lock()
	ts, joined := r.topics[pubsubTopic]
	closed := r.closed
	r.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case !joined:
		return fmt.Errorf("%w: %s", ErrNotSubscribed, pubsubTopic)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(r.ctx, cancel)()
	err := r.waitPeers(ctx, ts.topic, n)
	if err != nil && r.ctx.Err() != nil {
		return ErrClosed
	}
	return err
}

// waitPeers waits on t's peer events until t has n peers. gossipsub may
// report a peer's subscription before it counts the peer itself (once its
// stream is up, with no event of its own), so the count is also checked
// again every peerRecheck without an event.
func (r *Relay) waitPeers(ctx context.Context, t *pubsub.Topic, n int) error {
	events, err := t.EventHandler() // reports the peers already there as joins
	if err != nil {
		return fmt.Errorf("relay: peer events of %q: %w", t.String(), err)
	}
	defer events.Cancel()
	for len(t.ListPeers()) < n {
		next, cancel := context.WithTimeout(ctx, peerRecheck)
		_, err := events.NextPeerEvent(next)
		cancel()
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// peerRecheck is how long waitPeers waits for a peer event before it
// counts the topic's peers again.
const peerRecheck = 50 * time.Millisecond

// validateBytes is the topic validator's work on one received message:
// decode once, apply the Reject and Ignore rules (with RLN relay, its check
// and its one proof verification), hash once. A message that
// decodes but fails message.Validate (its content topic: nwaku relays an
// empty one) is Ignored, not Rejected, so that the honest peer that
// forwarded it is not penalised.
func (r *Relay) validateBytes(pubsubTopic string, data []byte) (*message.Envelope, pubsub.ValidationResult) {
	m, err := message.Decode(data, r.cfg.Counters)
	return r.validateDecoded(pubsubTopic, data, decoded{msg: m, err: err}, false)
}

// validateDecoded is validateBytes after the decode of data, which gave
// d.msg or d.err; early says that d also holds the message's deterministic
// hash and its wire's CRC-32C (earlyDecode), else the envelope computes
// the hash.
func (r *Relay) validateDecoded(pubsubTopic string, data []byte, d decoded, early bool) (*message.Envelope, pubsub.ValidationResult) {
	m, err := d.msg, d.err
	if err != nil {
		r.c.drop(DropInvalid)
		return nil, pubsub.ValidationReject
	}
	if message.Validate(m) != nil {
		r.c.drop(DropContentTopic)
		return nil, pubsub.ValidationIgnore
	}
	if r.Check(m) != nil {
		r.c.drop(DropTimestamp)
		return nil, pubsub.ValidationIgnore
	}
	var proof *rln.RateLimitProof
	if r.cfg.RLN != nil {
		p, res := r.cfg.RLN.ValidateMessage(pubsubTopic, m)
		if res != pubsub.ValidationAccept {
			r.c.drop(DropRLN)
			return nil, res
		}
		proof = p
	}
	if early {
		return message.NewEnvelopeWithHashAndProof(m, pubsubTopic, data, proof, d.hash, d.wireCRC), pubsub.ValidationAccept
	}
	env := message.NewEnvelopeWithProof(m, pubsubTopic, data, r.cfg.Counters, proof)
	if r.disp.delivers() {
		env.Hash() // once, here: the archive and every handler may ask it
	}
	return env, pubsub.ValidationAccept
}

// ErrTimestamp is returned by Check for a message outside
// Config.MaxTimestampSkew of local time.
var ErrTimestamp = errors.New("relay: timestamp too far from local time")

// Check applies the relay's network policy to m (today the timestamp
// window, when configured), the rule the validator applies after a decode
// and message.Validate, so that a service taking messages from light
// clients (lightpush) holds them to what the relay validator would. It
// returns nil or an error wrapping ErrTimestamp.
func (r *Relay) Check(m *message.Message) error {
	if !r.timestampOK(m) {
		return fmt.Errorf("%w: %d ns, window %v", ErrTimestamp, m.Timestamp, r.cfg.MaxTimestampSkew)
	}
	return nil
}

func (r *Relay) timestampOK(m *message.Message) bool {
	if r.cfg.MaxTimestampSkew <= 0 {
		return true
	}
	d := time.Duration(time.Now().UnixNano() - m.Timestamp)
	return d <= r.cfg.MaxTimestampSkew && d >= -r.cfg.MaxTimestampSkew
}

// validator is pubsubTopic's topic validator. It folds the payload of each
// message it accepts from a peer into c's size figures, as nwaku's
// onValidated observer does (waku_relay/protocol.nim logMessageInfo).
func (r *Relay) validator(pubsubTopic string, c *topicCounters) pubsub.ValidatorEx {
	return func(_ context.Context, _ peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
		if _, ok := msg.ValidatorData.(*message.Envelope); ok {
			return pubsub.ValidationAccept // a local publish, already encoded and hashed
		}
		var env *message.Envelope
		var res pubsub.ValidationResult
		if d, ok := r.early.take(msg.Message); ok {
			env, res = r.validateDecoded(pubsubTopic, msg.Data, d, true)
		} else {
			env, res = r.validateBytes(pubsubTopic, msg.Data)
		}
		if env != nil {
			msg.ValidatorData = env
			c.payload(len(env.Message().Payload))
		}
		return res
	}
}

// topicLocked joins pubsubTopic (registering the validator) if needed.
func (r *Relay) topicLocked(pubsubTopic string) (*topicState, error) {
	if r.closed {
		return nil, ErrClosed
	}
	if ts, ok := r.topics[pubsubTopic]; ok {
		return ts, nil
	}
	c := new(topicCounters)
	if err := r.ps.RegisterTopicValidator(pubsubTopic, r.validator(pubsubTopic, c), pubsub.WithValidatorInline(true)); err != nil {
		return nil, fmt.Errorf("relay: register validator for %q: %w", pubsubTopic, err)
	}
	// Peers' subscriptions to the topic count from before the join, so
	// that none that arrives while gossipsub joins is dropped.
	r.setJoined(pubsubTopic, true)
	t, err := r.ps.Join(pubsubTopic)
	if err != nil {
		r.setJoined(pubsubTopic, false)
		_ = r.ps.UnregisterTopicValidator(pubsubTopic)
		return nil, fmt.Errorf("relay: join %q: %w", pubsubTopic, err)
	}
	if err := t.SetScoreParams(topicScoreParams()); err != nil {
		r.cfg.Logger.Warn("relay: topic score params", "topic", pubsubTopic, "err", err)
	}
	r.traffic.add(pubsubTopic, c)
	ts := &topicState{topic: t, owners: map[Owner]struct{}{}, stats: c}
	r.topics[pubsubTopic] = ts
	return ts, nil
}

// setJoined adds pubsubTopic to r.joined, or removes it. r.mu is held.
func (r *Relay) setJoined(pubsubTopic string, joined bool) {
	next := map[string]struct{}{}
	if old := r.joined.Load(); old != nil {
		maps.Copy(next, *old)
	}
	if joined {
		next[pubsubTopic] = struct{}{}
	} else {
		delete(next, pubsubTopic)
	}
	r.joined.Store(&next)
}

// tracksPeersOf reports whether peers' subscriptions to pubsubTopic are
// kept: the relay has joined it, or Config.PeerTopics allows it.
func (r *Relay) tracksPeersOf(pubsubTopic string) bool {
	if m := r.joined.Load(); m != nil {
		if _, ok := (*m)[pubsubTopic]; ok {
			return true
		}
	}
	return r.cfg.PeerTopics != nil && r.cfg.PeerTopics(pubsubTopic)
}

// peerSubscriptions is gossipsub's subscription filter: it drops the
// subscriptions peers announce to topics the relay does not track (see
// tracksPeersOf), and leaves the relay's own joins alone.
type peerSubscriptions struct{ r *Relay }

func (peerSubscriptions) CanSubscribe(string) bool { return true }

func (f peerSubscriptions) FilterIncomingSubscriptions(_ peer.ID, subs []*pb.RPC_SubOpts) ([]*pb.RPC_SubOpts, error) {
	return pubsub.FilterSubscriptions(subs, f.r.tracksPeersOf), nil
}

// Owner names who needs a subscription: the node's configuration, the
// REST API, the filter or lightpush service, or anything else that makes
// the relay follow a pubsub topic. Owners are compared as strings; a
// service that keeps track of several clients may use one owner per client
// (for example "filter/" followed by the peer id) or count them itself.
//
// A topic is relayed while at least one owner needs it, so one owner
// letting a topic go (a REST client's DELETE) never stops the relaying
// another needs (the shards the node was started with, and so their
// archiving).
type Owner string

// The owners of this module's services.
const (
	OwnerConfig    Owner = "config"    // the shards and topics the node is configured with
	OwnerREST      Owner = "rest"      // REST /relay/v1/subscriptions and /relay/v1/auto/subscriptions
	OwnerFilter    Owner = "filter"    // the filter service, for its subscribers' shards
	OwnerLightpush Owner = "lightpush" // the lightpush service
)

// Subscribe adds owner to the owners of pubsubTopic. When it is the first,
// the relay joins the topic (if it has not yet) and dispatches every
// message relayed on it to the archive and the handlers. Subscribing again
// with an owner the topic already has is a no-op: owners are a set, not a
// count. Errors wrap ErrNoOwner (owner ""), ErrClosed, or come from
// gossipsub.
func (r *Relay) Subscribe(pubsubTopic string, owner Owner) error {
	if owner == "" {
		return ErrNoOwner
	}
	changed, err := r.subscribe(pubsubTopic, owner)
	r.topicsChanged(changed)
	return err
}

// subscribe is Subscribe under the relay's lock; changed says whether the
// topic is newly relayed.
func (r *Relay) subscribe(pubsubTopic string, owner Owner) (changed bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts, err := r.topicLocked(pubsubTopic)
	if err != nil {
		return false, err
	}
	if ts.sub == nil {
		sub, err := ts.topic.Subscribe(pubsub.WithBufferSize(r.cfg.SubscriptionBufferSize))
		if err != nil {
			return false, fmt.Errorf("relay: subscribe %q: %w", pubsubTopic, err)
		}
		ts.sub = sub
		r.wg.Add(1)
		go r.subscriptionLoop(ts, sub)
		changed = true
	}
	ts.owners[owner] = struct{}{}
	return changed, nil
}

// topicsChanged calls Config.OnTopicsChanged when changed.
func (r *Relay) topicsChanged(changed bool) {
	if changed && r.cfg.OnTopicsChanged != nil {
		r.cfg.OnTopicsChanged()
	}
}

// Unsubscribe removes owner from the owners of pubsubTopic; when no owner
// is left, the relay stops relaying the topic. The topic stays joined, with
// its validator, so that Publish on it still works (through gossipsub's
// fanout). Errors wrap ErrNoOwner (owner "") or ErrNotSubscribed (owner is
// not an owner of the topic; nothing changes).
func (r *Relay) Unsubscribe(pubsubTopic string, owner Owner) error {
	if owner == "" {
		return ErrNoOwner
	}
	changed, err := r.unsubscribe(pubsubTopic, owner)
	r.topicsChanged(changed)
	return err
}

// unsubscribe is Unsubscribe under the relay's lock; changed says whether
// the topic is no longer relayed.
func (r *Relay) unsubscribe(pubsubTopic string, owner Owner) (changed bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts, ok := r.topics[pubsubTopic]
	if !ok {
		return false, fmt.Errorf("%w: %s", ErrNotSubscribed, pubsubTopic)
	}
	if _, ok := ts.owners[owner]; !ok {
		return false, fmt.Errorf("%w: %s by %s", ErrNotSubscribed, pubsubTopic, owner)
	}
	delete(ts.owners, owner)
	if len(ts.owners) == 0 {
		ts.sub.Cancel()
		ts.sub = nil
		return true, nil
	}
	return false, nil
}

// Owners returns the owners of pubsubTopic, sorted; nil when the relay does
// not relay it.
func (r *Relay) Owners(pubsubTopic string) []Owner {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts, ok := r.topics[pubsubTopic]
	if !ok || len(ts.owners) == 0 {
		return nil
	}
	out := make([]Owner, 0, len(ts.owners))
	for o := range ts.owners {
		out = append(out, o)
	}
	slices.Sort(out)
	return out
}

func (r *Relay) subscriptionLoop(ts *topicState, sub *pubsub.Subscription) {
	defer r.wg.Done()
	for {
		msg, err := sub.Next(r.ctx)
		if err != nil {
			return // subscription cancelled or relay closed
		}
		env, ok := msg.ValidatorData.(*message.Envelope)
		if !ok {
			r.c.drop(DropInvalid) // cannot happen: the validator always sets it
			continue
		}
		ts.stats.add(env)
		if f := r.cfg.OnDelivered; f != nil {
			f(env)
		}
		r.disp.dispatch(env)
	}
}

// Topics returns the pubsub topics the relay is subscribed to (those with
// at least one owner), in no particular order.
func (r *Relay) Topics() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for name, ts := range r.topics {
		if ts.sub != nil {
			out = append(out, name)
		}
	}
	return out
}

// Publish encodes msg once and publishes it on pubsubTopic,
// joining the topic if needed. The returned envelope holds the encoding and
// a copy of msg whose payload aliases it (message.EncodeShared), so that
// gossipsub's message cache keeps the payload once; msg's meta and proof
// slices are kept and must not be modified afterwards. The deterministic
// hash is computed at most once: during the publish, with the message id,
// when the relay dispatches it to a consumer (see publishLocal), else when
// first asked for (env.Hash). Errors
// wrap ErrInvalid (and the message.Validate error: over 153600 bytes
// encoded, meta over 64 bytes, a content topic empty, white space or over
// 1024 bytes) or ErrClosed, or come from gossipsub. PublishWith writes the payload once,
// where Publish copies msg.Payload into the encoding.
func (r *Relay) Publish(ctx context.Context, pubsubTopic string, msg *message.Message) (*message.Envelope, error) {
	return r.publish(ctx, pubsubTopic, msg, func() (*message.Message, []byte, error) {
		shared, wire := msg.EncodeShared(r.cfg.Counters)
		return shared, wire, nil
	})
}

// PublishWith publishes on pubsubTopic a message of msg's fields (its
// Payload ignored) with a payload of payloadLen bytes that fill writes
// straight into the encoding: fill receives the payload's region of the
// wire buffer (len == cap == payloadLen, zeroed), must write the payload
// there and must not keep the slice. The payload bytes are so written
// once, with no buffer of their own and no copy (message.EncodeReserve).
// An error from fill is returned and nothing is published. Otherwise as
// Publish.
func (r *Relay) PublishWith(ctx context.Context, pubsubTopic string, msg *message.Message, payloadLen int, fill func(payload []byte) error) (*message.Envelope, error) {
	if payloadLen < 0 || payloadLen > message.MaxSize {
		return nil, fmt.Errorf("%w: %w: payload of %d bytes", ErrInvalid, message.ErrTooLarge, payloadLen)
	}
	return r.publish(ctx, pubsubTopic, msg, func() (*message.Message, []byte, error) {
		shared, wire := msg.EncodeReserve(payloadLen, r.cfg.Counters)
		if len(wire) > message.MaxSize {
			return nil, nil, fmt.Errorf("%w: %w: %d bytes", ErrInvalid, message.ErrTooLarge, len(wire))
		}
		return shared, wire, fill(shared.Payload)
	})
}

// publish validates msg (message.Validate), joins the topic, has encode
// make the encoding, and publishes it with its envelope as the validator
// data.
func (r *Relay) publish(ctx context.Context, pubsubTopic string, msg *message.Message, encode func() (*message.Message, []byte, error)) (*message.Envelope, error) {
	if err := message.Validate(msg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	r.mu.Lock()
	ts, err := r.topicLocked(pubsubTopic)
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	shared, wire, err := encode()
	if err != nil {
		return nil, err
	}
	env := message.NewEnvelope(shared, pubsubTopic, wire, r.cfg.Counters)
	if err := r.publishLocal(ctx, ts, env); err != nil {
		return nil, fmt.Errorf("relay: publish on %q: %w", pubsubTopic, err)
	}
	return env, nil
}

// PublishEnvelope publishes env.Wire() on env.PubsubTopic() as it is: no
// encode, and env rides along as the validator data so the local validator
// neither decodes nor hashes again. The envelope must have passed the
// validator's rules (message.Decode, message.Validate and Check). It
// returns the number of relay peers on the topic when it published
// (gossipsub floods a local publish to all of them). A topic the relay has
// not joined and no peer follows is not joined: the message goes nowhere
// and 0 comes back, so that a publish to nobody (which lightpush refuses)
// leaves no topic, validator or traffic figures behind. Errors wrap
// ErrClosed or come from gossipsub.
func (r *Relay) PublishEnvelope(ctx context.Context, env *message.Envelope) (int, error) {
	ts, err := r.joinedOrFollowed(env.PubsubTopic())
	if err != nil || ts == nil {
		return 0, err
	}
	peers := len(ts.topic.ListPeers())
	if err := r.publishLocal(ctx, ts, env); err != nil {
		return 0, fmt.Errorf("relay: publish on %q: %w", env.PubsubTopic(), err)
	}
	return peers, nil
}

// publishLocal has gossipsub publish env.Wire() with env as its validator
// data. When the relay is subscribed to the topic (so dispatches the
// publish) and something takes what it delivers (the archive, a
// handler), each of which may ask the hash, and the wire is at least
// earlyMin bytes, the hash is computed here with the message id in one
// pass (message.Envelope.HashWithID), and gossipsub's message id is that
// one (earlyDecode.markLocal); otherwise, or when the hash was known
// already, the id is computed the usual way.
func (r *Relay) publishLocal(ctx context.Context, ts *topicState, env *message.Envelope) error {
	if len(env.Wire()) >= earlyMin && r.disp.delivers() && r.subscribed(ts) {
		env.HashWithID()
	}
	id, ok := env.MessageID()
	r.early.markLocal(env.PubsubTopic(), env.Wire(), id, ok)
	defer r.early.unmarkLocal(env.Wire())
	return ts.topic.Publish(ctx, env.Wire(), pubsub.WithValidatorData(env))
}

// subscribed reports whether the relay is subscribed to ts's topic: its
// messages, local publishes included, are dispatched.
func (r *Relay) subscribed(ts *topicState) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return ts.sub != nil
}

// joinedOrFollowed returns pubsubTopic's state, joining the topic when a
// peer follows it; nil when the relay has not joined it and no peer
// follows it.
func (r *Relay) joinedOrFollowed(pubsubTopic string) (*topicState, error) {
	r.mu.Lock()
	ts, joined := r.topics[pubsubTopic]
	closed := r.closed
	r.mu.Unlock()
	switch {
	case closed:
		return nil, ErrClosed
	case joined:
		return ts, nil
	case len(r.ps.ListPeers(pubsubTopic)) == 0:
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.topicLocked(pubsubTopic)
}

// inject runs data through the topic validator and the dispatcher exactly
// as if gossipsub had received it on pubsubTopic, without the network: the
// micro benchmark's entry point, reached through internal/harness.Inject.
// data is handed over (the envelope aliases it). It returns the envelope,
// or an error wrapping ErrInvalid when the validator would Reject or
// Ignore it.
func (r *Relay) inject(pubsubTopic string, data []byte) (*message.Envelope, error) {
	env, res := r.validateBytes(pubsubTopic, data)
	if res != pubsub.ValidationAccept {
		return nil, fmt.Errorf("%w: validator result %v", ErrInvalid, res)
	}
	r.disp.dispatch(env)
	return env, nil
}

func init() {
	harness.Inject = func(relay any, pubsubTopic string, data []byte) error {
		_, err := relay.(*Relay).inject(pubsubTopic, data)
		return err
	}
}

// AddHandler registers fn under name; it receives every relayed envelope on
// its own goroutine behind a queue of Config.HandlerQueueSize envelopes.
// The returned function removes it after it has run what is queued.
func (r *Relay) AddHandler(name string, fn Handler) (remove func()) {
	return r.disp.add(name, fn)
}

// Stats returns a snapshot of the relay's counters.
func (r *Relay) Stats() Stats {
	s := Stats{
		MsgIDHashes:        r.c.msgIDHashes.Load(),
		Delivered:          r.c.delivered.Load(),
		BadPeerDisconnects: r.c.badPeers.Load(),
		Drops:              make(map[DropReason]uint64, numDropReasons),
		Topics:             map[string]TopicStats{},
		Pubsub:             r.pubsub.snapshot(),
	}
	for i := range r.c.drops {
		s.Drops[DropReason(i)] = r.c.drops[i].Load()
	}
	r.mu.Lock()
	for name, ts := range r.topics {
		s.Topics[name] = ts.stats.snapshot()
	}
	r.mu.Unlock()
	return s
}

// Close stops the subscriptions, dispatches what their buffers still hold,
// runs what the handlers have queued, and stops gossipsub. The archive is
// not closed: its owner closes it after. If the buffers have not drained
// after drainTimeout (the archive pushing back that long), Close logs a
// warning and abandons what is left in them.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	for _, ts := range r.topics {
		if ts.sub != nil {
			ts.sub.Cancel() // the loop reads on until the channel is closed and empty
		}
	}
	r.mu.Unlock()
	drained := make(chan struct{})
	go func() { r.wg.Wait(); close(drained) }()
	t := time.NewTimer(drainTimeout)
	select {
	case <-drained:
	case <-t.C:
		r.cfg.Logger.Warn("relay: subscription buffers not drained at close; abandoning them", "after", drainTimeout)
	}
	t.Stop()
	r.cancel()
	<-drained
	r.disp.close()
	return nil
}

// drainTimeout bounds how long Close waits for subscription buffers.
const drainTimeout = 10 * time.Second
