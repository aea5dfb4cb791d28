//go:build napi

package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/couriernet/courier/libnet"
)

// runtimeMarker names, in the C environment (shared by every Go runtime
// in the process, unlike os.Getenv's copy), the copy of the core that
// loaded first. A Go runtime is one per shared library: two copies of the
// core (two paths) in one process would run two runtimes, each with its
// own signal handlers, which Go does not support.
const runtimeMarker = "COURIER_LIBNET_CORE"

// self identifies this copy of the core in this process: the process id
// (child processes inherit the environment) and the address of a variable.
var self = fmt.Sprintf("%d:%p", os.Getpid(), &logging)

func oneRuntime() error {
	name := C.CString(runtimeMarker)
	defer C.free(unsafe.Pointer(name))
	pid := fmt.Sprintf("%d:", os.Getpid())
	if v := C.getenv(name); v != nil {
		other := C.GoString(v)
		if other == self {
			return nil
		}
		if strings.HasPrefix(other, pid) {
			return fmt.Errorf("another copy of the shardus-net core (a second Go runtime) is loaded in this process (%s=%s): load one copy per process", runtimeMarker, other)
		}
	}
	val := C.CString(self)
	defer C.free(unsafe.Pointer(val))
	C.setenv(name, val, 1)
	return nil
}

// goRuntime sets GOMAXPROCS (procs >= 1) and the Go memory limit in bytes
// (limit >= 1) when given, and returns the values in force as JSON:
// {"maxProcs":n,"memoryLimit":bytes,"numCPU":n,"goVersion":"go1.x"}.
//
//export goRuntime
func goRuntime(procs, limit C.double) *C.char {
	if procs >= 1 {
		runtime.GOMAXPROCS(int(min(float64(procs), 1<<16)))
	}
	if limit >= 1 {
		debug.SetMemoryLimit(int64(min(float64(limit), math.MaxInt64)))
	}
	js, _ := json.Marshal(map[string]any{
		"maxProcs": runtime.GOMAXPROCS(0), "memoryLimit": debug.SetMemoryLimit(-1),
		"numCPU": runtime.NumCPU(), "goVersion": runtime.Version(),
	})
	return C.CString(string(js))
}

// tokens maps the respond tokens of raw asks handed to JavaScript to their
// Respond: at most tokenMax at once (the oldest is forgotten first), each
// usable for tokenLife and once.
type tokens struct {
	mu   sync.Mutex
	next uint64
	lru  *simplelru.LRU[uint64, token]
}

type token struct {
	respond libnet.Respond
	at      time.Time
}

func (t *tokens) init() { t.lru, _ = simplelru.NewLRU[uint64, token](tokenMax, nil) }

func (t *tokens) add(r libnet.Respond) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	t.lru.Add(t.next, token{respond: r, at: time.Now()})
	return t.next
}

// take returns the Respond of id and forgets it, or nil if it is unknown
// or expired.
func (t *tokens) take(id uint64) libnet.Respond {
	t.mu.Lock()
	defer t.mu.Unlock()
	tk, ok := t.lru.Peek(id)
	if !ok {
		return nil
	}
	t.lru.Remove(id)
	if time.Since(tk.at) > tokenLife {
		return nil
	}
	return tk.respond
}
