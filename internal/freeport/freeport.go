// Package freeport picks TCP ports on 127.0.0.1 for a test to hand to a
// process that listens on them later: a node started with a port flag, a
// PostgreSQL server, a Node.js script.
//
// A port from a listen on port 0, closed at once, is free only until the
// next bind to port 0 or the next outgoing connection, in this process or
// any other: the kernel hands out its ephemeral ports
// (/proc/sys/net/ipv4/ip_local_port_range) again, and with a test suite's
// packages running at once it often does, before the process that was
// meant to listen there has started. The ports here lie outside that
// range, where the kernel never picks a port on its own, so only a
// process that names the same port can take it between the asking and
// the listen.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// ErrNoPorts is returned when fewer ports than asked are free, or when
// the kernel's ephemeral range leaves too few ports outside it.
var ErrNoPorts = errors.New("freeport: not enough free ports")

const (
	// minPort is the lowest port handed out: above the registered ports
	// that services on a development machine tend to hold (PostgreSQL's
	// 5432, 8080, 9090 and the like).
	minPort = 10000
	// maxPort is the highest TCP port.
	maxPort = 65535
	// minSpan is the fewest ports a range outside the ephemeral one must
	// hold to be used.
	minSpan = 1024
	// rangeFile holds the kernel's ephemeral range on Linux.
	rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"
)

// defaultRange is the ephemeral range assumed where rangeFile cannot be
// read: Linux's default. Elsewhere it may differ (macOS 49152 to 65535,
// FreeBSD 10000 to 65535), so there a pick can fall inside the system's
// range and is only as safe as a listen on port 0.
var defaultRange = [2]int{32768, 60999}

// Ports returns n distinct TCP ports, each free on 127.0.0.1 when asked
// (a listen on it succeeded and was closed), from the larger of the spans
// between minPort and the kernel's ephemeral range and between that range
// and 65535, starting from a random one so that processes asking at once
// seldom try the same. Errors wrap ErrNoPorts.
func Ports(n int) ([]int, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: %d asked", ErrNoPorts, n)
	}
	b, _ := os.ReadFile(rangeFile)
	lo, hi, err := outside(parseRange(b))
	if err != nil {
		return nil, err
	}
	return pick(n, lo, hi, rand.IntN(hi-lo))
}

// Port returns one port as Ports does.
func Port() (int, error) {
	p, err := Ports(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

// Get returns n ports as Ports does, for a test: it fails tb when it
// cannot.
func Get(tb testing.TB, n int) []int {
	tb.Helper()
	ports, err := Ports(n)
	if err != nil {
		tb.Fatal(err)
	}
	return ports
}

// parseRange reads an ip_local_port_range file ("32768\t60999\n"), or
// returns defaultRange for one that is empty or malformed.
func parseRange(b []byte) [2]int {
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return defaultRange
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || lo < 1 || hi < lo || hi > maxPort {
		return defaultRange
	}
	return [2]int{lo, hi}
}

// outside returns the larger span of ports outside the ephemeral range
// eph and at or above minPort, as lo to hi-1; ErrNoPorts if it holds
// fewer than minSpan.
func outside(eph [2]int) (lo, hi int, err error) {
	below := [2]int{minPort, max(minPort, eph[0])}       // minPort to eph[0]-1
	above := [2]int{max(minPort, eph[1]+1), maxPort + 1} // eph[1]+1 to 65535
	span := below
	if above[1]-above[0] > below[1]-below[0] {
		span = above
	}
	if span[1]-span[0] < minSpan {
		return 0, 0, fmt.Errorf("%w: the ephemeral range %d to %d leaves fewer than %d ports from %d to %d outside it",
			ErrNoPorts, eph[0], eph[1], minSpan, minPort, maxPort)
	}
	return span[0], span[1], nil
}

// pick returns n free ports of lo to hi-1, trying them in order from
// lo+first and around.
func pick(n, lo, hi, first int) ([]int, error) {
	span := hi - lo
	if n > span {
		return nil, fmt.Errorf("%w: %d asked, %d in the range", ErrNoPorts, n, span)
	}
	ports := make([]int, 0, n)
	for i := 0; i < span && len(ports) < n; i++ {
		p := lo + (first+i)%span
		if free(p) {
			ports = append(ports, p)
		}
	}
	if len(ports) < n {
		return nil, fmt.Errorf("%w: %d asked, %d free from %d to %d", ErrNoPorts, n, len(ports), lo, hi-1)
	}
	return ports, nil
}

func free(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
