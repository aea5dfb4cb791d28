//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

var reENR = regexp.MustCompile(`msg="node record" enrUri=(enr:[A-Za-z0-9_-]+)`)

const relayProtocol = "/vac/waku/relay/2.0.0"

// discv5Flags are the flags of a node that finds its peers with discv5
// from boot alone.
func discv5Flags(boot string) []string {
	return []string{"--discv5-discovery", "--discv5-udp-port", "0", "--discv5-bootstrap-node", boot}
}

// discv5RelayPeers counts n's connected relay peers of origin Discv5.
func discv5RelayPeers(n *nodeProc) (int, string) {
	peers, err := n.peers()
	if err != nil {
		return 0, err.Error()
	}
	count := 0
	var seen []string
	for id, p := range peers {
		seen = append(seen, fmt.Sprintf("%s:%s/%s", id[len(id)-6:], p.Origin, p.Connected))
		if p.Connected == "Connected" && p.Origin == "Discv5" && containsString(p.Protocols, relayProtocol) {
			count++
		}
	}
	return count, strings.Join(seen, " ")
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// testE2EDiscovery runs six nodes on 127.0.0.1: a bootstrap node and five
// given only its ENR. Each of the five reaches at least 3 relay peers found
// by discv5 within a minute, a message published on any node reaches all
// six, and /admin/v1/peers shows origin Discv5. Then the bootstrap node is
// stopped and a new node that knows only one of the others joins.
func testE2EDiscovery(t *testing.T, bin string) {
	boot := startNode(t, bin, "boot", "--discv5-discovery", "--discv5-udp-port", "0")
	bootENR := boot.waitLog(t, reENR, 5*time.Second)[1]
	nodes := []*nodeProc{boot}
	start := time.Now()
	for i := range 5 {
		nodes = append(nodes, startNode(t, bin, fmt.Sprintf("n%d", i+1), discv5Flags(bootENR)...))
	}
	for _, n := range nodes[1:] {
		waitFor(t, time.Minute-time.Since(start), n.name+" has 3 relay peers from discv5", func() (bool, string) {
			c, why := discv5RelayPeers(n)
			return c >= 3, why
		})
	}
	t.Logf("five nodes hold >= 3 discv5 relay peers each %v after the first started", time.Since(start).Round(100*time.Millisecond))
	publishEach(t, nodes, "six")

	boot.stop(t)
	n1ENR := nodes[1].waitLog(t, reENR, time.Second)[1]
	late := startNode(t, bin, "late", discv5Flags(n1ENR)...)
	joined := time.Now()
	waitFor(t, time.Minute, "late node has 3 relay peers from discv5", func() (bool, string) {
		c, why := discv5RelayPeers(late)
		return c >= 3, why
	})
	t.Logf("late node, knowing only n1, holds >= 3 discv5 relay peers after %v", time.Since(joined).Round(100*time.Millisecond))
	publishEach(t, append(nodes[1:], late), "late")
}

// publishEach publishes one message on every node and checks that every
// node receives every message (its REST cache of e2eTopic). It first waits
// until every node has a gossipsub mesh peer on the shard: a message
// published before a node knows any peer's subscription reaches no one.
func publishEach(t *testing.T, nodes []*nodeProc, tag string) {
	t.Helper()
	for _, n := range nodes {
		waitFor(t, 30*time.Second, n.name+" has a mesh peer on shard 0", func() (bool, string) {
			code, body, err := httpDo(http.MethodGet, n.rest+"/admin/v1/peers/mesh/on/0", nil)
			if err != nil {
				return false, err.Error()
			}
			var mesh struct{ Peers []json.RawMessage }
			if code != http.StatusOK || json.Unmarshal(body, &mesh) != nil {
				return false, fmt.Sprintf("%d %s", code, body)
			}
			return len(mesh.Peers) > 0, string(body)
		})
		n.drain(t)
	}
	want := map[string]bool{}
	for i, n := range nodes {
		payload := fmt.Sprintf("%s-from-%s-%d", tag, n.name, i)
		want[payload] = true
		mustPublish(t, n, restMessage{Payload: []byte(payload), ContentTopic: e2eContentTopic, Timestamp: time.Now().UnixNano()})
	}
	for _, n := range nodes {
		got := map[string]bool{}
		waitFor(t, 30*time.Second, n.name+" receives every message", func() (bool, string) {
			for _, m := range n.drain(t) {
				got[string(m.msg.Payload)] = true
			}
			var missing []string
			for p := range want {
				if !got[p] {
					missing = append(missing, p)
				}
			}
			return len(missing) == 0, "missing " + strings.Join(missing, ", ")
		})
	}
}
