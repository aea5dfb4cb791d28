// Package p2plog routes go-libp2p's logs into the node's own logger.
package p2plog

import (
	"context"
	"log/slog"

	"github.com/libp2p/go-libp2p/gologshim"
)

// Install makes every go-libp2p logger write through inner (the node's
// handler, so one format for the whole log) at the level GOLOG_LOG_LEVEL
// gives its subsystem (go-libp2p's default: error), and drops the records
// of go-libp2p's dependency-injection framework (uber's fx), whose start
// failures only repeat, in three lines, the error libp2p.New returns.
// go-libp2p offers no option for fx's logger (config.go addTransports
// installs it), so this goes through gologshim.SetDefaultHandler, which
// takes effect for loggers that have not logged yet: call it before
// starting a host.
func Install(inner slog.Handler) {
	gologshim.SetDefaultHandler(New(inner, gologshim.ConfigFromEnv().LevelForSystem))
}

// New returns the handler Install sets; level gives the minimum level of a
// subsystem, named by the "logger" attribute go-libp2p adds to each.
func New(inner slog.Handler, level func(system string) slog.Level) slog.Handler {
	return &handler{inner: inner, level: level}
}

type handler struct {
	inner  slog.Handler
	level  func(string) slog.Level
	system string
	fx     bool
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool {
	return !h.fx && l >= h.level(h.system)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	if !h.Enabled(ctx, r.Level) {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	for _, a := range attrs {
		switch {
		case a.Key == "logger":
			c.system = a.Value.String()
		case a.Key == "system" && a.Value.String() == "fx":
			c.fx = true
		}
	}
	c.inner = h.inner.WithAttrs(attrs)
	return &c
}

func (h *handler) WithGroup(name string) slog.Handler {
	c := *h
	c.inner = h.inner.WithGroup(name)
	return &c
}
