package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/couriernet/courier/node"
)

// TestStoreSyncRelayJitterSources: --store-sync-relay-jitter=0 is no
// jitter, as nwaku takes its uint32 0 (tools/confutils/cli_args.nim),
// from the command line, either environment prefix and either config
// file format; it reaches node.Config as a negative duration, its "none",
// and the node's store-sync service as 0 (the relay_jitter its start
// logs). Not given, it is nwaku's 20 s; a number of seconds is taken as
// such from every source.
func TestStoreSyncRelayJitterSources(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	syncOn := []string{"--store=true", "--store-sync=true"}
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantCfg time.Duration // node.Config.StoreSyncRelayJitter
		wantSvc time.Duration // what store-sync runs with
	}{
		{"flag 0", []string{"--store-sync-relay-jitter=0"}, nil, -1, 0},
		{"flag 0, separate value", []string{"--store-sync-relay-jitter", "0"}, nil, -1, 0},
		{"WAKUNODE2 env 0", nil, map[string]string{"WAKUNODE2_STORE_SYNC_RELAY_JITTER": "0"}, -1, 0},
		{"COURIER env 0", nil, map[string]string{"COURIER_STORE_SYNC_RELAY_JITTER": "0"}, -1, 0},
		{"TOML file 0", []string{"--config-file=" + file("j.toml", "store-sync-relay-jitter = 0\n")}, nil, -1, 0},
		{"YAML file 0", []string{"--config-file=" + file("j.yaml", "store-sync-relay-jitter: 0\n")}, nil, -1, 0},
		{"flag 0 over env 7", []string{"--store-sync-relay-jitter=0"}, map[string]string{"WAKUNODE2_STORE_SYNC_RELAY_JITTER": "7"}, -1, 0},
		{"env 3", nil, map[string]string{"WAKUNODE2_STORE_SYNC_RELAY_JITTER": "3"}, 3 * time.Second, 3 * time.Second},
		{"TOML file 3", []string{"--config-file=" + file("k.toml", "store-sync-relay-jitter = 3\n")}, nil, 3 * time.Second, 3 * time.Second},
		{"not given", nil, nil, 20 * time.Second, 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearNodeEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			o, err := parseNodeFlags(append(append([]string{}, syncOn...), tc.args...))
			if err != nil {
				t.Fatal(err)
			}
			if got := o.cfg.StoreSyncRelayJitter; got != tc.wantCfg {
				t.Fatalf("node.Config.StoreSyncRelayJitter = %v, want %v", got, tc.wantCfg)
			}
			if got := startedJitter(t, o.cfg); got != tc.wantSvc {
				t.Errorf("store-sync started with relay_jitter %v, want %v", got, tc.wantSvc)
			}
		})
	}
}

// startedJitter starts a node on cfg, as parsed, kept on loopback (a free
// port, no REST, metrics or discovery, a temporary data directory), and
// returns the relay_jitter its store-sync service logs at start.
func startedJitter(t *testing.T, cfg node.Config) time.Duration {
	t.Helper()
	cfg.ListenAddress, cfg.TCPPort, cfg.DataDir = "127.0.0.1", 0, t.TempDir()
	cfg.REST, cfg.MetricsServer, cfg.MetricsLogging, cfg.Discovery.Discv5 = false, false, false, false
	rec := &attrRecorder{msg: "store-sync started", key: "relay_jitter"}
	cfg.Logger = slog.New(rec)
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	n.Stop(ctx)
	v, ok := rec.value()
	if !ok {
		t.Fatal(`no "store-sync started" log with relay_jitter`)
	}
	d, ok := v.Any().(time.Duration)
	if !ok {
		t.Fatalf("relay_jitter %v is not a duration", v)
	}
	return d
}

// attrRecorder is a slog.Handler that keeps the value of attribute key
// of the first record whose message is msg, whichever logger derived
// from it (With) logged it.
type attrRecorder struct {
	msg, key string
	mu       sync.Mutex
	got      slog.Value
	found    bool
}

func (h *attrRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *attrRecorder) Handle(_ context.Context, r slog.Record) error {
	if r.Message != h.msg {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != h.key {
			return true
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if !h.found {
			h.got, h.found = a.Value, true
		}
		return false
	})
	return nil
}

func (h *attrRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *attrRecorder) WithGroup(string) slog.Handler      { return h }

func (h *attrRecorder) value() (slog.Value, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got, h.found
}
