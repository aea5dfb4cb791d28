//go:build linux

package deploy

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node"
	"github.com/couriernet/courier/shard"
)

// imageConfig is the part of an OCI image configuration the test reads
// (image-spec config.md).
type imageConfig struct {
	User         string              `json:"User"`
	Env          []string            `json:"Env"`
	Entrypoint   []string            `json:"Entrypoint"`
	Cmd          []string            `json:"Cmd"`
	WorkingDir   string              `json:"WorkingDir"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts"`
	Volumes      map[string]struct{} `json:"Volumes"`
}

type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// image is an image read from an OCI layout and extracted.
type image struct {
	Config     imageConfig
	Root       string // the extracted file system
	Compressed int64  // bytes of the manifest, config and layer blobs
	Unpacked   int64  // bytes of the regular files in the layers
}

// TestImage builds the image of Containerfile from the context stage.sh
// lays out, with buildah (vfs storage, chroot isolation, a storage root of
// its own), pushes it to an OCI layout, extracts it and checks its
// configuration and files. Then it runs the image's entrypoint from the
// extracted root (chroot, as the image's user, configured by WAKUNODE2_
// variables alone) as a node that a node of this process meshes with:
// messages cross both ways, the node archives in the /data volume, and
// SIGTERM stops it with exit code 0.
func TestImage(t *testing.T) {
	buildah := requireImageTools(t)
	tmp := t.TempDir()
	ctxDir := filepath.Join(tmp, "context")
	start := time.Now()
	run(t, "bash", "stage.sh", ctxDir)
	t.Logf("stage.sh: %v", time.Since(start).Round(time.Millisecond))
	checkStatic(t, filepath.Join(ctxDir, "rootfs", "usr", "bin", "courier"))

	storage := []string{"--root", filepath.Join(tmp, "storage"), "--runroot", filepath.Join(tmp, "run"), "--storage-driver", "vfs"}
	const tag = "localhost/courier:test"
	start = time.Now()
	run(t, buildah, append(slices.Clone(storage), "bud", "--isolation", "chroot", "--quiet", "-t", tag, ctxDir)...)
	layout := filepath.Join(tmp, "oci")
	run(t, buildah, append(slices.Clone(storage), "push", "--quiet", tag, "oci:"+layout+":courier")...)
	t.Logf("buildah bud and push: %v", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	img := extract(t, layout, filepath.Join(tmp, "root"))
	t.Logf("extract: %v", time.Since(start).Round(time.Millisecond))
	t.Logf("image: %d bytes compressed (%.1f MB), %d bytes of files (%.1f MB)", img.Compressed, float64(img.Compressed)/1e6, img.Unpacked, float64(img.Unpacked)/1e6)
	checkConfig(t, img)
	checkFiles(t, img)
	checkBareRun(t, img)
	runNode(t, img)
}

// requireImageTools returns buildah's path. Without buildah, or not as
// root (chroot and the image's user need it), the test skips with what
// to do, or fails when CI=true.
func requireImageTools(t *testing.T) string {
	t.Helper()
	why := ""
	path, err := exec.LookPath("buildah")
	switch {
	case err != nil:
		why = "buildah not found on PATH: install it with `apt-get install -y buildah` (Debian)"
	case os.Geteuid() != 0:
		why = "not root: the test runs the image's entrypoint with chroot as the image's user"
	}
	if why == "" {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("image test: " + why)
	}
	t.Skip("image test: " + why)
	return ""
}

// run runs a command in this folder and fails the test with its output
// when it fails.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// checkStatic fails unless the ELF file at path asks for no dynamic loader
// and no shared library.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: not static", path)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) != 0 {
		t.Errorf("%s needs shared libraries %q", path, libs)
	}
}

// extract reads the image the OCI layout at dir names, unpacks its layers
// in order into root (as root: owners and modes kept) and returns it.
func extract(t *testing.T, dir, root string) image {
	t.Helper()
	var index struct{ Manifests []descriptor }
	readJSON(t, dir, descriptor{Digest: "index.json"}, &index)
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests, want 1", len(index.Manifests))
	}
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	readJSON(t, dir, index.Manifests[0], &manifest)
	var cfg struct{ Config imageConfig }
	readJSON(t, dir, manifest.Config, &cfg)
	img := image{Config: cfg.Config, Root: root, Compressed: index.Manifests[0].Size + manifest.Config.Size}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range manifest.Layers {
		img.Compressed += l.Size
		n, err := unpack(blobPath(dir, l), l.MediaType, root)
		if err != nil {
			t.Fatalf("layer %s: %v", l.Digest, err)
		}
		img.Unpacked += n
	}
	return img
}

func blobPath(dir string, d descriptor) string {
	algo, hex, ok := strings.Cut(d.Digest, ":")
	if !ok {
		return filepath.Join(dir, d.Digest)
	}
	return filepath.Join(dir, "blobs", algo, hex)
}

func readJSON(t *testing.T, dir string, d descriptor, v any) {
	t.Helper()
	b, err := os.ReadFile(blobPath(dir, d))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", d.Digest, err)
	}
}

// unpack extracts one layer (tar, gzip or not) into root, applying OCI
// whiteouts, and returns the bytes of its regular files.
func unpack(path, mediaType, root string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var r io.Reader = f
	switch {
	case strings.HasSuffix(mediaType, "+gzip"):
		// gzip(1) rather than compress/gzip: under -race the latter takes
		// half a minute for this layer.
		gz := exec.Command("gzip", "-dc")
		gz.Stdin = f
		out, err := gz.StdoutPipe()
		if err != nil {
			return 0, err
		}
		if err := gz.Start(); err != nil {
			return 0, err
		}
		defer func() {
			io.Copy(io.Discard, out)
			gz.Wait()
		}()
		r = out
	case strings.HasSuffix(mediaType, ".tar"):
	default:
		return 0, fmt.Errorf("layer media type %q", mediaType)
	}
	var total int64
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		name := filepath.Clean(h.Name)
		if !filepath.IsLocal(name) {
			return total, fmt.Errorf("entry %q leaves the root", h.Name)
		}
		target := filepath.Join(root, name)
		base := filepath.Base(name)
		if base == ".wh..wh..opq" {
			entries, _ := os.ReadDir(filepath.Dir(target))
			for _, e := range entries {
				os.RemoveAll(filepath.Join(filepath.Dir(target), e.Name()))
			}
			continue
		}
		if w, ok := strings.CutPrefix(base, ".wh."); ok {
			os.RemoveAll(filepath.Join(filepath.Dir(target), w))
			continue
		}
		mode := h.FileInfo().Mode()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return total, err
			}
		case tar.TypeReg:
			out, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
			if err != nil {
				return total, err
			}
			n, err := io.Copy(out, tr)
			total += n
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return total, err
			}
		case tar.TypeSymlink:
			os.Remove(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return total, err
			}
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				return total, err
			}
			continue
		default:
			return total, fmt.Errorf("entry %q: tar type %q not expected in this image", h.Name, h.Typeflag)
		}
		if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
			return total, err
		}
		if err := os.Chmod(target, mode&(os.ModePerm|os.ModeSticky|os.ModeSetuid|os.ModeSetgid)); err != nil {
			return total, err
		}
	}
}

// checkConfig checks the image's configuration against nwaku's image:
// its entrypoint, a non-root user, the /data volume and the ports.
func checkConfig(t *testing.T, img image) {
	t.Helper()
	c := img.Config
	if !slices.Equal(c.Entrypoint, []string{"/usr/bin/courier"}) || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [/usr/bin/courier] and none", c.Entrypoint, c.Cmd)
	}
	if c.User != "10001:10001" {
		t.Errorf("user %q, want 10001:10001", c.User)
	}
	if _, ok := c.Volumes["/data"]; !ok || len(c.Volumes) != 1 || c.WorkingDir != "/data" {
		t.Errorf("volumes %v, working directory %q; want /data for both", c.Volumes, c.WorkingDir)
	}
	want := []string{"30303/tcp", "60000/tcp", "8545/tcp", "8000/tcp", "9000/udp", "8645/tcp", "8008/tcp"}
	var got []string
	for p := range c.ExposedPorts {
		got = append(got, p)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("exposed ports %q, want %q", got, want)
	}
}

// checkFiles checks the extracted root: a static binary with its nwaku
// names, CA certificates, the image's user, a writable /tmp, and /data
// owned by that user.
func checkFiles(t *testing.T, img image) {
	t.Helper()
	bin := filepath.Join(img.Root, "usr", "bin", "courier")
	checkStatic(t, bin)
	for _, name := range []string{"wakunode", "wakunode2"} {
		if dest, err := os.Readlink(filepath.Join(img.Root, "usr", "bin", name)); err != nil || dest != "courier" {
			t.Errorf("/usr/bin/%s links to %q (%v), want courier", name, dest, err)
		}
	}
	pemBytes, err := os.ReadFile(filepath.Join(img.Root, "etc", "ssl", "certs", "ca-certificates.crt"))
	if err != nil {
		t.Fatal(err)
	}
	certs := 0
	for rest := pemBytes; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if _, err := x509.ParseCertificate(b.Bytes); err == nil {
			certs++
		}
	}
	if certs < 10 {
		t.Errorf("CA bundle holds %d certificates", certs)
	}
	passwd, _ := os.ReadFile(filepath.Join(img.Root, "etc", "passwd"))
	if !strings.Contains(string(passwd), "\ncourier:x:10001:10001:") {
		t.Errorf("/etc/passwd %q has no user courier 10001", passwd)
	}
	for path, want := range map[string]struct {
		mode     os.FileMode
		uid, gid uint32
	}{
		"tmp":  {os.ModeDir | os.ModeSticky | 0o777, 0, 0},
		"data": {os.ModeDir | 0o755, 10001, 10001},
	} {
		fi, err := os.Stat(filepath.Join(img.Root, path))
		if err != nil {
			t.Error(err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode() != want.mode || st.Uid != want.uid || st.Gid != want.gid {
			t.Errorf("/%s: mode %v owner %d:%d, want %v %d:%d", path, fi.Mode(), st.Uid, st.Gid, want.mode, want.uid, want.gid)
		}
	}
}

// container is the image's entrypoint run from its extracted root.
type container struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	exited chan struct{} // closed when the process has exited
	err    error         // Wait's result, set before exited is closed
}

// start runs the entrypoint with args in img's root, as its user, in its
// working directory, with its environment plus env.
func start(t *testing.T, img image, env []string, args ...string) *container {
	t.Helper()
	uid, gid := imageUser(t, img.Config.User)
	c := &container{exited: make(chan struct{})}
	argv := append(slices.Clone(img.Config.Entrypoint), args...)
	c.cmd = &exec.Cmd{
		Path: argv[0],
		Args: argv,
		Env:  append(slices.Clone(img.Config.Env), env...),
		Dir:  img.Config.WorkingDir,
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:     img.Root,
			Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
			Pdeathsig:  syscall.SIGKILL,
		},
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = c.cmd.Stdout
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s in %s: %v", argv[0], img.Root, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			c.mu.Lock()
			c.lines = append(c.lines, sc.Text())
			c.mu.Unlock()
		}
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			c.cmd.Process.Kill()
			<-c.exited
		}
		if t.Failed() {
			t.Logf("container output:\n%s", strings.Join(c.output(), "\n"))
		}
	})
	return c
}

func (c *container) output() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lines)
}

// waitRecord waits for a JSON log record whose msg is msg and returns it.
func (c *container) waitRecord(t *testing.T, msg string, within time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		for _, line := range c.output() {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
				return rec
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log record %q in %v", msg, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// imageUser parses the configuration's User, uid:gid in this image.
func imageUser(t *testing.T, user string) (uid, gid uint32) {
	t.Helper()
	u, g, _ := strings.Cut(user, ":")
	uv, err1 := strconv.ParseUint(u, 10, 32)
	gv, err2 := strconv.ParseUint(g, 10, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("image user %q is not uid:gid", user)
	}
	return uint32(uv), uint32(gv)
}

// checkBareRun: with no arguments and no WAKUNODE2_ variable the
// entrypoint prints its usage and exits 1, as courier does for every usage error.
func checkBareRun(t *testing.T, img image) {
	t.Helper()
	c := start(t, img, nil)
	select {
	case <-c.exited:
		var exit *exec.ExitError
		if err := c.err; !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.HasPrefix(strings.Join(c.output(), "\n"), "usage: courier") {
			t.Errorf("bare run: %v, output %q; want the usage and exit code 1", err, c.output())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("bare run did not exit")
	}
}

// runNode runs the entrypoint as a node configured by WAKUNODE2_
// variables, with a node of this process as its static node, and checks
// that messages cross both ways and that it archives in /data.
func runNode(t *testing.T, img image) {
	t.Helper()
	local := startLocal(t)
	topic := shard.RelayShard{}.PubsubTopic()
	c := start(t, img, []string{
		"WAKUNODE2_LISTEN_ADDRESS=127.0.0.1", "WAKUNODE2_TCP_PORT=0", "WAKUNODE2_NAT=none",
		"WAKUNODE2_CLUSTER_ID=0", "WAKUNODE2_SHARD=0", "WAKUNODE2_RELAY=true", "WAKUNODE2_STORE=true",
		"WAKUNODE2_REST=true", "WAKUNODE2_REST_ADDRESS=127.0.0.1", "WAKUNODE2_REST_PORT=0",
		"WAKUNODE2_LOG_FORMAT=JSON", "WAKUNODE2_STATICNODE=" + local.addr,
	})
	started := time.Now()
	listening := c.waitRecord(t, "listening", time.Minute)
	addr, _ := listening["addr"].(string)
	info, err := peer.AddrInfoFromString(addr)
	if err != nil {
		t.Fatalf("listening at %q: %v", addr, err)
	}
	rest, _ := c.waitRecord(t, "serving REST API", 10*time.Second)["addr"].(string)
	rest = "http://" + rest
	t.Logf("node in the image: %s, REST %s, up in %v", addr, rest, time.Since(started).Round(time.Millisecond))
	if uid := processUID(t, c.cmd.Process.Pid); uid != "10001" {
		t.Errorf("node runs as uid %s, want 10001", uid)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for !slices.Contains(local.n.Relay().TopicPeers(topic), info.ID) {
		if ctx.Err() != nil {
			t.Fatalf("the node in the image never joined %s with the local node", topic)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// local -> image: relayed, cached for the REST API, archived in /data.
	const contentTopic = "/courier/1/image/proto"
	in := &message.Message{Payload: []byte("to the image"), ContentTopic: contentTopic, Timestamp: time.Now().UnixNano()}
	env, err := local.n.Publish(ctx, topic, in)
	if err != nil {
		t.Fatal(err)
	}
	var relayed []struct {
		Payload []byte `json:"payload"`
	}
	until(ctx, t, "the image's REST cache to hold the message", func() bool {
		getJSON(t, rest+"/relay/v1/messages/"+url.PathEscape(topic), &relayed)
		return len(relayed) == 1 && string(relayed[0].Payload) == "to the image"
	})
	var stored struct {
		Messages []struct {
			MessageHash string `json:"messageHash"`
		} `json:"messages"`
	}
	getJSON(t, rest+"/store/v3/messages?includeData=true&pubsubTopic="+url.QueryEscape(topic), &stored)
	if len(stored.Messages) != 1 || stored.Messages[0].MessageHash != "0x"+env.Hash().String() {
		t.Errorf("the image's store answers %+v, want the message %s", stored, env.Hash())
	}
	fi, err := os.Stat(filepath.Join(img.Root, "data", "store.sqlite3"))
	if err != nil {
		t.Errorf("no archive in the /data volume: %v", err)
	} else if st := fi.Sys().(*syscall.Stat_t); st.Uid != 10001 {
		t.Errorf("/data/store.sqlite3 owned by %d, want 10001", st.Uid)
	}

	// image -> local: published over the image's REST API.
	out := &message.Message{Payload: []byte("from the image"), ContentTopic: contentTopic, Timestamp: time.Now().UnixNano()}
	body, _ := json.Marshal(map[string]any{"payload": base64.StdEncoding.EncodeToString(out.Payload), "contentTopic": out.ContentTopic, "timestamp": out.Timestamp})
	resp, err := http.Post(rest+"/relay/v1/messages/"+url.PathEscape(topic), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /relay/v1/messages: %s", resp.Status)
	}
	want := out.Hash(topic, nil)
	until(ctx, t, "the local node to archive the image's message", func() bool {
		res, err := local.n.Archive().Query(ctx, archive.Query{Limit: 10})
		return err == nil && slices.ContainsFunc(res.Messages, func(m archive.Stored) bool { return m.Hash == want })
	})

	t.Logf("messages crossed both ways %v after the start", time.Since(started).Round(time.Millisecond))

	// SIGTERM stops the node cleanly.
	stopped := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.exited:
		if err := c.err; err != nil {
			t.Errorf("after SIGTERM: %v, want exit code 0", err)
		}
		t.Logf("stopped %v after SIGTERM", time.Since(stopped).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("the node in the image did not stop within 30 s of SIGTERM")
	}
}

// local is a node of this process.
type local struct {
	n    *node.Node
	addr string
}

// startLocal starts a relay and store node on 127.0.0.1, stopped when the
// test ends.
func startLocal(t *testing.T) local {
	t.Helper()
	n, err := node.New(node.Config{Relay: true, Store: true, DataDir: t.TempDir(), ListenAddress: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		n.Stop(context.Background())
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n.Stop(ctx)
	})
	return local{n: n, addr: n.ListenAddresses()[0]}
}

// processUID returns the real uid of process pid (/proc/pid/status).
func processUID(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			return strings.Fields(rest)[0]
		}
	}
	return ""
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", u, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v in %s", u, err, b)
	}
}

func until(ctx context.Context, t *testing.T, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
