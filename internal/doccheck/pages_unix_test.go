//go:build unix

package doccheck

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/couriernet/courier/internal/freeport"
)

var update = flag.Bool("update", false, "rewrite docs/commands.md's checklist from the pages' marks")

// blockTimeout bounds one block's run; nodeStartTimeout a node's start.
const (
	blockTimeout     = 60 * time.Second
	nodeStartTimeout = 30 * time.Second
)

// prelude runs before every block: bash's strict mode, and a go function
// that runs `go run ./cmd/courier ARGS` and `go build -o FILE
// ./cmd/courier` with the binary the test built, and every other go
// command in the checkout, where the pages' go commands are run from.
const prelude = `set -euo pipefail
go() {
  if [ "${1:-}" = run ] && [ "${2:-}" = ./cmd/courier ]; then shift 2; "$DOCCHECK_BIN" "$@"; return; fi
  if [ $# -eq 4 ] && [ "$1" = build ] && [ "$2" = -o ] && [ "$4" = ./cmd/courier ]; then cp "$DOCCHECK_BIN" "$3"; return; fi
  (cd "$DOCCHECK_REPO" && command go "$@")
}
`

// TestDocCommands reads the shell blocks of README.md and docs/*.md,
// checks that docs/commands.md lists every block marked skip, that every
// flag the pages give courier is one of its flags, and runs every block
// marked run (docs/commands.md).
func TestDocCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds courier and runs the pages' commands")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pages, blocks := readPages(t, root)

	t.Run("Checklist", func(t *testing.T) {
		src, err := os.ReadFile(filepath.Join(root, "docs", "commands.md"))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok1 := strings.Cut(string(src), ChecklistBegin+"\n")
		got, _, ok2 := strings.Cut(rest, ChecklistEnd)
		if !ok1 || !ok2 {
			t.Fatalf("docs/commands.md has no %q ... %q section", ChecklistBegin, ChecklistEnd)
		}
		want := Checklist(blocks)
		if got != want && *update {
			updated := strings.Replace(string(src), ChecklistBegin+"\n"+got, ChecklistBegin+"\n"+want, 1)
			if err := os.WriteFile(filepath.Join(root, "docs", "commands.md"), []byte(updated), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("docs/commands.md: checklist rewritten")
		} else if got != want {
			t.Errorf("docs/commands.md's checklist is not the pages' skip marks; it should read (go test -run TestDocCommands/Checklist ./internal/doccheck/ -update writes it)\n%s", want)
		}
	})

	t.Run("Links", func(t *testing.T) {
		for _, p := range pages {
			for _, err := range brokenLinks(root, p) {
				t.Error(err)
			}
		}
	})

	bin := buildCourier(t, root)

	t.Run("Flags", func(t *testing.T) {
		known := courierFlagNames(t, bin)
		for _, b := range blocks {
			for _, f := range CourierFlags(b.Text) {
				if !known[f] {
					t.Errorf("%s:%d: --%s is not a flag of courier (see courier <command> --help)", b.File, b.Line, f)
				}
			}
		}
		for _, p := range pages {
			for _, f := range proseFlags(p.text) {
				if !known[f] && !foreignFlags[f] {
					t.Errorf("%s: `--%s` is not a flag of courier, nor one of the other programs' flags the pages name", p.file, f)
				}
			}
		}
	})

	for _, b := range blocks {
		if b.Kind != Run {
			continue
		}
		t.Run(fmt.Sprintf("%s:%d", b.File, b.Line), func(t *testing.T) { runBlock(t, root, bin, b) })
	}
}

type page struct{ file, text string }

// readPages parses README.md and docs/*.md.
func readPages(t *testing.T, root string) ([]page, []Block) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var pages []page
	var blocks []Block
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		rel = filepath.ToSlash(rel)
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := Parse(rel, src)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, page{rel, string(src)})
		blocks = append(blocks, bs...)
	}
	return pages, blocks
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	slugDrop  = regexp.MustCompile(`[^a-z0-9 _-]`)
)

// brokenLinks returns an error for every relative link of p whose file
// does not exist or whose #fragment is no heading of that file (GitHub's
// anchors: lower case, punctuation dropped, spaces as dashes).
func brokenLinks(root string, p page) []error {
	var errs []error
	for _, m := range linkRE.FindAllStringSubmatch(p.text, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, frag, _ := strings.Cut(target, "#")
		path := filepath.Join(root, filepath.Dir(p.file), file)
		src, err := []byte(p.text), error(nil)
		if file != "" {
			src, err = os.ReadFile(path)
		}
		if err != nil && !isDir(path) {
			errs = append(errs, fmt.Errorf("%s: link %s: %v", p.file, target, err))
			continue
		}
		if frag == "" {
			continue
		}
		found := false
		for _, h := range headingRE.FindAllStringSubmatch(string(src), -1) {
			slug := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(strings.ReplaceAll(h[1], "`", "")), ""), " ", "-")
			found = found || slug == frag
		}
		if !found {
			errs = append(errs, fmt.Errorf("%s: link %s: no heading #%s in %s", p.file, target, frag, file))
		}
	}
	return errs
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// buildCourier builds cmd/courier as cmd/courier's end-to-end test does,
// so that the two share the build cache.
func buildCourier(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "courier")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/courier")
	cmd.Dir = root
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built courier in %v", time.Since(start).Round(time.Millisecond))
	return bin
}

// helpFlagRE matches a flag line of Go's flag package's usage output.
var helpFlagRE = regexp.MustCompile(`(?m)^\s+-([a-zA-Z0-9][a-zA-Z0-9-]*)`)

// courierFlagNames is every flag courier's commands print in --help.
func courierFlagNames(t *testing.T, bin string) map[string]bool {
	t.Helper()
	known := map[string]bool{"help": true, "version": true}
	for _, args := range [][]string{
		{"node"}, {"bench"}, {"publish"}, {"subscribe"}, {"query"},
		{"message", "hash"}, {"message", "verify-rln"}, {"generateRlnKeystore"},
	} {
		out, err := exec.Command(bin, append(args, "--help")...).CombinedOutput()
		if err != nil {
			t.Fatalf("courier %s --help: %v\n%s", strings.Join(args, " "), err, out)
		}
		ms := helpFlagRE.FindAllSubmatch(out, -1)
		if len(ms) == 0 {
			t.Fatalf("courier %s --help lists no flags:\n%s", strings.Join(args, " "), out)
		}
		for _, m := range ms {
			known[string(m[1])] = true
		}
	}
	return known
}

// foreignFlags are the flags of other programs that the pages name in
// code spans: Chromium's, buildah's, apt-get's, docker's and the
// libnet/js benchmark's.
var foreignFlags = map[string]bool{
	"headless": true, "no-sandbox": true, "disable-gpu": true, "disable-quic": true,
	"no-first-run": true, "disable-background-networking": true, "disable-component-update": true,
	"disable-sync": true, "user-data-dir": true, "ignore-certificate-errors-spki-list": true,
	"storage-driver": true, "isolation": true, "no-install-recommends": true,
	"quick": true, "json": true, "rm": true,
	"flag": true, // the placeholder of --flag=value
}

var (
	codeSpanRE  = regexp.MustCompile("`([^`\n]+)`")
	spanFlagRE  = regexp.MustCompile(`(?:^|[\s\[(])--([a-z][a-z0-9-]*)(\*?)`)
	fenceLineRE = regexp.MustCompile("(?m)^\\s*(```|~~~)")
)

// proseFlags returns the --flags named in the code spans of a page's text
// outside its fenced blocks and its checklist (whose spans are the first
// lines of blocks, checked as blocks).
func proseFlags(text string) []string {
	if before, rest, ok := strings.Cut(text, ChecklistBegin); ok {
		_, after, _ := strings.Cut(rest, ChecklistEnd)
		text = before + after
	}
	var names []string
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if fenceLineRE.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, span := range codeSpanRE.FindAllStringSubmatch(line, -1) {
			for _, m := range spanFlagRE.FindAllStringSubmatch(span[1], -1) {
				if m[2] == "" && !strings.HasSuffix(m[1], "-") { // not a pattern such as --rln-relay-*
					names = append(names, m[1])
				}
			}
		}
	}
	return names
}

// runBlock runs one block in a fresh directory holding ./courier, with
// courier on the PATH, after starting the node its mark asks for.
func runBlock(t *testing.T, root, bin string, b Block) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil && (tool == "bash" || strings.Contains(b.Text, "curl ")) {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (.ci/run installs it)", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, "courier")); err != nil {
		t.Fatal(err)
	}
	text := b.Text
	mentions := strings.Contains(text, "127.0.0.1:8645") || strings.Contains(text, "127.0.0.1:8008") || strings.Contains(text, "/tcp/60000/p2p/<id>")
	switch {
	case b.Node == "" && mentions:
		t.Fatalf("%s:%d: the block names a node's default address but its mark starts no node (run node=\"FLAGS\")", b.File, b.Line)
	case b.Node != "" && !mentions:
		t.Fatalf("%s:%d: the mark starts a node that the block never addresses", b.File, b.Line)
	}
	if b.Node != "" {
		n := startNode(t, bin, b.Node)
		text = n.substitute(text)
		defer n.stop(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", prelude+text)
	cmd.Dir = dir
	cmd.Env = append(childEnv(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"DOCCHECK_BIN="+bin, "DOCCHECK_REPO="+root)
	// The block's own process group, so that what it starts in the
	// background ends with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Errorf("%s:%d: %v after %v\n--- script:\n%s--- output:\n%s", b.File, b.Line, err,
			time.Since(start).Round(time.Millisecond), text, out.String())
		return
	}
	t.Logf("%s:%d: ran in %v\n%s", b.File, b.Line, time.Since(start).Round(time.Millisecond), head(out.String(), 20))
}

// head is the first n lines of s.
func head(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("... (%d lines more)\n", len(lines)-n)
}

// childEnv is the test's environment without COURIER_* and WAKUNODE2_*
// variables, which would set node flags.
func childEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "COURIER_") || strings.HasPrefix(kv, "WAKUNODE2_") || strings.HasPrefix(kv, "PATH=")
	})
}

// node is a courier node a block runs against, on ports of its own.
type node struct {
	cmd       *exec.Cmd
	out       *syncBuffer
	done      chan struct{}
	tcp, rest int
	metrics   int
	addr      string // /ip4/127.0.0.1/tcp/<tcp>/p2p/<id>
}

// startNode starts `courier node` with flags (which must turn on --rest)
// and waits until its REST API answers /debug/v1/info.
func startNode(t *testing.T, bin, flags string) *node {
	t.Helper()
	ports := freeport.Get(t, 4)
	n := &node{out: new(syncBuffer), done: make(chan struct{}), tcp: ports[0], rest: ports[1], metrics: ports[2]}
	args := []string{"node", "--listen-address=127.0.0.1", "--nat=none",
		"--tcp-port=" + strconv.Itoa(n.tcp), "--rest-port=" + strconv.Itoa(n.rest),
		"--metrics-server-port=" + strconv.Itoa(n.metrics), "--websocket-port=" + strconv.Itoa(ports[3]),
		"--discv5-udp-port=0", "--data-dir=" + t.TempDir()}
	n.cmd = exec.Command(bin, append(args, strings.Fields(flags)...)...)
	n.cmd.Dir = t.TempDir()
	n.cmd.Env = append(childEnv(), "PATH="+os.Getenv("PATH"))
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { n.cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		select {
		case <-n.done:
		default:
			n.cmd.Process.Kill()
			<-n.done
		}
		if t.Failed() {
			t.Logf("--- node %s:\n%s", strings.Join(n.cmd.Args[1:], " "), n.out.String())
		}
	})
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(nodeStartTimeout)
	prefix := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/", n.tcp)
	for {
		select {
		case <-n.done:
			t.Fatalf("node exited during start: %v", n.cmd.ProcessState)
		default:
		}
		var info struct {
			ListenAddresses []string `json:"listenAddresses"`
		}
		if resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/v1/info", n.rest)); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&info)
			resp.Body.Close()
			for _, a := range info.ListenAddresses {
				if strings.HasPrefix(a, prefix) {
					n.addr = a
				}
			}
			if n.addr != "" {
				return n
			}
			t.Fatalf("/debug/v1/info lists no %s... address: %v %v", prefix, info.ListenAddresses, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("node's REST API did not answer within %v", nodeStartTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// substitute puts the node's ports and address in place of the defaults
// the pages name: REST 127.0.0.1:8645, metrics 127.0.0.1:8008, and
// /ip4/127.0.0.1/tcp/60000/p2p/<id>.
func (n *node) substitute(text string) string {
	return strings.NewReplacer(
		"127.0.0.1:8645", "127.0.0.1:"+strconv.Itoa(n.rest),
		"127.0.0.1:8008", "127.0.0.1:"+strconv.Itoa(n.metrics),
		"/ip4/127.0.0.1/tcp/60000/p2p/<id>", n.addr,
	).Replace(text)
}

// stop sends SIGTERM and expects the clean exit the pages describe.
func (n *node) stop(t *testing.T) {
	t.Helper()
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
		if code := n.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("node exited with code %d after SIGTERM, want 0", code)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("node still running 30 s after SIGTERM")
	}
}

// syncBuffer is a bytes.Buffer safe for a process's two output streams.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func TestBrokenLinks(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "docs"), 0o755)
	os.WriteFile(filepath.Join(root, "docs", "a.md"), []byte("# A page\n\n## The `REST` API, in short\n"), 0o644)
	p := page{"docs/b.md", "[ok](a.md) [ok](a.md#the-rest-api-in-short) [ok](../docs/) [ok](https://example.org/x.md)\n" +
		"[bad](c.md) [bad](a.md#no-such) [ok](#here)\n\n## Here\n"}
	errs := brokenLinks(root, p)
	var got []string
	for _, err := range errs {
		got = append(got, err.Error())
	}
	if len(got) != 2 || !strings.Contains(got[0], "link c.md") || !strings.Contains(got[1], "no heading #no-such in a.md") {
		t.Errorf("brokenLinks = %q, want c.md and a.md#no-such", got)
	}
}

func TestProseFlags(t *testing.T) {
	text := "Use `--store`, `courier --rest=true --rest-port 8646` and `--rln-relay-*`.\n" +
		"```sh\ncourier --not-prose\n```\n" + ChecklistBegin + "\n| `docker run --rm` |\n" + ChecklistEnd + "\n--bare is no span\n"
	got := proseFlags(text)
	if want := []string{"store", "rest", "rest-port"}; !slices.Equal(got, want) {
		t.Errorf("proseFlags = %q, want %q", got, want)
	}
}
