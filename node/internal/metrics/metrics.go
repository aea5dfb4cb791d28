// Package metrics is the node's Prometheus registry: its own figures and
// nwaku v0.38.1's, with nwaku's names, types and labels where nwaku has
// them, so that dashboards built for nwaku read a courier node.
//
// Most figures are read at scrape time from snapshots of the node's parts
// (Sources), so the message path pays only for its own atomic counters; a
// few are observed as they happen (Metrics.ObserveRelay and the other
// Observe methods, NodeError), as nwaku observes them. The collectors
// hold no reference to the node: the node hands them the functions that
// take the snapshots.
package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node/internal/peers"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/rest"
	"github.com/couriernet/courier/store"
	"github.com/couriernet/courier/storesync"
)

// Sources are the snapshots the collectors read at each scrape. A nil
// function is a part the node does not run: its figures are left out.
type Sources struct {
	// Version is the node's version string (waku_version).
	Version  string
	Counters *message.Counters
	Relay    func() relay.Stats
	// RESTCache is the REST API's relay message cache.
	RESTCache func() rest.Stats
	Store     func() store.ServerStats
	Archive   func() archive.Stats
	// ArchiveRefused counts the relayed messages refused before the
	// archive for a timestamp too old or in the future (nwaku's
	// waku_archive_errors invalid_message_too_old and
	// invalid_message_future_timestamp).
	ArchiveRefused func() (tooOld, future uint64)
	StoreSync      func() storesync.Stats
	Filter         func() filter.Stats
	Lightpush      func() lightpush.Stats
	Peers          func() peers.Stats
	Discovery      func() peers.DiscoveryStats
	// Network reads the host's connections (ReadNetwork).
	Network func() Network
}

// Metrics is the node's registry with its collectors and observers.
type Metrics struct {
	reg *prometheus.Registry
	src atomic.Pointer[Sources]
	observed
}

// New returns the registry, with the Go runtime and process collectors,
// collecting nothing of the node until SetSources. It is made before the
// host, so that go-libp2p registers its metrics there too
// (libp2p.PrometheusRegisterer).
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), observed: newObserved()}
	m.reg.MustRegister(collector{&m.src}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(m.observed.collectors()...)
	return m
}

// SetSources gives the collectors the node's parts to read.
func (m *Metrics) SetSources(s Sources) { m.src.Store(&s) }

// Registry returns the registry.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// collector exports the figures of Sources at scrape time.
type collector struct{ src *atomic.Pointer[Sources] }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, group := range [][]*prometheus.Desc{nodeDescs, nwakuDescs, syncDescs, lightDescs, discoveryDescs} {
		for _, d := range group {
			ch <- d
		}
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Load()
	if s == nil {
		return // before SetSources
	}
	collectNode(ch, s)
	collectNwaku(ch, s)
	collectStoreSync(ch, s)
	collectLight(ch, s)
	collectDiscovery(ch, s)
}

// counter and gauge send one constant sample.
func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}
