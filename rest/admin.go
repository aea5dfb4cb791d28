package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ConnectTimeout bounds each dial of POST /admin/v1/peers.
const ConnectTimeout = 10 * time.Second

// logLevels are nwaku's levels (waku/common/logging.nim, chronicles).
var logLevels = []string{"TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "ERROR", "FATAL"}

// postPeers connects to each multiaddr of a JSON array in turn, with
// nwaku's answers (waku/rest_api/endpoint/admin/handlers.nim
// installAdminV1PostPeersHandler; the failure text from
// tests/wakunode_rest/test_rest_admin.nim "Set wrong peer").
func (s *Server) postPeers(w http.ResponseWriter, r *http.Request) {
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
		if err := s.cfg.Admin.ParsePeer(p); err != nil {
			writeText(w, http.StatusBadRequest, "Couldn't parse remote peer info: "+err.Error())
			return
		}
	}
	for i, p := range peers {
		ctx, cancel := context.WithTimeout(r.Context(), ConnectTimeout)
		err := s.cfg.Admin.ConnectPeer(ctx, p)
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
	if err := s.cfg.Admin.SetLogLevel(up); err != nil {
		writeText(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeOK(w)
}
