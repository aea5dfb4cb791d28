package metrics

import (
	"testing"
	"time"

	"github.com/couriernet/courier/filter"
)

// TestFilterObserversDoNotAllocate: once a request type has its series,
// the filter's duration hooks allocate nothing per call.
func TestFilterObserversDoNotAllocate(t *testing.T) {
	m := newObserved()
	var cfg filter.Config
	m.ObserveFilter(&cfg)
	cfg.OnRequest(filter.Subscribe, time.Millisecond)
	if a := testing.AllocsPerRun(100, func() {
		cfg.OnRequest(filter.Subscribe, 2*time.Millisecond)
		cfg.OnMessage(3 * time.Millisecond)
	}); a != 0 {
		t.Errorf("%v allocations per observation", a)
	}
	cfg.OnRequest(filter.RequestType(9), time.Millisecond) // unknown: ignored
}
