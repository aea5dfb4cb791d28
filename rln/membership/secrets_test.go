//go:build unix

package membership_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/rln/internal/chaintest"
	"github.com/couriernet/courier/rln/membership"
)

// secretAddresses returns endpoint addresses at host:port with an API key
// in each place RPC providers put one. Every secret contains "SECRET".
func secretAddresses(hostport string) map[string]string {
	return map[string]string{
		"path key":      "http://" + hostport + "/v3/SECRETPATHKEY1",
		"query key":     "http://" + hostport + "/?apikey=SECRETQUERYKEY2",
		"fragment":      "http://" + hostport + "#SECRETFRAGMENT3",
		"user:password": "http://SECRETUSER4:SECRETPASS5@" + hostport + "/",
		"escaped key":   "http://" + hostport + "/v3/SECRET%41KEY6",
		"ws path key":   "ws://" + hostport + "/ws/SECRETWSKEY7",
	}
}

// noSecret fails the test when text holds a secret of secretAddresses.
func noSecret(t *testing.T, what, text string) {
	t.Helper()
	if strings.Contains(text, "SECRET") || strings.Contains(text, "AKEY6") {
		t.Errorf("%s shows a secret of the endpoint address:\n%s", what, text)
	}
}

// closedPort returns a 127.0.0.1 address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// closingServer returns the address of a listener that closes every
// connection it accepts.
func closingServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestDialErrorsRedactAddress: when an endpoint cannot be reached, Dial's
// error and the retry warnings in the log name the endpoint without its
// secret parts, although the transports write the whole URL into their
// errors; errors.Is and errors.As still see the transport's error, and a
// *url.Error got through errors.As has its URL redacted.
func TestDialErrorsRedactAddress(t *testing.T) {
	servers := map[string]func(*testing.T) string{"closed port": closedPort, "closing server": closingServer}
	for sname, server := range servers {
		hostport := server(t)
		for name, addr := range secretAddresses(hostport) {
			t.Run(sname+"/"+name, func(t *testing.T) {
				logs := &logBuffer{}
				cfg := config(&chaintest.Deployment{}, logs, addr)
				cfg.Contract[0] = 1
				cfg.StartAttempts, cfg.CallTimeout = 2, 2*time.Second
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				c, err := membership.Dial(ctx, cfg)
				if err == nil {
					c.Close()
					t.Fatal("Dial succeeded")
				}
				if !errors.Is(err, membership.ErrUnavailable) {
					t.Fatalf("Dial: %v, want ErrUnavailable", err)
				}
				noSecret(t, "Dial's error", err.Error())
				if !strings.Contains(err.Error(), hostport) {
					t.Errorf("Dial's error does not name the endpoint %s: %v", hostport, err)
				}
				if !logs.contains("retrying") {
					t.Fatalf("no retry logged:\n%s", logs)
				}
				noSecret(t, "the log", logs.String())
				var ue *url.Error
				if errors.As(err, &ue) {
					noSecret(t, "the *url.Error's URL", ue.URL)
					var ne net.Error
					if !errors.As(err, &ne) {
						t.Errorf("errors.As finds no net.Error in %v", err)
					} else {
						noSecret(t, "the net.Error errors.As finds", ne.Error())
					}
				} else if !strings.HasPrefix(addr, "ws:") {
					t.Errorf("errors.As finds no *url.Error in %v", err)
				}
			})
		}
	}
}

// TestHealthRedactsAddress: when the endpoint in use stops answering,
// Health's LastError and Desc and the log name it without its secret
// parts.
func TestHealthRedactsAddress(t *testing.T) {
	chain := chaintest.NewServed(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	for name, addr := range secretAddresses("HOSTPORT") {
		t.Run(name, func(t *testing.T) {
			srv := chain.Serve(t)
			addr = strings.Replace(addr, "HOSTPORT", strings.TrimPrefix(srv.URL(), "http://"), 1)
			logs := &logBuffer{}
			m := start(t, config(d, logs, addr))
			srv.Stop()
			membership.Poll(m)
			membership.Poll(m)
			h := m.Health()
			if h.State != membership.StateNotReady || h.LastError == "" {
				t.Fatalf("Health after two failed polls: %+v", h)
			}
			noSecret(t, "Health.LastError", h.LastError)
			noSecret(t, "Health.Desc", h.Desc)
			noSecret(t, "Health.Endpoint", h.Endpoint)
			if !logs.contains("Ethereum RPC endpoint failed") {
				t.Fatalf("no endpoint failure logged:\n%s", logs)
			}
			noSecret(t, "the log", logs.String())
		})
	}
}

// TestCheckEndpointRefusesPortAndHost: an address without a host or with
// a port outside 1 to 65535 is refused at once, with the reason.
func TestCheckEndpointRefusesPortAndHost(t *testing.T) {
	for addr, reason := range map[string]string{
		"http://127.0.0.1:0/":         "port 0; want 1 to 65535",
		"http://127.0.0.1:65536/":     "port 65536; want 1 to 65535",
		"https://example.com:99999/x": "port 99999; want 1 to 65535",
		"http://:8545/":               "no host",
		"ws://user@:8545":             "no host",
	} {
		err := membership.CheckEndpoint(addr)
		if !errors.Is(err, membership.ErrConfig) || err == nil || !strings.HasSuffix(err.Error(), ": "+reason) {
			t.Errorf("CheckEndpoint(%q) = %v, want ErrConfig with %q", addr, err, reason)
		}
	}
	for _, addr := range []string{"http://127.0.0.1:1/", "https://example.com:65535", "ws://[::1]:8546", "http://localhost/"} {
		if err := membership.CheckEndpoint(addr); err != nil {
			t.Errorf("CheckEndpoint(%q) = %v, want nil", addr, err)
		}
	}
}

// TestUnavailableErrorOneLine: with every endpoint unreachable, the error
// names each of them on one line, and still matches each one's error.
func TestUnavailableErrorOneLine(t *testing.T) {
	a, b := closedPort(t), closedPort(t)
	cfg := config(&chaintest.Deployment{}, nil, "http://"+a+"/", "http://"+b+"/v3/SECRETKEY")
	cfg.Contract[0] = 1
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := membership.Dial(ctx, cfg)
	if err == nil {
		c.Close()
		t.Fatal("Dial succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "http://"+a+": ") || !strings.Contains(msg, "; http://"+b+": ") {
		t.Errorf("Dial's error is not one line naming both endpoints: %q", msg)
	}
	noSecret(t, "Dial's error", msg)
	var ne net.Error
	if !errors.Is(err, membership.ErrUnavailable) || !errors.As(err, &ne) {
		t.Errorf("Dial: %v, want ErrUnavailable and a net.Error", err)
	}
}

// FuzzRedactError: for any endpoint address Dial takes that has more than
// a scheme and host, an error
// that quotes it, as net/http's do, comes back without it and still
// unwraps to the original.
func FuzzRedactError(f *testing.F) {
	for _, s := range []string{"http://h:1/v3/KEYKEYKEY", "https://u:p@h/?apikey=KEYKEYKEY", "ws://h#fragmentfragment", "http://h/a%41b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, address string) {
		orig := &url.Error{Op: "Post", URL: address, Err: errors.New("EOF")}
		err := membership.RedactError(address, fmt.Errorf("call: %w", orig))
		if !errors.Is(err, orig) {
			t.Fatalf("redacted error does not unwrap to the original: %v", err)
		}
		shown := membership.ShowAddress(address)
		if membership.CheckEndpoint(address) != nil || !strings.Contains(shown, "<redacted>") {
			return // not dialed, or nothing beyond scheme and host
		}
		if strings.Contains(strings.ReplaceAll(err.Error(), shown, ""), address) {
			t.Errorf("RedactError(%q) = %q still quotes it", address, err)
		}
	})
}
