package node

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/lightpush"
)

// Filter and lightpush metrics, with nwaku's names
// (waku_filter_v2/protocol_metrics.nim, waku_lightpush/protocol_metrics.nim,
// waku_lightpush_legacy/protocol_metrics.nim) and courier's own for the
// push path.
var (
	descFilterRequests = prometheus.NewDesc("waku_filter_requests_total", "Filter subscribe requests received, by type.", []string{"type"}, nil)
	descFilterSubs     = prometheus.NewDesc("waku_filter_subscriptions", "Subscribed filter clients.", nil, nil)
	descFilterErrors   = prometheus.NewDesc("waku_filter_errors_total", "Filter protocol errors, by type.", []string{"type"}, nil)
	descFilterPushes   = prometheus.NewDesc("courier_filter_pushes_total", "Filter push frames, by result: written, dropped on a full subscriber queue, failed.", []string{"result"}, nil)
	descFilterDupes    = prometheus.NewDesc("courier_filter_duplicates_total", "Matching messages not pushed again (same message hash within 2 min).", nil, nil)
	descLightpushV3    = prometheus.NewDesc("waku_lightpush_v3_messages_total", "Lightpush v3 requests answered.", []string{"type"}, nil)
	descLightpushV3Err = prometheus.NewDesc("waku_lightpush_v3_errors_total", "Lightpush v3 answers other than 200, by status code.", []string{"type"}, nil)
	descLightpushV2    = prometheus.NewDesc("waku_lightpush_messages_total", "Legacy lightpush (v2) requests answered.", []string{"type"}, nil)
	descLightpushV2Err = prometheus.NewDesc("waku_lightpush_errors_total", "Legacy lightpush refusals, by the v3 status code of the cause.", []string{"type"}, nil)
	descLightpushPub   = prometheus.NewDesc("courier_lightpush_published_total", "Lightpush messages published, by how: as_arrived (the request's bytes) or reencoded (zero timestamp filled).", []string{"how"}, nil)
)

type lightCollector struct{ n *Node }

func (c lightCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descFilterRequests, descFilterSubs, descFilterErrors, descFilterPushes, descFilterDupes,
		descLightpushV3, descLightpushV3Err, descLightpushV2, descLightpushV2Err, descLightpushPub} {
		ch <- d
	}
}

func (c lightCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	if f := c.n.light.filter; f != nil {
		s := f.Stats()
		for typ, v := range s.Requests {
			counter(descFilterRequests, v, typ)
		}
		ch <- prometheus.MustNewConstMetric(descFilterSubs, prometheus.GaugeValue, float64(s.Subscribers))
		counter(descFilterErrors, s.BadRequests, "decode_rpc_failure")
		counter(descFilterErrors, s.Failed, "push_failure")
		counter(descFilterErrors, s.RateLimited, "request_limit_reached_failure")
		counter(descFilterPushes, s.Pushed, "written")
		counter(descFilterPushes, s.Dropped, "dropped")
		counter(descFilterPushes, s.Failed, "failed")
		counter(descFilterDupes, s.Duplicates)
		serviceBytes(ch, s.BytesIn, filter.SubscribeProtocolID, "in")
		serviceBytes(ch, s.BytesOut, filter.PushProtocolID, "out")
	}
	if l := c.n.light.lightpush; l != nil {
		s := l.Stats()
		for version, descs := range map[string][2]*prometheus.Desc{"v3": {descLightpushV3, descLightpushV3Err}, "v2": {descLightpushV2, descLightpushV2Err}} {
			var total uint64
			for code, v := range s.Answers[version] {
				total += v
				if code != 200 {
					counter(descs[1], v, strconv.FormatUint(uint64(code), 10))
				}
			}
			counter(descs[0], total, "PushRequest")
		}
		counter(descLightpushPub, s.PublishedAsArrived, "as_arrived")
		counter(descLightpushPub, s.Reencoded, "reencoded")
		serviceBytes(ch, s.BytesIn["v3"], lightpush.ProtocolID, "in")
		serviceBytes(ch, s.BytesIn["v2"], lightpush.LegacyProtocolID, "in")
	}
}
