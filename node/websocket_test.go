package node

import (
	"context"
	cryptotls "crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/transport/websocket"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/internal/testcert"
	"github.com/couriernet/courier/mplex"
)

// A client speaking WebSocket, Noise and mplex only, as js-waku does,
// connects over /ws and, with a self-signed certificate it accepts, over
// /wss; /debug/v1/info lists the address.
func TestWebSocket(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath, err := testcert.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		secure bool
	}{{"ws", false}, {"wss", true}} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{ListenAddress: "127.0.0.1", Relay: true, WebSocket: true, REST: true, RESTAddress: "127.0.0.1"}
			if tt.secure {
				cfg.WebSocketSecure, cfg.WebSocketSecureCertPath, cfg.WebSocketSecureKeyPath = true, certPath, keyPath
			}
			n, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := n.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer n.Stop(ctx)

			var info struct{ ListenAddresses []string }
			resp, err := http.Get("http://" + n.HTTPAddrs()[0] + "/debug/v1/info")
			if err != nil {
				t.Fatal(err)
			}
			err = json.NewDecoder(resp.Body).Decode(&info)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			var wsAddr ma.Multiaddr
			for _, a := range info.ListenAddresses {
				if strings.Contains(a, "/"+tt.name+"/p2p/") {
					wsAddr, _ = ma.NewMultiaddr(a)
				}
			}
			if wsAddr == nil || len(info.ListenAddresses) != 2 {
				t.Fatalf("listen addresses %q: want TCP and one /%s", info.ListenAddresses, tt.name)
			}

			h, _ := newClient(t, libp2p.Muxer(mplex.ID, mplex.DefaultTransport()),
				libp2p.Transport(websocket.New, websocket.WithTLSClientConfig(&cryptotls.Config{InsecureSkipVerify: true})))
			pi, err := peer.AddrInfoFromP2pAddr(wsAddr)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Connect(ctx, *pi); err != nil {
				t.Fatal(err)
			}
			c := h.Network().ConnsToPeer(n.Host().ID())[0]
			if c.ConnState().StreamMultiplexer != mplex.ID || !strings.Contains(c.RemoteMultiaddr().String(), "/"+tt.name) {
				t.Fatalf("connected over %s with %s", c.RemoteMultiaddr(), c.ConnState().StreamMultiplexer)
			}
		})
	}
}

func TestSecureWebSocketConfig(t *testing.T) {
	_, err := New(Config{ListenAddress: "127.0.0.1", WebSocketSecure: true, WebSocketSecureKeyPath: "k.pem"})
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("secure WebSocket without a cert path: %v", err)
	}
	_, err = New(Config{ListenAddress: "127.0.0.1", WebSocketSecure: true, WebSocketSecureKeyPath: "/nonexistent/k.pem", WebSocketSecureCertPath: "/nonexistent/c.pem"})
	if err == nil || !strings.Contains(err.Error(), "secure WebSocket certificate") {
		t.Fatalf("missing files: %v", err)
	}
}
