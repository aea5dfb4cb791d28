// Package stopsignal catches SIGINT and SIGTERM from the first moments of
// the process, so that a node asked to stop while it is still starting
// stops cleanly, whenever the signal comes.
//
// Go gives a signal to a program only once os/signal's Notify has been
// called; until then SIGINT and SIGTERM kill the process (exit status 130
// or 143 in a shell). The package initialisers of courier's dependencies
// take tens of milliseconds (100 ms and more on a loaded machine), all
// before main runs, so a handler installed in main leaves that long a
// window. This package's initialiser installs the handler instead: it
// imports nothing but the standard library's os/signal and what that
// imports, and Go initialises packages in import-path order as soon as
// their imports are, so it runs among the first (about 1 ms after the
// runtime starts). What is left is the time before the Go runtime runs at
// all, during which the kernel's default action applies.
//
// Exactly one of Context and Release is meant to be called, by main: the
// node takes the signals with Context; every other command gives them
// back with Release.
package stopsignal

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// signals are the signals caught: SIGINT (Ctrl-C) and SIGTERM.
var signals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// caught holds the first signal caught, if any, until Context or Release
// takes it.
var caught = make(chan os.Signal, 1)

func init() { signal.Notify(caught, signals...) }

// Context returns a context that the first SIGINT or SIGTERM since the
// process started ends (at once if one came already), and the func that
// stops catching them. The first signal stops catching them too, so that a
// second one ends the process at once, whatever it is doing.
func Context() (context.Context, context.CancelFunc) {
	signal.Notify(caught, signals...) // again, should Release have run
	ctx, cancel := context.WithCancel(context.Background())
	stop := func() {
		signal.Stop(caught)
		cancel()
	}
	go func() {
		select {
		case <-caught:
		case <-ctx.Done():
		}
		stop()
	}()
	return ctx, stop
}

// Release stops catching the signals, which get their default action
// again, and, when one was caught already, raises it again: the process
// then ends as it would have without this package.
func Release() {
	signal.Stop(caught)
	select {
	case sig := <-caught:
		signal.Reset(sig)
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Signal(sig)
		}
	default:
	}
}
