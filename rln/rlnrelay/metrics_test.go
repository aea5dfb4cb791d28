package rlnrelay

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/couriernet/courier/message"
)

// TestCollector: the counts come out under nwaku's metric names (as
// nim-metrics serves them, _total appended) and labels, and courier's
// own metric has every reason.
func TestCollector(t *testing.T) {
	v, clock := newTestValidator(t, nil)
	now := clock.now()
	p := newTestPublisher(t, filepath.Join(t.TempDir(), "ids"), &idProver{}, 3, 600, func() time.Time { return now })
	if _, _, err := p.Attach(&message.Message{Payload: []byte("x"), ContentTopic: goldenTopic, Timestamp: now.UnixNano()}); err != nil {
		t.Fatal(err)
	}
	noProof := *goldenMsg(t, "b01")
	noProof.RateLimitProof = nil
	v.ValidateMessage(relayTopic, goldenMsg(t, "a0"))
	v.ValidateMessage(relayTopic, goldenMsg(t, "a0-spam"))
	v.ValidateMessage("/waku/2/rs/0/1", goldenMsg(t, "b00"))
	v.ValidateMessage(relayTopic, &noProof)
	v.ValidateMessage(relayTopic, goldenMsg(t, "other-id"))
	clock.set(now.Add(time.Minute))
	v.ValidateMessage(relayTopic, goldenMsg(t, "b02"))
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(Collector(v, p)); err != nil {
		t.Fatal(err)
	}
	const want = `
# HELP waku_rln_invalid_messages_total_total number of invalid messages detected
# TYPE waku_rln_invalid_messages_total_total counter
waku_rln_invalid_messages_total_total{type="invalid_proof"} 0
waku_rln_invalid_messages_total_total{type="invalid_root"} 0
waku_rln_invalid_messages_total_total{type="invalid_timestamp"} 1
waku_rln_invalid_messages_total_total{type="timestamp_mismatch"} 1
# HELP waku_rln_messages_total_total number of messages seen by the rln relay
# TYPE waku_rln_messages_total_total counter
waku_rln_messages_total_total 6
# HELP waku_rln_proof_verification_total_total number of times the rln proofs are verified
# TYPE waku_rln_proof_verification_total_total counter
waku_rln_proof_verification_total_total 4
# HELP waku_rln_remaining_proofs_per_epoch number of proofs remaining to be generated for the current epoch
# TYPE waku_rln_remaining_proofs_per_epoch gauge
waku_rln_remaining_proofs_per_epoch 2
# HELP waku_rln_spam_messages_total_total number of spam messages detected
# TYPE waku_rln_spam_messages_total_total counter
waku_rln_spam_messages_total_total 1
# HELP waku_rln_total_generated_proofs total number of proofs generated since the node started
# TYPE waku_rln_total_generated_proofs gauge
waku_rln_total_generated_proofs 1
# HELP waku_rln_valid_messages_total_total number of valid messages with their roots tracked
# TYPE waku_rln_valid_messages_total_total counter
waku_rln_valid_messages_total_total{shard="/waku/2/rs/0/0"} 1
waku_rln_valid_messages_total_total{shard="/waku/2/rs/0/1"} 1
`
	compareMetrics(t, reg, want, "waku_rln_invalid_messages_total_total", "waku_rln_messages_total_total", "waku_rln_proof_verification_total_total",
		"waku_rln_remaining_proofs_per_epoch", "waku_rln_spam_messages_total_total", "waku_rln_total_generated_proofs",
		"waku_rln_valid_messages_total_total")
	const log = `
# HELP courier_rln_messages_total RLN relay validation results, by gossipsub result and reason.
# TYPE courier_rln_messages_total counter
courier_rln_messages_total{reason="duplicate",result="reject"} 0
courier_rln_messages_total{reason="invalid_proof",result="reject"} 0
courier_rln_messages_total{reason="invalid_root",result="reject"} 0
courier_rln_messages_total{reason="invalid_timestamp",result="reject"} 1
courier_rln_messages_total{reason="malformed_proof",result="reject"} 0
courier_rln_messages_total{reason="no_proof",result="reject"} 1
courier_rln_messages_total{reason="non_canonical",result="ignore"} 0
courier_rln_messages_total{reason="nullifier_log_full",result="ignore"} 0
courier_rln_messages_total{reason="rln_identifier",result="ignore"} 1
courier_rln_messages_total{reason="spam",result="reject"} 1
courier_rln_messages_total{reason="timestamp_mismatch",result="reject"} 0
courier_rln_messages_total{reason="valid",result="accept"} 2
# HELP courier_rln_nullifier_log_entries Nullifiers in the RLN nullifier log.
# TYPE courier_rln_nullifier_log_entries gauge
courier_rln_nullifier_log_entries 2
`
	reg = prometheus.NewPedanticRegistry()
	reg.MustRegister(Collector(v, nil))
	compareMetrics(t, reg, log, "courier_rln_messages_total", "courier_rln_nullifier_log_entries")
}

// compareMetrics gathers reg and compares the text exposition of the
// families named, in the order given, with want.
func compareMetrics(t *testing.T, reg *prometheus.Registry, want string, names ...string) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	got.WriteString("\n")
	for _, name := range names {
		found := false
		for _, f := range families {
			if f.GetName() == name {
				if _, err := expfmt.MetricFamilyToText(&got, f); err != nil {
					t.Fatal(err)
				}
				found = true
			}
		}
		if !found {
			t.Errorf("no metric %s", name)
		}
	}
	if got.String() != want {
		t.Fatalf("metrics:%s\nwant:%s", got.String(), want)
	}
}
