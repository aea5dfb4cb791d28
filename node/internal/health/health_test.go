package health

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/protocol"

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

// TestStoreArchiveFailing: a mounted Store is READY (nwaku's rule) unless
// Node.ArchiveFailing gives a reason: then NOT_READY with it as desc. The
// Store Client, ready because Store is mounted, and the connection status
// are not affected; an unmounted Store stays NOT_MOUNTED.
func TestStoreArchiveFailing(t *testing.T) {
	var m Monitor
	m.Mount(Store)
	m.Mount(StoreClient)
	none := func([]protocol.ID) int { return 0 }
	find := func(h rest.Health, name string) rest.ProtocolHealth {
		for _, p := range h.ProtocolsHealth {
			if p.Protocol == name {
				return p
			}
		}
		t.Fatalf("no %s entry", name)
		return rest.ProtocolHealth{}
	}
	ok := m.Report(Node{State: state.Ready, Capable: none})
	failing := m.Report(Node{State: state.Ready, Capable: none, ArchiveFailing: "Archive writes failing: disk full"})
	if p := find(ok, Store); p.Health != state.Ready || p.Desc != "" {
		t.Errorf("Store without failures: %+v", p)
	}
	if p := find(failing, Store); p.Health != state.NotReady || p.Desc != "Archive writes failing: disk full" {
		t.Errorf("Store while failing: %+v", p)
	}
	if p := find(failing, StoreClient); p.Health != state.Ready || failing.ConnectionStatus != ok.ConnectionStatus {
		t.Errorf("Store Client %+v, connection %s (%s without failures)", p, failing.ConnectionStatus, ok.ConnectionStatus)
	}
	var bare Monitor
	if p := find(bare.Report(Node{State: state.Ready, Capable: none, ArchiveFailing: "x"}), Store); p.Health != state.NotMounted {
		t.Errorf("unmounted Store while failing: %+v", p)
	}
}
