// Package freeport picks TCP ports on 127.0.0.1 for a test to hand to a
// process that listens on them later: a node started with a port flag, a
// PostgreSQL server, a Node.js script.
//
// A port from a listen on port 0, closed at once, is free only until the
// next bind to port 0 or the next outgoing connection, in this process or
// any other: the kernel hands out its ephemeral ports
// (/proc/sys/net/ipv4/ip_local_port_range) again, and with a test suite's
// packages running at once it often does, before the process that was
// meant to listen there has started. The ports here lie below that range,
// where the kernel never picks a port on its own, so only a process that
// names the same port can take it between the asking and the listen.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// ErrNoPorts is returned when fewer ports than asked are free.
var ErrNoPorts = errors.New("freeport: not enough free ports")

// minPort is the lowest port handed out: above the registered ports that
// services on a development machine tend to hold (PostgreSQL's 5432,
// 8080, 9090 and the like).
const minPort = 10000

// defaultEphemeralLow is the start of the kernel's ephemeral range when
// it cannot be read: Linux's default (32768 to 60999); other systems start
// theirs higher (49152 on macOS and FreeBSD).
const defaultEphemeralLow = 32768

// Ports returns n distinct TCP ports, each free on 127.0.0.1 when asked
// (a listen on it succeeded and was closed), from minPort to just below
// the kernel's ephemeral range, starting from a random one so that
// processes asking at once seldom try the same. Errors wrap ErrNoPorts.
func Ports(n int) ([]int, error) {
	hi := ephemeralLow()
	return pick(n, rand.IntN(hi-minPort), hi)
}

// pick returns n free ports of minPort to hi-1, trying them in order from
// the first-th and around.
func pick(n, first, hi int) ([]int, error) {
	span := hi - minPort
	if n > span {
		return nil, fmt.Errorf("%w: %d asked, %d in the range", ErrNoPorts, n, span)
	}
	ports := make([]int, 0, n)
	for i := 0; i < span && len(ports) < n; i++ {
		p := minPort + (first+i)%span
		if free(p) {
			ports = append(ports, p)
		}
	}
	if len(ports) < n {
		return nil, fmt.Errorf("%w: %d asked, %d free from %d to %d", ErrNoPorts, n, len(ports), minPort, hi-1)
	}
	return ports, nil
}

// Port returns one port as Ports does.
func Port() (int, error) {
	p, err := Ports(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

func free(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// ephemeralLow reads the first port of the kernel's ephemeral range, or
// defaultEphemeralLow; it never returns less than minPort+1024, so that
// the range here is never empty.
func ephemeralLow() int {
	lo := defaultEphemeralLow
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				lo = v
			}
		}
	}
	return max(lo, minPort+1024)
}
