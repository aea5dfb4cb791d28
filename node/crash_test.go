//go:build unix

package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/dburl"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/internal/pgtest"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/shard"
)

// The crash child runs a node with the archive named by crashDirEnv (its
// data directory) and crashDBEnv ("" or a Postgres URL), publishes
// crashMessage(i) for i from crashStartEnv on until it is killed, and
// prints "ack <i> <hash>" from OnArchived for each one committed.
const (
	crashDirEnv   = "COURIER_NODE_CRASH_DIR"
	crashDBEnv    = "COURIER_NODE_CRASH_DB"
	crashStartEnv = "COURIER_NODE_CRASH_START"
	crashTime0    = 1_700_000_000_000_000_000
)

var (
	crashTopic = shard.RelayShard{}.PubsubTopic()
	crashQuiet = slog.New(slog.DiscardHandler)
)

// crashMessage is message i: 1 to 100 kB of bytes from i, timestamp
// crashTime0+i.
func crashMessage(i int) *message.Message {
	payload := make([]byte, 1000+(i*7919)%99_000)
	for j := 0; j+8 <= len(payload); j += 8 {
		binary.LittleEndian.PutUint64(payload[j:], uint64(i)*0x9e3779b97f4a7c15+uint64(j))
	}
	return &message.Message{Payload: payload, ContentTopic: "/crash/1/t" + strconv.Itoa(i%4) + "/proto",
		Timestamp: crashTime0 + int64(i), Present: message.HasTimestamp}
}

func init() {
	child = func() bool {
		dir := os.Getenv(crashDirEnv)
		if dir == "" {
			return false
		}
		start, _ := strconv.Atoi(os.Getenv(crashStartEnv))
		crashNode(dir, os.Getenv(crashDBEnv), start)
		return true
	}
}

func crashNode(dir, db string, start int) {
	var mu sync.Mutex
	// The messages carry fixed timestamps, the same in every round, to be
	// compared byte for byte: the archive's timestamp check is off.
	cfg := Config{ListenAddress: "127.0.0.1", Relay: true, Store: true, DataDir: dir, DBURL: db,
		ArchiveTimestampDrift: -1, Logger: crashQuiet,
		OnArchived: func(env *message.Envelope, err error) {
			if err != nil {
				fmt.Fprintln(os.Stderr, "archive error:", err)
				os.Exit(3)
			}
			i := env.Message().Timestamp - crashTime0
			mu.Lock()
			fmt.Fprintf(os.Stdout, "ack %d %s\n", i, env.Hash())
			mu.Unlock()
		}}
	n, err := New(cfg)
	if err == nil {
		err = n.Start(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		os.Exit(2)
	}
	for i := start; ; i++ {
		if _, err := n.Publish(context.Background(), crashTopic, crashMessage(i)); err != nil {
			fmt.Fprintln(os.Stderr, "publish:", err)
			os.Exit(4)
		}
	}
}

// TestNodeCrashKill9 kills a node archiving what it relays with SIGKILL,
// three times on the same archive, embedded and in Postgres. After each
// kill every message the node acknowledged (its archive's callback ran)
// is there, every stored message is one it published, whole (its bytes
// are the message rebuilt from its index) and once, and the next node on
// the same archive goes on archiving.
func TestNodeCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, kind := range []string{"embedded", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			dir, db := t.TempDir(), ""
			if kind == "postgres" {
				db = pgtest.DB(t)
			}
			start := 0
			for round := range 3 {
				acked := killNode(t, dir, db, start)
				newest := checkArchive(t, dir, db, round, acked)
				if newest < start {
					t.Fatalf("round %d: nothing new archived after message %d", round, start)
				}
				start = newest + 1
			}
		})
	}
}

func killNode(t *testing.T, dir, db string, start int) map[int]message.Hash {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashDBEnv+"="+db, crashStartEnv+"="+strconv.Itoa(start))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[int]message.Hash{}
	sc := bufio.NewScanner(out)
	killed := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "ack" {
			continue
		}
		i, err := strconv.Atoi(f[1])
		var h message.Hash
		if n, herr := hex.Decode(h[:], []byte(f[2])); err != nil || herr != nil || n != len(h) {
			t.Fatalf("bad line %q", sc.Text())
		}
		acked[i] = h
		if len(acked) == 200 && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true // keep reading: lines already written were acknowledged
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("node ended before the kill: %v\n%s", err, stderr.String())
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("node did not die of SIGKILL: %v\n%s", err, stderr.String())
	}
	return acked
}

// checkArchive opens the node's archive after a kill and checks it; it
// returns the index of the newest stored message.
func checkArchive(t *testing.T, dir, db string, round int, acked map[int]message.Hash) int {
	t.Helper()
	var a archive.Archive
	var err error
	if db != "" {
		a, err = dburl.Open(context.Background(), db, dburl.Config{Config: archive.Config{Logger: crashQuiet}})
	} else {
		a, err = embedded.Open(filepath.Join(dir, "archive"), archive.Config{Logger: crashQuiet}, embedded.Options{})
	}
	if err != nil {
		t.Fatalf("round %d: reopen: %v", round, err)
	}
	defer a.Close()
	seen := map[int]bool{}
	stored := map[message.Hash]bool{}
	newest := -1
	q := archive.Query{Forward: true, Limit: archive.MaxPageSize, IncludeData: true}
	for {
		res, err := a.Query(context.Background(), q)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, m := range res.Messages {
			i := int(m.Timestamp - crashTime0)
			want := crashMessage(i).Encode(nil)
			if !bytes.Equal(m.Wire, want) || m.PubsubTopic != crashTopic {
				t.Fatalf("round %d: stored message at %d is not message %d whole", round, m.Timestamp, i)
			}
			dm, err := message.Decode(m.Wire, nil)
			if err != nil || dm.Hash(crashTopic, nil) != m.Hash {
				t.Fatalf("round %d: message %d stored under another hash", round, i)
			}
			if seen[i] {
				t.Fatalf("round %d: message %d stored twice", round, i)
			}
			seen[i], stored[m.Hash] = true, true
			newest = max(newest, i)
		}
		if res.Cursor == nil {
			break
		}
		q.Cursor = res.Cursor
	}
	for i, h := range acked {
		if !stored[h] {
			t.Fatalf("round %d: acknowledged message %d lost", round, i)
		}
	}
	t.Logf("round %d: %d acknowledged, %d stored, all whole and once", round, len(acked), len(seen))
	return newest
}
