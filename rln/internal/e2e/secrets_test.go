package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/rln/internal/chaintest"
)

// TestRLNHealthHidesEndpointSecrets: a node following the contract over
// an endpoint whose address holds an API key (in its path, query,
// fragment or user info) shows none of it in its log or in /health's
// "Rln Relay" NOT_READY description once the endpoint stops answering.
func TestRLNHealthHidesEndpointSecrets(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds courier and runs node processes over a served chain")
	}
	chaintest.Require(t)
	bin := buildCourier(t)
	chain := chaintest.NewServed(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	for name, address := range map[string]string{
		"path key":      "http://%s/v3/SECRETPATHKEY",
		"query key":     "http://%s/?apikey=SECRETQUERYKEY",
		"fragment":      "http://%s#SECRETFRAGMENT",
		"user:password": "http://SECRETUSER:SECRETPASS@%s/",
	} {
		t.Run(name, func(t *testing.T) {
			srv := chain.Serve(t)
			endpoint := fmt.Sprintf(address, strings.TrimPrefix(srv.URL(), "http://"))
			n := startNode(t, bin, name, "node", "--listen-address=127.0.0.1", "--tcp-port=0", "--rest", "--rest-address=127.0.0.1", "--rest-port=0",
				"--metrics-server", "--metrics-server-address=127.0.0.1", "--metrics-server-port=0", "--data-dir="+t.TempDir(),
				fmt.Sprintf("--cluster-id=%d", cluster), "--shard=0", "--rln-relay", "--rln-relay-dynamic",
				"--rln-relay-eth-client-address="+endpoint, "--rln-relay-eth-contract-address="+d.Membership.Hex(),
				"--rln-relay-chain-id="+chaintest.ChainID.String(), "--log-level=DEBUG")
			waitFor(t, 30*time.Second, "Rln Relay READY", func() bool { return n.rlnHealth(t) == "READY" })
			srv.Stop()
			var body string
			waitFor(t, 60*time.Second, "Rln Relay NOT_READY", func() bool {
				_, body = n.get(t, "/health")
				return n.rlnHealth(t) == "NOT_READY"
			})
			_, body = n.get(t, "/health")
			if !strings.Contains(body, "Ethereum RPC failing") {
				t.Fatalf("/health does not say why Rln Relay is NOT_READY: %s", body)
			}
			if strings.Contains(body, "SECRET") {
				t.Errorf("/health shows the endpoint's secret: %s", body)
			}
			n.stop(t)
			if out := n.out.String(); strings.Contains(out, "SECRET") {
				t.Errorf("the log shows the endpoint's secret:\n%s", grepLines(out, "SECRET"))
			}
		})
	}
}
