package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// testE2ELightClients runs the two terminals of a light client: `courier
// subscribe --filter A` and `courier publish --lightpush A`, with A serving
// filter and lightpush and relaying to B. The subscriber prints what the
// publisher sent, and the hash publish printed is the message's.
func testE2ELightClients(t *testing.T, bin string) {
	a := startNode(t, bin, "A", "--filter", "--lightpush")
	startNode(t, bin, "B", "--staticnode", a.addr)
	const ct = "/courier/1/e2e-light/proto"
	sub := startProc(t, "subscribe-filter", bin, "subscribe", "--filter", a.addr,
		"--pubsub-topic", e2eTopic, "--content-topic", ct, "--count", "2")
	waitFor(t, 15*time.Second, "the filter subscription on A", func() (bool, string) {
		code, body, err := httpDo(http.MethodGet, a.rest+"/admin/v1/filter/subscriptions", nil)
		return err == nil && code == http.StatusOK && strings.Contains(string(body), ct), fmt.Sprintf("%d %s %v", code, body, err)
	})
	waitFor(t, 15*time.Second, "B as A's relay peer", func() (bool, string) {
		code, body, err := httpDo(http.MethodGet, a.rest+"/health", nil)
		return err == nil && code == http.StatusOK && strings.Contains(string(body), `{"Lightpush":"READY"}`), string(body)
	})
	printed := map[string]string{}
	for _, p := range []string{"light one", "light two"} {
		cmd := exec.Command(bin, "publish", "--lightpush", a.addr, "--pubsub-topic", e2eTopic, "--content-topic", ct, p)
		cmd.Env = childEnv()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("courier publish --lightpush: %v: %s", err, stderr.String())
		}
		printed[p] = strings.TrimSpace(string(out))
	}
	select {
	case <-sub.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("courier subscribe --filter --count 2 still running; printed:\n%s\n%s", sub.out, sub.log)
	}
	if sub.waitErr != nil {
		t.Fatalf("courier subscribe --filter: %v: %s", sub.waitErr, sub.log)
	}
	lines := sub.out.snapshot()
	if len(lines) != 2 {
		t.Fatalf("printed %d lines:\n%s", len(lines), sub.out)
	}
	for _, line := range lines {
		var m restMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if want, ok := printed[string(m.Payload)]; !ok || m.ContentTopic != ct || want != hex0x(m.hash()) {
			t.Errorf("subscribe printed %s; publish printed %q", line, want)
		}
	}
	t.Logf("courier subscribe --filter printed:\n%s", strings.Join(lines, "\n"))
}
