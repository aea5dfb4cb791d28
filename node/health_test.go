package node

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/node/internal/health"
	"github.com/couriernet/courier/rest"
)

// getHealth answers GET /health through the REST handler over n.
func getHealth(t *testing.T, n *Node) string {
	t.Helper()
	srv, err := rest.New(rest.Config{Node: n.restAPI()})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /health: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	return rec.Body.String()
}

func wantGolden(t *testing.T, got, file string) {
	t.Helper()
	want, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
		t.Errorf("GET /health:\n got %s\nwant %s (testdata/%s)", got, want, file)
	}
}

// TestHealthGolden follows a node through its life and compares GET
// /health with golden answers written from nwaku v0.38.1, not from this
// code: the shape and field order from
// waku/rest_api/endpoint/health/types.nim (writeValue), the protocol names
// and order from waku/common/waku_protocol.nim and
// node_health_monitor.nim getAllProtocolHealthInfo, every desc text and
// rule from waku/node/health_monitor/node_health_monitor.nim, the
// INITIALIZING and SHUTTING_DOWN answers from its getNodeHealthReport, and
// "Relay NOT_READY, No connected peers" with 13 entries from
// tests/wakunode_rest/test_rest_health.nim. The lightpush, legacy
// lightpush and filter clients are always mounted, as
// waku/factory/node_factory.nim mounts them, so they report NOT_READY
// until a service peer is connected.
func TestHealthGolden(t *testing.T) {
	cfg := Config{ListenAddress: "127.0.0.1", Relay: true, Store: true, DataDir: t.TempDir()}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop(context.Background())
	wantGolden(t, getHealth(t, a), "health_initializing.json")

	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	wantGolden(t, getHealth(t, a), "health_alone.json")

	a.health.Mount(health.Lightpush, "/vac/waku/lightpush/3.0.0")
	a.health.Mount(health.LegacyLightpush, "/vac/waku/lightpush/2.0.0-beta1")
	a.health.Mount(health.Filter, "/vac/waku/filter-subscribe/2.0.0-beta1")
	a.health.Mount(health.PeerExchange, "/vac/waku/peer-exchange/2.0.0-alpha1")
	a.health.Mount(health.StoreClient, "/vac/waku/store-query/3.0.0")
	wantGolden(t, getHealth(t, a), "health_mounted_alone.json")

	b, err := New(Config{ListenAddress: "127.0.0.1", Relay: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop(ctx)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Host().Connect(ctx, peer.AddrInfo{ID: b.Host().ID(), Addrs: b.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(a.Relay().TopicPeers("")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no relay peer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantGolden(t, getHealth(t, a), "health_one_relay_peer.json")

	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	wantGolden(t, getHealth(t, a), "health_shutting_down.json")
}

// TestInfoAnnouncedAddresses checks that a node listening on 0.0.0.0 lists
// one address per transport in /debug/v1/info, not one per interface.
func TestInfoAnnouncedAddresses(t *testing.T) {
	n, err := New(Config{ListenAddress: "0.0.0.0", Relay: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(context.Background())
	info := n.restAPI().Info()
	if len(info.ListenAddresses) != 1 || strings.Contains(info.ListenAddresses[0], "/0.0.0.0/") ||
		!strings.HasSuffix(info.ListenAddresses[0], "/p2p/"+n.Host().ID().String()) {
		t.Errorf("listenAddresses %q, want one announced TCP address", info.ListenAddresses)
	}
}
