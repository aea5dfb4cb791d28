package freeport

import (
	"errors"
	"net"
	"strconv"
	"testing"
)

// TestPorts asks for ports: they are distinct, below the kernel's
// ephemeral range, and free, so a listen on each succeeds.
func TestPorts(t *testing.T) {
	ports, err := Ports(8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d twice in %v", p, ports)
		}
		seen[p] = true
		if p < minPort || p >= ephemeralLow() {
			t.Fatalf("port %d outside %d to %d", p, minPort, ephemeralLow()-1)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		l.Close()
	}
}

// TestPortsSkipsHeld holds a port and has it tried first: it is skipped,
// and the search goes on from the next one, wrapping past the range's end.
func TestPortsSkipsHeld(t *testing.T) {
	p, err := Port()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ports, err := pick(1, p-minPort, p+1) // p is the range's last port
	if err != nil {
		t.Fatal(err)
	}
	if ports[0] == p || ports[0] < minPort || ports[0] >= p {
		t.Fatalf("got %v with %d held, want a port from %d to %d", ports, p, minPort, p-1)
	}
}

// TestPickNoneFree asks a range of one port, held: no port comes back.
func TestPickNoneFree(t *testing.T) {
	if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(minPort)); err == nil {
		defer l.Close()
	} // else another process holds it, which does as well
	if ports, err := pick(1, 0, minPort+1); !errors.Is(err, ErrNoPorts) {
		t.Fatalf("got %v, %v; want ErrNoPorts", ports, err)
	}
}

// TestPortsTooMany asks for more ports than the range holds.
func TestPortsTooMany(t *testing.T) {
	if _, err := Ports(ephemeralLow() - minPort + 1); !errors.Is(err, ErrNoPorts) {
		t.Fatalf("err %v, want ErrNoPorts", err)
	}
}
