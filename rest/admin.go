package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// AdminBackend is what a Backend may also provide for the admin routes
// that change the node: POST /admin/v1/peers and POST
// /admin/v1/log-level/{level}. Without it they answer 503.
type AdminBackend interface {
	// ParsePeer checks one multiaddr with /p2p/<peer id>.
	ParsePeer(addr string) error
	// ConnectPeer dials addr (checked by ParsePeer) within ctx and keeps
	// the peer in the peer store, origin Static, as nwaku's connectPeer.
	ConnectPeer(ctx context.Context, addr string) error
	// SetLogLevel sets the node's log level to one of nwaku's names
	// (TRACE, DEBUG, INFO, NOTICE, WARN, ERROR, FATAL), given upper case.
	SetLogLevel(level string) error
}

// ConnectTimeout bounds each dial of POST /admin/v1/peers.
const ConnectTimeout = 10 * time.Second

// logLevels are nwaku's levels (waku/common/logging.nim, chronicles).
var logLevels = []string{"TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "ERROR", "FATAL"}

func (s *Server) admin(w http.ResponseWriter) (AdminBackend, bool) {
	ab, ok := s.b.(AdminBackend)
	if !ok {
		writeText(w, http.StatusServiceUnavailable, "Error: this node does not support changes through the admin API")
	}
	return ab, ok
}

// postPeers connects to each multiaddr of a JSON array in turn, with
// nwaku's answers (waku/rest_api/endpoint/admin/handlers.nim
// installAdminV1PostPeersHandler; the failure text from
// tests/wakunode_rest/test_rest_admin.nim "Set wrong peer").
func (s *Server) postPeers(w http.ResponseWriter, r *http.Request) {
	ab, ok := s.admin(w)
	if !ok {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var peers []string
	if err := json.Unmarshal(body, &peers); err != nil {
		writeText(w, http.StatusBadRequest, "Failed to decode request: "+err.Error())
		return
	}
	for _, p := range peers {
		if err := ab.ParsePeer(p); err != nil {
			writeText(w, http.StatusBadRequest, "Couldn't parse remote peer info: "+err.Error())
			return
		}
	}
	for i, p := range peers {
		ctx, cancel := context.WithTimeout(r.Context(), ConnectTimeout)
		err := ab.ConnectPeer(ctx, p)
		cancel()
		if err != nil {
			s.log.Info("admin: connect failed", "peer", p, "err", err)
			writeText(w, http.StatusBadRequest, fmt.Sprintf("Failed to connect to peer at index: %d - %s", i, p))
			return
		}
	}
	writeOK(w)
}

// postLogLevel sets the node's log level, with nwaku's texts
// (installAdminV1PostLogLevelHandler).
func (s *Server) postLogLevel(w http.ResponseWriter, r *http.Request) {
	ab, ok := s.admin(w)
	if !ok {
		return
	}
	level := strings.TrimSpace(r.PathValue("logLevel"))
	if level == "" {
		writeText(w, http.StatusBadRequest, "Invalid log-level, it can’t be empty")
		return
	}
	up := strings.ToUpper(level)
	valid := false
	for _, l := range logLevels {
		valid = valid || l == up
	}
	if !valid {
		writeText(w, http.StatusBadRequest, fmt.Sprintf("Invalid log-level: %s. Please specify one of TRACE, DEBUG, INFO, NOTICE, WARN, ERROR or FATAL", level))
		return
	}
	if err := ab.SetLogLevel(up); err != nil {
		writeText(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeOK(w)
}
