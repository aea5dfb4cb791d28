package rest

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// adminFake is a node whose admin routes change it: peers with "good" in
// their address connect, others do not.
type adminFake struct {
	*fakeBackend
	connected []string
	level     string
}

func (a *adminFake) ParsePeer(addr string) error {
	if !strings.Contains(addr, "/p2p/") {
		return errors.New("invalid multiaddress")
	}
	return nil
}

func (a *adminFake) ConnectPeer(_ context.Context, addr string) error {
	if !strings.Contains(addr, "good") {
		return errors.New("dial refused")
	}
	a.connected = append(a.connected, addr)
	return nil
}

func (a *adminFake) SetLogLevel(level string) error { a.level = level; return nil }

// TestAdminChanges checks POST /admin/v1/peers and POST
// /admin/v1/log-level/{level} with nwaku's answers
// (waku/rest_api/endpoint/admin/handlers.nim; "Failed to connect to peer at
// index: 0 - <peer>" from tests/wakunode_rest/test_rest_admin.nim "Set
// wrong peer").
func TestAdminChanges(t *testing.T) {
	f := &adminFake{fakeBackend: newFake(t)}
	s := newServer(t, f.fakeBackend, Config{Admin: f})
	const bad = "/ip4/0.0.0.0/tcp/0/p2p/16Uiu2HAm4v86W3bmT1BiH6oSPzcsSr24iDQpSN5Qa992BCjjwgrD"
	const good = "/dns4/good/tcp/1/p2p/16Uiu2HAmVFXtAfSj4EiR7mL2KvL4EE2wztuQgUSBoj2Jx2KeXFLN"
	expect(t, s, "POST", "/admin/v1/peers", `["`+bad+`"]`, 400, "Failed to connect to peer at index: 0 - "+bad)
	expect(t, s, "POST", "/admin/v1/peers", `["`+good+`","`+bad+`"]`, 400, "Failed to connect to peer at index: 1 - "+bad)
	expect(t, s, "POST", "/admin/v1/peers", `["/ip4/1.2.3.4/tcp/1"]`, 400, "Couldn't parse remote peer info: invalid multiaddress")
	expect(t, s, "POST", "/admin/v1/peers", `{"peers":1}`, 400, "Failed to decode request: json: cannot unmarshal object into Go value of type []string")
	expect(t, s, "POST", "/admin/v1/peers", `["`+good+`"]`, 200, "OK")
	if len(f.connected) != 2 {
		t.Errorf("connected %q", f.connected)
	}
	expect(t, s, "POST", "/admin/v1/log-level/debug", "", 200, "OK")
	if f.level != "DEBUG" {
		t.Errorf("level %q", f.level)
	}
	expect(t, s, "POST", "/admin/v1/log-level/VERBOSE", "", 400,
		"Invalid log-level: VERBOSE. Please specify one of TRACE, DEBUG, INFO, NOTICE, WARN, ERROR or FATAL")
	expect(t, s, "POST", "/admin/v1/log-level/%20", "", 400, "Invalid log-level, it can’t be empty")
}
