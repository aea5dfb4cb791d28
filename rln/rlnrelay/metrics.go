package rlnrelay

import (
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/prometheus/client_golang/prometheus"
)

// nwaku v0.38.1's RLN metrics (waku_rln_relay/protocol_metrics.nim) under
// the names nwaku serves them: nim-metrics appends _total to a counter's
// declared name, so nwaku's counter waku_rln_messages_total is scraped as
// waku_rln_messages_total_total, and its dashboards query that name.
var (
	descMessages     = prometheus.NewDesc("waku_rln_messages_total_total", "number of messages seen by the rln relay", nil, nil)
	descSpam         = prometheus.NewDesc("waku_rln_spam_messages_total_total", "number of spam messages detected", nil, nil)
	descInvalid      = prometheus.NewDesc("waku_rln_invalid_messages_total_total", "number of invalid messages detected", []string{"type"}, nil)
	descValid        = prometheus.NewDesc("waku_rln_valid_messages_total_total", "number of valid messages with their roots tracked", []string{"shard"}, nil)
	descVerified     = prometheus.NewDesc("waku_rln_proof_verification_total_total", "number of times the rln proofs are verified", nil, nil)
	descVerifyTime   = prometheus.NewDesc("waku_rln_proof_verification_duration_seconds", "time taken to verify a proof", nil, nil)
	descGenerated    = prometheus.NewDesc("waku_rln_total_generated_proofs", "total number of proofs generated since the node started", nil, nil)
	descRemaining    = prometheus.NewDesc("waku_rln_remaining_proofs_per_epoch", "number of proofs remaining to be generated for the current epoch", nil, nil)
	descGenerateTime = prometheus.NewDesc("waku_rln_proof_generation_duration_seconds", "time taken to generate a proof", nil, nil)
	// courier's own: every message by result and reason, and the log.
	descResults    = prometheus.NewDesc("courier_rln_messages_total", "RLN relay validation results, by gossipsub result and reason.", []string{"result", "reason"}, nil)
	descLogEntries = prometheus.NewDesc("courier_rln_nullifier_log_entries", "Nullifiers in the RLN nullifier log.", nil, nil)
	descLogEpochs  = prometheus.NewDesc("courier_rln_nullifier_log_epochs", "Epochs in the RLN nullifier log.", nil, nil)
)

// Collector exposes v's counts (and, when p is not nil, p's) as nwaku's
// waku_rln_* metrics and courier's courier_rln_* ones, read at scrape
// time. nwaku's counters carry the names nwaku serves, its declared name
// with _total appended by nim-metrics (waku_rln_messages_total_total,
// waku_rln_invalid_messages_total_total{type}, ...), which its dashboards
// query; its gauges keep their names. nwaku's counts map from Stats as its fields say; the reasons nwaku
// does not count (ReasonMalformed, which it Rejects before counting, and
// the Ignored ones, which it Accepts) appear only in
// courier_rln_messages_total. waku_rln_number_registered_memberships
// comes from the membership, not from here.
func Collector(v *Validator, p *Publisher) prometheus.Collector { return collector{v, p} }

type collector struct {
	v *Validator
	p *Publisher
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMessages, descSpam, descInvalid, descValid, descVerified, descVerifyTime,
		descResults, descLogEntries, descLogEpochs} {
		ch <- d
	}
	if c.p != nil {
		ch <- descGenerated
		ch <- descRemaining
		ch <- descGenerateTime
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	s := c.v.Stats()
	metric(descMessages, prometheus.CounterValue, float64(s.Messages))
	metric(descSpam, prometheus.CounterValue, float64(s.Reasons[ReasonDuplicate]+s.Reasons[ReasonSpam]))
	invalid := map[string]uint64{}
	for _, r := range Reasons() {
		if t := r.nwakuInvalidType(); t != "" {
			invalid[t] += s.Reasons[r]
		}
	}
	for t, n := range invalid {
		metric(descInvalid, prometheus.CounterValue, float64(n), t)
	}
	for topic, n := range s.ValidByTopic {
		metric(descValid, prometheus.CounterValue, float64(n), topic)
	}
	metric(descVerified, prometheus.CounterValue, float64(s.Verifications))
	metric(descVerifyTime, prometheus.GaugeValue, s.LastVerification.Seconds())
	for _, r := range Reasons() {
		metric(descResults, prometheus.CounterValue, float64(s.Reasons[r]), resultName(r), r.String())
	}
	metric(descLogEntries, prometheus.GaugeValue, float64(s.LogEntries))
	metric(descLogEpochs, prometheus.GaugeValue, float64(s.LogEpochs))
	if c.p != nil {
		ps := c.p.Stats()
		metric(descGenerated, prometheus.GaugeValue, float64(ps.Generated))
		metric(descRemaining, prometheus.GaugeValue, float64(ps.Remaining))
		metric(descGenerateTime, prometheus.GaugeValue, ps.LastProof.Seconds())
	}
}

func resultName(r Reason) string {
	switch r.Result() {
	case pubsub.ValidationAccept:
		return "accept"
	case pubsub.ValidationIgnore:
		return "ignore"
	}
	return "reject"
}
