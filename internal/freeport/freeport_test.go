package freeport

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPorts asks for ports: they are distinct, outside the kernel's
// ephemeral range as read here from its file, and free, so a listen on
// each succeeds.
func TestPorts(t *testing.T) {
	lo, hi := 0, -1 // no range known: every port is outside
	if b, err := os.ReadFile(rangeFile); err == nil {
		var f [2]int
		for i, s := range strings.Fields(string(b))[:2] {
			f[i], _ = strconv.Atoi(s)
		}
		lo, hi = f[0], f[1]
	}
	ports, err := Ports(8)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 8 {
		t.Fatalf("%d ports, want 8", len(ports))
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d twice in %v", p, ports)
		}
		seen[p] = true
		if p < minPort || p > maxPort || p >= lo && p <= hi {
			t.Fatalf("port %d inside the ephemeral range %d to %d, or below %d", p, lo, hi, minPort)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		l.Close()
	}
}

// TestOutside picks the span outside ephemeral ranges as kernels set
// them, from the range file's text.
func TestOutside(t *testing.T) {
	for _, tc := range []struct {
		file   string
		lo, hi int // the span, lo to hi-1; 0, 0 for ErrNoPorts
	}{
		{"32768\t60999\n", 10000, 32768}, // Linux's default: below it
		{"49152 65535\n", 10000, 49152},  // macOS's numbers
		{"1024 30000\n", 30001, 65536},   // low range: above it
		{"20000 64000\n", 10000, 20000},  // below holds more than above
		{"1024 65535\n", 0, 0},           // all of it ephemeral
		{"10500 65000\n", 0, 0},          // 500 and 535 ports: too few
		{"", 10000, 32768},               // unreadable: Linux's default
		{"x y\n", 10000, 32768},          // malformed
		{"60999 32768\n", 10000, 32768},  // reversed
		{"1 2 3\n", 10000, 32768},        // three fields
	} {
		lo, hi, err := outside(parseRange([]byte(tc.file)))
		if tc.hi == 0 {
			if !errors.Is(err, ErrNoPorts) {
				t.Errorf("%q: %d to %d, %v; want ErrNoPorts", tc.file, lo, hi, err)
			}
			continue
		}
		if err != nil || lo != tc.lo || hi != tc.hi {
			t.Errorf("%q: %d to %d, %v; want %d to %d", tc.file, lo, hi, err, tc.lo, tc.hi)
		}
	}
}

// TestPickSkipsHeld holds a port and has it tried first: it is skipped,
// and the search goes on, wrapping to the range's start.
func TestPickSkipsHeld(t *testing.T) {
	p, err := Port()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lo := p - 100
	ports, err := pick(3, lo, p+1, 100) // p is the range's last port, tried first
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range ports {
		if q == p || q < lo || q >= p {
			t.Fatalf("got %v with %d held, want ports from %d to %d", ports, p, lo, p-1)
		}
	}
	if ports[0] > ports[1] || ports[1] > ports[2] {
		t.Fatalf("got %v, want the range's first free ports in order", ports)
	}
}

// TestPickNoneFree asks a range of one port, held: no port comes back.
func TestPickNoneFree(t *testing.T) {
	if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(minPort)); err == nil {
		defer l.Close()
	} // else another process holds it, which does as well
	if ports, err := pick(1, minPort, minPort+1, 0); !errors.Is(err, ErrNoPorts) {
		t.Fatalf("got %v, %v; want ErrNoPorts", ports, err)
	}
}

// TestPortsBadCounts asks for a negative count and for more ports than
// any range holds.
func TestPortsBadCounts(t *testing.T) {
	for _, n := range []int{-1, maxPort + 1} {
		if _, err := Ports(n); !errors.Is(err, ErrNoPorts) {
			t.Errorf("Ports(%d): %v, want ErrNoPorts", n, err)
		}
	}
}
