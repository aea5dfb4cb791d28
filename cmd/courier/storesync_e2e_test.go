//go:build unix

package main

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/couriernet/courier/message"
)

// syncFlags turn store-sync on. The relay jitter is 2 s instead of 20 s so
// that the messages published just before B restarts fall within B's
// first round; interval and range keep nwaku's defaults.
var syncFlags = []string{"--store", "--store-sync", "--store-sync-relay-jitter", "2",
	"--metrics-server", "--metrics-server-address", "127.0.0.1", "--metrics-server-port", "0"}

var reTransferred = regexp.MustCompile(`(?m)^total_transfer_messages_exchanged_total\{direction="receive"\} (\d+)$`)

// testE2EStoreSync: A and B relay with store and store-sync on; B is
// stopped while A receives 1,000 messages over REST; B restarts on the
// same data directory and, after one sync round, its archive holds every
// one of them byte for byte, none lost and none twice. With dbURL, B's
// archive is that Postgres database.
func testE2EStoreSync(t *testing.T, bin, dbURL string) {
	start := time.Now()
	step := func(what string) { t.Helper(); t.Logf("[%6.2fs] %s", time.Since(start).Seconds(), what) }
	a := startNode(t, bin, "A", syncFlags...)
	bDir := t.TempDir()
	bFlags := append([]string{"--staticnode", a.addr}, syncFlags...)
	if dbURL != "" {
		bFlags = append(bFlags, "--store-message-db-url", dbURL)
	}
	b := startNodeIn(t, bin, "B", bDir, bFlags...)
	waitFor(t, 20*time.Second, "A and B connected", func() (bool, string) {
		ps, err := a.peers()
		return err == nil && ps[b.id].Connected == "Connected", fmt.Sprint(ps, err)
	})
	want := map[message.Hash]restMessage{}
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			m := restMessage{Payload: payloadOf(i, 64+i%512), ContentTopic: e2eContentTopic, Timestamp: time.Now().UnixNano()}
			mustPublish(t, a, m)
			want[m.hash()] = m
		}
	}
	publish(0, 10)
	step("B stops")
	b.stop(t)
	publish(10, 1010)
	step("A received 1,000 messages while B was down")
	time.Sleep(3 * time.Second) // past the relay jitter
	b = startNodeIn(t, bin, "B", bDir, bFlags...)
	step("B restarted")
	waitFor(t, 60*time.Second, "B to receive the missed messages by store-sync", func() (bool, string) {
		code, body, err := httpDo(http.MethodGet, b.metrics+"/metrics", nil)
		if err != nil || code != http.StatusOK {
			return false, fmt.Sprint(code, err)
		}
		m := reTransferred.FindSubmatch(body)
		if m == nil {
			return false, "no transfer metric"
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n >= 1000, fmt.Sprintf("%d transferred", n)
	})
	step("B's round transferred 1,000 messages")
	b.stop(t)
	b.dbURL = dbURL
	checkArchive(t, b, want, restMessage{Payload: []byte("never sent"), ContentTopic: e2eContentTopic, Timestamp: 1})
	step("B's archive holds all 1,010 messages, each once")
	a.stop(t)
}
