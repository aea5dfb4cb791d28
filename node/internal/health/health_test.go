package health

import (
	"testing"

	"github.com/couriernet/courier/node/state"
	"github.com/couriernet/courier/rest"
)

// TestConnectionStatus is nwaku's table of connection states
// (tests/node/test_wakunode_health_monitor.nim, suite "Health Monitor -
// health state calculation"), D_low 4 and HealthyThreshold 2.
func TestConnectionStatus(t *testing.T) {
	ready := func(names ...string) []rest.ProtocolHealth {
		var out []rest.ProtocolHealth
		for _, n := range names {
			out = append(out, rest.ProtocolHealth{Protocol: n, Health: state.Ready})
		}
		return out
	}
	notReady := func(name string) rest.ProtocolHealth {
		return rest.ProtocolHealth{Protocol: name, Health: state.NotReady, Desc: "mock"}
	}
	cases := []struct {
		name     string
		report   []rest.ProtocolHealth
		strength map[string]int
		want     state.ConnectionStatus
	}{
		{"Disconnected, zero peers", []rest.ProtocolHealth{notReady(Relay), notReady(StoreClient), notReady(FilterClient), notReady(LightpushClient)},
			nil, state.StatusDisconnected},
		{"PartiallyConnected, weak relay", ready(Relay), map[string]int{Relay: 3}, state.StatusPartiallyConnected},
		{"Connected, robust relay", ready(Relay), map[string]int{Relay: 4}, state.StatusConnected},
		{"Connected, robust edge", append([]rest.ProtocolHealth{{Protocol: Relay, Health: state.NotMounted}}, ready(LightpushClient, FilterClient, StoreClient)...),
			map[string]int{LightpushClient: 2, FilterClient: 2, StoreClient: 2}, state.StatusConnected},
		{"Disconnected, edge missing store", append(ready(LightpushClient, FilterClient), notReady(StoreClient)),
			map[string]int{LightpushClient: 2, FilterClient: 2}, state.StatusDisconnected},
		{"PartiallyConnected, edge meets minimum failover requirement", ready(LightpushClient, FilterClient, StoreClient),
			map[string]int{LightpushClient: 1, FilterClient: 1, StoreClient: 1}, state.StatusPartiallyConnected},
		{"Connected, robust relay ignores store server", ready(Relay, Store), map[string]int{Relay: 4}, state.StatusConnected},
		{"Connected, robust relay ignores store client", append(ready(Relay, Store), notReady(StoreClient)),
			map[string]int{Relay: 4}, state.StatusConnected},
	}
	for _, tc := range cases {
		if got := connectionStatus(tc.report, tc.strength); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
