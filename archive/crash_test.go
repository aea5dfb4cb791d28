//go:build unix

package archive_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/archive/postgres"
	"github.com/couriernet/courier/internal/pgtest"
	"github.com/couriernet/courier/message"
)

// crashTargetEnv switches the test binary into the crash child: it
// appends messages to the archive it names ("embedded:DIR" or
// "postgres:URL"), from message crashStartEnv on, until it is killed.
const (
	crashTargetEnv = "COURIER_ARCHIVE_CRASH_CHILD"
	crashStartEnv  = "COURIER_ARCHIVE_CRASH_START"
)

// crashTime0 is message 0's timestamp; message i's is crashTime0+i.
const crashTime0 = 1_700_000_000_000_000_000

// crashEnv is message i of the crash test; the parent rebuilds it to check
// what the child stored. Payloads follow the seed mix sizes.
func crashEnv(i int) (*message.Envelope, error) {
	sizes := [4]int{10_000, 50_000, 50_000, 150_000}
	r := rand.New(rand.NewPCG(uint64(i), 99))
	payload := make([]byte, sizes[r.IntN(4)])
	for j := 0; j+8 <= len(payload); j += 8 {
		binary.LittleEndian.PutUint64(payload[j:], r.Uint64())
	}
	return makeEnv("/waku/2/rs/1/"+strconv.Itoa(i%3), "/crash/1/t"+strconv.Itoa(i%5)+"/proto", crashTime0+int64(i), payload)
}

func init() {
	child = func() bool {
		if target := os.Getenv(crashTargetEnv); target != "" {
			start, _ := strconv.Atoi(os.Getenv(crashStartEnv))
			crashChild(target, start)
			return true
		}
		return false
	}
}

// openTarget opens the archive a crash target names.
func openTarget(target string) (archive.Archive, error) {
	kind, where, _ := strings.Cut(target, ":")
	if kind == "postgres" {
		a, err := postgres.Open(context.Background(), where, archive.Config{}, postgres.Options{})
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	a, err := embedded.Open(where, archive.Config{}, embedded.Options{})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// crashChild appends messages from start on forever (it expects SIGKILL)
// and prints "ack <i> <hash>" for each one acknowledged without error.
func crashChild(target string, start int) {
	a, err := openTarget(target)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	for i := start; ; i++ {
		env, err := crashEnv(i)
		if err != nil {
			fmt.Fprintln(os.Stderr, "message:", err)
			os.Exit(5)
		}
		line := fmt.Sprintf("ack %d %s\n", i, env.Hash())
		err = a.Append(context.Background(), env, func(err error) {
			if err != nil {
				fmt.Fprintln(os.Stderr, "ack error:", err)
				os.Exit(3)
			}
			mu.Lock()
			os.Stdout.WriteString(line)
			mu.Unlock()
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "append:", err)
			os.Exit(4)
		}
	}
}

// TestCrashKill9 kills a process appending to the archive, embedded and in
// Postgres, with SIGKILL, three times on the same store, and checks after
// each kill that every message it saw acknowledged reads back
// byte-identical, that every stored message is one the child appended,
// whole and once, and that the restarted child goes on archiving new
// messages (each round starts a little before the last one's newest, so
// it also appends duplicates).
func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	forDrivers(t, func(t *testing.T, d driver) {
		target := "embedded:" + t.TempDir()
		if d.name == "postgres" {
			target = "postgres:" + pgtest.DB(t)
		}
		start, newest := 0, -1
		for round := range 3 {
			acked := killChild(t, target, start)
			var fresh int
			for i := range acked {
				if i > newest {
					fresh++
				}
			}
			if fresh == 0 {
				t.Fatalf("round %d: no new message acknowledged", round)
			}
			newest = checkStore(t, target, round, acked)
			start = max(0, newest-20)
		}
	})
}

// killChild runs the crash child on target from message start, kills it
// with SIGKILL after 300 acknowledgements and returns every message it saw
// acknowledged.
func killChild(t *testing.T, target string, start int) map[int]message.Hash {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashTargetEnv+"="+target, crashStartEnv+"="+strconv.Itoa(start))
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
		if err != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		var h message.Hash
		if n, err := hex.Decode(h[:], []byte(f[2])); err != nil || n != len(h) {
			t.Fatalf("bad line %q", sc.Text())
		}
		acked[i] = h
		if len(acked) == 300 && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true // keep reading: lines already written were acknowledged
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child ended before the kill: %v\n%s", err, stderr.String())
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v\n%s", err, stderr.String())
	}
	return acked
}

// checkStore opens target after a kill: every acknowledged message must
// read back byte-identical, and every stored message must be one of the
// child's, whole (its bytes equal the message rebuilt from its index) and
// stored once. It returns the index of the newest stored message.
func checkStore(t *testing.T, target string, round int, acked map[int]message.Hash) int {
	t.Helper()
	a, err := openTarget(target)
	if err != nil {
		t.Fatalf("round %d: reopen: %v", round, err)
	}
	defer a.Close()
	seen := map[message.Hash]bool{}
	newest := -1
	q := archive.Query{Forward: true, Limit: archive.MaxPageSize, IncludeData: true}
	for {
		res, err := a.Query(context.Background(), q)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, m := range res.Messages {
			i := int(m.Timestamp - crashTime0)
			want, err := crashEnv(i)
			if err != nil {
				t.Fatal(err)
			}
			if m.Hash != want.Hash() || !bytes.Equal(m.Wire, want.Wire()) {
				t.Fatalf("round %d: stored message at %d is not message %d whole", round, m.Timestamp, i)
			}
			if seen[m.Hash] {
				t.Fatalf("round %d: message %d stored twice", round, i)
			}
			seen[m.Hash] = true
			newest = max(newest, i)
		}
		if res.Cursor == nil {
			break
		}
		q.Cursor = res.Cursor
	}
	for i, h := range acked {
		if !seen[h] {
			t.Fatalf("round %d: acknowledged message %d (%s) lost", round, i, h)
		}
	}
	if st := a.Stats(); st.Messages != uint64(len(seen)) {
		t.Fatalf("round %d: Stats.Messages %d, %d stored", round, st.Messages, len(seen))
	}
	t.Logf("round %d: %d acknowledged, %d stored, all whole and once", round, len(acked), len(seen))
	return newest
}
