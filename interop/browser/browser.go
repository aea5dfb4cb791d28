//go:build unix

// Package browser loads a small web page with js-waku (npm @waku/sdk, the
// version interop/jswaku pins) into a headless Chromium and runs it against
// courier nodes. The page (index.html and page.js) is bundled at test time
// with esbuild from the packages package.json pins (lockfile committed,
// node_modules installed on first run, as interop/jswaku does); a Go test
// serves it on 127.0.0.1, starts Debian's chromium through the DevTools
// protocol (github.com/chromedp/chromedp) and checks what the page reports.
// See README.md.
package browser

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/couriernet/courier/interop/jswaku"
)

// Dir returns the suite's folder: package.json, the page and node_modules.
func Dir() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Dir(file)
}

// chromiumPaths are tried in order: Debian's binary itself (its
// /usr/bin/chromium wrapper adds flags and API keys from
// /etc/chromium.d), then whatever PATH has.
var chromiumPaths = []string{"/usr/lib/chromium/chromium", "chromium", "chromium-browser"}

// Require makes sure the page can run: Node.js and npm with the suite's
// packages installed (jswaku.RequirePackages), and a Chromium. It returns
// the Chromium binary's path. Without one it skips the test with the
// command that installs Debian's package, or fails it when CI=true.
func Require(t testing.TB) string {
	t.Helper()
	jswaku.RequirePackages(t, "browser suite", Dir())
	for _, p := range chromiumPaths {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	msg := "browser suite: no chromium on PATH: install it with `apt-get install -y --no-install-recommends chromium` (Debian), then run go test again"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Bundle bundles page.js and its packages with esbuild into a new
// directory beside a copy of index.html, and returns the directory.
func Bundle(t testing.TB) string {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(Dir(), "node_modules", ".bin", "esbuild"), "page.js",
		"--bundle", "--format=esm", "--platform=browser", "--target=chrome120", "--log-level=warning",
		"--outfile="+filepath.Join(out, "bundle.js"))
	cmd.Dir = Dir()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("esbuild: %v\n%s", err, b)
	}
	html, err := os.ReadFile(filepath.Join(Dir(), "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "index.html"), html, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// Serve serves dir over HTTP on 127.0.0.1 until the test ends and returns
// the URL of its index.html. A loopback origin is a secure context, which
// the page's WebCrypto needs.
func Serve(t testing.TB, dir string) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv.URL + "/index.html"
}

// SPKIHash returns the base64 SHA-256 of the public key of the first
// certificate in the PEM file at certPath: what Chromium's
// --ignore-certificate-errors-spki-list takes to trust a certificate.
func SPKIHash(certPath string) (string, error) {
	b, err := os.ReadFile(certPath)
	if err != nil {
		return "", err
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return "", errors.New("no PEM certificate in " + certPath)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}

// Flags are the command-line switches Chromium runs with besides its
// binary's path, a fresh profile and the DevTools port: headless, no
// sandbox (tests run as root), and nothing that reaches a host other than
// those the page names (no background networking, component updates,
// sync or QUIC; every host name but localhost resolves to nothing).
var Flags = []string{
	"headless", "no-sandbox", "disable-gpu", "disable-quic", "no-first-run",
	"disable-background-networking", "disable-component-update", "disable-sync",
	"disable-dev-shm-usage", "no-default-browser-check", "disable-default-apps",
	"disable-extensions", "mute-audio", "hide-scrollbars",
}

// Launch starts the Chromium at path with Flags, a fresh --user-data-dir
// and a window of 1280x560, trusting the certificates whose SPKI hashes
// (SPKIHash) trust lists, and returns a browser tab's context. The
// browser's console and uncaught exceptions go to t.Log. Chromium stops
// when the test ends.
func Launch(t testing.TB, path string, trust ...string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 560),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"),
	}
	for _, f := range Flags {
		opts = append(opts, chromedp.Flag(f, true))
	}
	if len(trust) > 0 {
		opts = append(opts, chromedp.Flag("ignore-certificate-errors-spki-list", strings.Join(trust, ",")))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			var args []string
			for _, a := range ev.Args {
				v := strings.Trim(string(a.Value), `"`)
				if v == "" {
					v = a.Description
				}
				args = append(args, v)
			}
			t.Logf("console.%s: %s", ev.Type, strings.Join(args, " "))
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			what := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				what = d.Exception.Description
			}
			t.Logf("page exception at %s:%d: %s", d.URL, d.LineNumber+1, what)
		}
	}); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return ctx
}

// Call evaluates `expr(args as JSON)` in the page, waits for the promise
// it returns and decodes its value into out.
func Call(ctx context.Context, expr string, args, out any) error {
	in, err := json.Marshal(args)
	if err != nil {
		return err
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](fmt.Sprintf("%s(%s)", expr, in), chromedp.EvalAwaitPromise))
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}
