package node

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/couriernet/courier/relay"
)

// TestRESTUnsubscribeKeepsConfiguredShard: on a node relaying
// /waku/2/rs/0/0 by configuration, a REST client's POST then DELETE of a
// content topic on that shard leaves the shard relayed (and so archived).
func TestRESTUnsubscribeKeepsConfiguredShard(t *testing.T) {
	n, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, ClusterID: 0, Shards: []uint16{0},
		NumShardsInNetwork: 1, REST: true, RESTAddress: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer n.Stop(ctx)
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	const shard0 = "/waku/2/rs/0/0"
	base := "http://" + n.HTTPAddrs()[0]
	steps := []struct{ method, path, body string }{
		{http.MethodPost, "/relay/v1/auto/subscriptions", `["/app/1/chat/proto"]`},
		{http.MethodDelete, "/relay/v1/auto/subscriptions", `["/app/1/chat/proto"]`},
		{http.MethodPost, "/relay/v1/subscriptions", `["` + shard0 + `"]`},
		{http.MethodDelete, "/relay/v1/subscriptions", `["` + shard0 + `"]`},
	}
	for _, st := range steps {
		req, err := http.NewRequestWithContext(ctx, st.method, base+st.path, strings.NewReader(st.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %s", st.method, st.path, resp.Status)
		}
		if got := n.Relay().Topics(); !slices.Contains(got, shard0) {
			t.Fatalf("after %s %s %s the relay follows %v, not the configured %s", st.method, st.path, st.body, got, shard0)
		}
	}
	if got, want := n.Relay().Owners(shard0), []relay.Owner{relay.OwnerConfig}; !slices.Equal(got, want) {
		t.Fatalf("owners of %s = %v, want %v", shard0, got, want)
	}
}
