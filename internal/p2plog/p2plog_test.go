package p2plog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// Records of go-libp2p's loggers pass at their subsystem's level, fx's
// never; what passes is written by the inner handler with the logger
// attribute.
func TestHandler(t *testing.T) {
	var out bytes.Buffer
	inner := slog.NewTextHandler(&out, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	levels := map[string]slog.Level{"swarm2": slog.LevelDebug}
	h := New(inner, func(system string) slog.Level {
		if l, ok := levels[system]; ok {
			return l
		}
		return slog.LevelError
	})
	config := slog.New(h.WithAttrs([]slog.Attr{slog.String("logger", "p2p-config")}))
	config.With("system", "fx").Error("OnStart hook failed", "error", "failed to listen on any addresses")
	config.Warn("rcmgr limit conflicts with connmgr limit")
	config.Error("no private network protector")
	swarm := slog.New(h.WithAttrs([]slog.Attr{slog.String("logger", "swarm2")}))
	swarm.Debug("dialing", "peer", "x")
	want := strings.Join([]string{
		`level=ERROR msg="no private network protector" logger=p2p-config`,
		`level=DEBUG msg=dialing logger=swarm2 peer=x`,
	}, "\n") + "\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}
