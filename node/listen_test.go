package node

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/couriernet/courier/internal/testcert"
)

// A configured port in use stops the node with an error naming the flag
// and the port, although go-libp2p starts when any listen address works:
// WebSocket, secure WebSocket, and TCP while WebSocket works.
func TestListenPortInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := held.Addr().(*net.TCPAddr).Port
	certPath, keyPath, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"ws", func(c *Config) { c.WebSocketPort = port }, "--websocket-port " + strconv.Itoa(port)},
		{"wss", func(c *Config) {
			c.WebSocketPort, c.WebSocketSecure, c.WebSocketSecureCertPath, c.WebSocketSecureKeyPath = port, true, certPath, keyPath
		}, "--websocket-port " + strconv.Itoa(port)},
		{"tcp", func(c *Config) { c.TCPPort, c.WebSocketPort = port, 0 }, "--tcp-port " + strconv.Itoa(port)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{ListenAddress: "127.0.0.1", Relay: true, WebSocket: true}
			tt.set(&cfg)
			n, err := New(cfg)
			if err == nil {
				n.Stop(t.Context())
				t.Fatalf("started with port %d in use", port)
			}
			if !strings.Contains(err.Error(), tt.want+": cannot listen on ") || !strings.Contains(err.Error(), "address already in use") {
				t.Fatalf("error %q; want it to name %s and the reason", err, tt.want)
			}
		})
	}
	// With free ports the same configuration starts.
	n, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, WebSocket: true, WebSocketPort: 0})
	if err != nil {
		t.Fatal(err)
	}
	n.Stop(t.Context())
}

// The REST API and metrics servers listen in the family of the address
// they are given only, as nwaku binds the IpAddress of --rest-address and
// --metrics-server-address: 0.0.0.0 takes no IPv6 connection and :: no
// IPv4 one.
func TestHTTPListensInAddressFamily(t *testing.T) {
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		ln.Close()
	}
	n, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, REST: true, RESTAddress: "0.0.0.0", MetricsServer: true, MetricsAddress: "::"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(t.Context())
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	addrs := n.HTTPAddrs()
	if len(addrs) != 2 {
		t.Fatalf("HTTPAddrs %q, want the REST and metrics servers'", addrs)
	}
	for _, tt := range []struct {
		what, addr, reach, miss string
	}{
		{"REST on 0.0.0.0", addrs[0], "127.0.0.1", "::1"},
		{"metrics on ::", addrs[1], "::1", "127.0.0.1"},
	} {
		_, port, err := net.SplitHostPort(tt.addr)
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("tcp", net.JoinHostPort(tt.reach, port))
		if err != nil {
			t.Errorf("%s: %s not reachable: %v", tt.what, tt.reach, err)
		} else {
			c.Close()
		}
		if c, err := net.Dial("tcp", net.JoinHostPort(tt.miss, port)); err == nil {
			c.Close()
			t.Errorf("%s: %s reachable, want only the given family", tt.what, tt.miss)
		}
	}
}
