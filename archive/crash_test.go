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
	"github.com/couriernet/courier/message"
)

// crashDirEnv switches the test binary into the crash child: it appends
// messages to the archive in that directory until it is killed.
const crashDirEnv = "COURIER_ARCHIVE_CRASH_CHILD_DIR"

// crashEnv is message i of the crash test; the parent rebuilds it to check
// what the child stored. Payloads follow the seed mix sizes.
func crashEnv(i int) (*message.Envelope, error) {
	sizes := [4]int{10_000, 50_000, 50_000, 150_000}
	r := rand.New(rand.NewPCG(uint64(i), 99))
	payload := make([]byte, sizes[r.IntN(4)])
	for j := 0; j+8 <= len(payload); j += 8 {
		binary.LittleEndian.PutUint64(payload[j:], r.Uint64())
	}
	return makeEnv("/waku/2/rs/1/"+strconv.Itoa(i%3), "/crash/1/t"+strconv.Itoa(i%5)+"/proto", int64(1_700_000_000_000_000_000+i), payload)
}

func init() {
	child = func() bool {
		if dir := os.Getenv(crashDirEnv); dir != "" {
			crashChild(dir)
			return true
		}
		return false
	}
}

// crashChild appends messages forever (it expects SIGKILL) and prints
// "ack <i> <hash>" for each one acknowledged without error.
func crashChild(dir string) {
	a, err := archive.Open(dir, archive.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	for i := 0; ; i++ {
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

// TestCrashKill9 kills a writing process with SIGKILL and checks that every
// message it saw acknowledged reads back whole and byte-identical.
func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	for round := range 2 { // the second round kills a process that recovered an archive
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
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
		checkAcked(t, dir, round, acked)
	}
}

func checkAcked(t *testing.T, dir string, round int, acked map[int]message.Hash) {
	t.Helper()
	a := openT(t, dir, archive.Config{})
	defer a.Close()
	idx := make([]int, 0, len(acked))
	for i := range acked {
		idx = append(idx, i)
	}
	for start := 0; start < len(idx); start += archive.MaxPageSize {
		end := min(start+archive.MaxPageSize, len(idx))
		hashes := make([]message.Hash, 0, end-start)
		for _, i := range idx[start:end] {
			hashes = append(hashes, acked[i])
		}
		res, err := a.Query(context.Background(), archive.Query{Hashes: hashes, Limit: archive.MaxPageSize, IncludeData: true})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		got := map[message.Hash][]byte{}
		for _, m := range res.Messages {
			got[m.Hash] = m.Wire
		}
		for _, i := range idx[start:end] {
			want, err := crashEnv(i)
			if err != nil {
				t.Fatal(err)
			}
			if want.Hash() != acked[i] {
				t.Fatalf("message %d: child hash %s, rebuilt %s", i, acked[i], want.Hash())
			}
			w, ok := got[acked[i]]
			if !ok {
				t.Fatalf("round %d: acknowledged message %d (%s) lost", round, i, acked[i])
			}
			if !bytes.Equal(w, want.Wire()) {
				t.Fatalf("round %d: message %d does not read back byte-identical", round, i)
			}
		}
	}
	t.Logf("round %d: %d acknowledged messages read back whole", round, len(acked))
}
