package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node/internal/rlnnode"
	"github.com/couriernet/courier/node/state"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/rln"
)

// buildRLN makes RLN relay's verifier, validator and, with a keystore,
// prover (node/internal/rlnnode), and gives the relay the validator. A
// prover without its circuit files is a configuration error.
func (n *Node) buildRLN(rc *relay.Config) error {
	if !n.cfg.RLNRelay.Enabled {
		return nil
	}
	r, err := rlnnode.New(n.cfg.rln)
	if errors.Is(err, rln.ErrCircuitFiles) {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err != nil {
		return fmt.Errorf("node: %w", err) // rlnnode's errors begin with "rln-relay: "
	}
	n.rln = r
	// The relay's own timestamp rule (MaxTimestampSkew) stays off, so that
	// RLN's clock gap check, a Reject, is not pre-empted by an Ignore.
	rc.MaxTimestampSkew = 0
	rc.RLN = r.Validator()
	return nil
}

// startRLN connects RLN relay to the chain and reads the keystore, then
// registers its metrics; the relay subscribes after it, so every message
// is checked against the membership's roots.
func (n *Node) startRLN(ctx context.Context) error {
	if n.rln == nil {
		return nil
	}
	if err := n.rln.Start(ctx); err != nil {
		return err
	}
	return n.metrics.Registry().Register(n.rln.Collector())
}

// rlnHealth is the "Rln Relay" entry of /health; nil without RLN relay.
func (n *Node) rlnHealth() func() (state.HealthStatus, string) {
	if n.rln == nil {
		return nil
	}
	return n.rln.Health
}

// publishRLN publishes msg with RLN relay on, as nwaku's REST handlers do
// (rest_api/endpoint/relay/handlers.nim) and for Node.Publish: the message
// gets a proof of the node's membership when it has none
// (rlnnode.ProofError otherwise), or passes the validator
// (rlnnode.ErrInvalid otherwise), and is published with its proof in the
// envelope, verified once or made here. msg carries its payload and
// timestamp and is handed over.
func (n *Node) publishRLN(ctx context.Context, topic string, msg *message.Message) (*message.Envelope, error) {
	if err := message.Validate(msg); err != nil {
		return nil, fmt.Errorf("%w: %w", relay.ErrInvalid, err)
	}
	out, proof, err := n.rln.Prepare(topic, msg)
	if err != nil {
		return nil, err
	}
	shared, wire := out.EncodeShared(n.cfg.Counters)
	if len(wire) > message.MaxSize {
		return nil, fmt.Errorf("%w: %w: %d bytes with its RLN proof, the limit is %d", relay.ErrInvalid, message.ErrTooLarge, len(wire), message.MaxSize)
	}
	env := message.NewEnvelopeWithProof(shared, topic, wire, n.cfg.Counters, proof)
	if _, err := n.relay.PublishEnvelope(ctx, env); err != nil {
		n.metrics.NodeError("publish_failure")
		return nil, err
	}
	return env, nil
}

// publishWithRLN is PublishWith with RLN relay on: the proof covers the
// payload, so it is written out first.
func (n *Node) publishWithRLN(ctx context.Context, topic string, msg *message.Message, size int, fill func([]byte) error) (*message.Envelope, error) {
	if size < 0 || size > message.MaxSize {
		return nil, fmt.Errorf("%w: %w: payload of %d bytes", relay.ErrInvalid, message.ErrTooLarge, size)
	}
	payload := make([]byte, size)
	if err := fill(payload); err != nil {
		return nil, err
	}
	m := *msg
	m.Payload = payload
	return n.publishRLN(ctx, topic, &m)
}
