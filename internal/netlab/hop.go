package netlab

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The hop is the userspace part of every routed link: the router
// namespace sends each packet between two segments to a TUN device, the
// hop reads it, holds it for its link's delay (plus jitter) and writes it
// back, and the kernel routes it on to its segment. The kernel has no
// netem, so this is where latency comes from.

// hopMaxQueued bounds the packets the hop holds at once (about 1 s of a
// 100 Mbit/s link in 1,500-byte packets); a packet past it is dropped and
// counted in HopStats.Overflow.
const hopMaxQueued = 8192

// hopMTU is the TUN device's MTU and the size of the hop's read buffer.
const hopMTU = 1500

// HopStats are the hop's counters since the lab started.
type HopStats struct {
	Forwarded uint64 // packets written back to the router
	Delayed   uint64 // of them, held for a delay
	Reordered uint64 // sent at once by LinkSpec.Reorder, ahead of held ones
	Overflow  uint64 // dropped because hopMaxQueued packets were held
	Malformed uint64 // not IPv4, dropped
}

type heldPacket struct {
	at  time.Time
	seq uint64 // ties broken by arrival, so equal times keep their order
	pkt []byte
}

type packetHeap []heldPacket

func (h packetHeap) Len() int { return len(h) }
func (h packetHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h packetHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *packetHeap) Push(x any)   { *h = append(*h, x.(heldPacket)) }
func (h *packetHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = heldPacket{}
	*h = old[:len(old)-1]
	return x
}

type flowKey [2]netip.Addr // source, destination

// hop serves the TUN device of a lab's router namespace.
type hop struct {
	tun *os.File

	mu     sync.Mutex
	links  map[flowKey]LinkSpec // per direction; missing: def
	def    LinkSpec
	held   packetHeap
	seq    uint64
	last   map[flowKey]time.Time // release time of the flow's last held packet
	rng    *rand.Rand
	wake   chan struct{} // one slot: the writer's next release may be earlier
	closed chan struct{}
	wg     sync.WaitGroup

	forwarded, delayed, reordered, overflow, malformed atomic.Uint64
}

// openHop creates TUN device name in namespace ns and starts serving it.
func openHop(ns, name string, def LinkSpec) (*hop, error) {
	var fd int
	err := inNS(ns, func() error {
		var err error
		fd, err = unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		var req [unix.IFNAMSIZ + 64]byte // struct ifreq: name, then flags
		copy(req[:unix.IFNAMSIZ-1], name)
		*(*uint16)(unsafe.Pointer(&req[unix.IFNAMSIZ])) = unix.IFF_TUN | unix.IFF_NO_PI
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TUNSETIFF, uintptr(unsafe.Pointer(&req[0]))); errno != 0 {
			unix.Close(fd)
			return fmt.Errorf("TUNSETIFF %s: %w", name, errno)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	h := &hop{
		tun:    os.NewFile(uintptr(fd), "/dev/net/tun:"+name), // non-blocking: served by the poller
		links:  map[flowKey]LinkSpec{},
		def:    def,
		last:   map[flowKey]time.Time{},
		rng:    rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		wake:   make(chan struct{}, 1),
		closed: make(chan struct{}),
	}
	h.wg.Add(2)
	go h.readLoop()
	go h.writeLoop()
	return h, nil
}

// close stops both loops and closes the device; held packets are dropped.
func (h *hop) close() {
	select {
	case <-h.closed:
		return
	default:
	}
	close(h.closed)
	h.tun.Close() // wakes the reader
	h.wg.Wait()
}

func (h *hop) setLink(src, dst netip.Addr, spec LinkSpec) {
	h.mu.Lock()
	h.links[flowKey{src, dst}] = spec
	h.mu.Unlock()
}

func (h *hop) stats() HopStats {
	return HopStats{Forwarded: h.forwarded.Load(), Delayed: h.delayed.Load(), Reordered: h.reordered.Load(),
		Overflow: h.overflow.Load(), Malformed: h.malformed.Load()}
}

func (h *hop) readLoop() {
	defer h.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, err := h.tun.Read(buf)
		if err != nil {
			return // closed (or the namespace is gone)
		}
		h.handle(buf[:n])
	}
}

// handle decides when packet pkt (owned by the read loop, copied if held)
// goes back to the router.
func (h *hop) handle(pkt []byte) {
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		h.malformed.Add(1)
		return
	}
	key := flowKey{netip.AddrFrom4([4]byte(pkt[12:16])), netip.AddrFrom4([4]byte(pkt[16:20]))}
	now := time.Now()
	h.mu.Lock()
	spec, ok := h.links[key]
	if !ok {
		spec = h.def
	}
	if spec.Delay <= 0 && spec.Jitter <= 0 {
		h.mu.Unlock()
		h.send(pkt)
		return
	}
	if spec.Reorder > 0 && h.rng.Float64() < spec.Reorder {
		h.mu.Unlock()
		h.reordered.Add(1)
		h.send(pkt)
		return
	}
	if len(h.held) >= hopMaxQueued {
		h.mu.Unlock()
		h.overflow.Add(1)
		return
	}
	d := spec.Delay
	if spec.Jitter > 0 {
		d += time.Duration(h.rng.Int64N(int64(2*spec.Jitter)+1)) - spec.Jitter
	}
	at := now.Add(max(d, 0))
	// A flow keeps its order, as on a real path: jitter spreads the
	// packets of a flow without overtaking (LinkSpec.Reorder does that).
	if prev := h.last[key]; at.Before(prev) {
		at = prev
	}
	h.last[key] = at
	h.seq++
	heap.Push(&h.held, heldPacket{at: at, seq: h.seq, pkt: append([]byte(nil), pkt...)})
	first := h.held[0].seq == h.seq
	h.mu.Unlock()
	h.delayed.Add(1)
	if first {
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}

func (h *hop) send(pkt []byte) {
	if _, err := h.tun.Write(pkt); err == nil {
		h.forwarded.Add(1)
	}
}

func (h *hop) writeLoop() {
	defer h.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		h.mu.Lock()
		var due [][]byte
		now := time.Now()
		for len(h.held) > 0 && !h.held[0].at.After(now) {
			due = append(due, heap.Pop(&h.held).(heldPacket).pkt)
		}
		wait := time.Hour
		if len(h.held) > 0 {
			wait = h.held[0].at.Sub(now)
		}
		h.mu.Unlock()
		for _, p := range due {
			h.send(p)
		}
		timer.Reset(wait)
		select {
		case <-h.closed:
			return
		case <-h.wake:
		case <-timer.C:
		}
	}
}
