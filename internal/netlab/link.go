package netlab

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// LinkSpec is what a link does to the packets it carries, in one
// direction.
type LinkSpec struct {
	// Delay is the one-way latency the hop adds to each packet. Only links
	// between segments have it: a segment is a LAN.
	Delay time.Duration
	// Jitter spreads each packet's delay uniformly over Delay±Jitter. A
	// flow (source, destination) keeps its order, as on a real path: a
	// packet is never released before the flow's previous one.
	Jitter time.Duration
	// Reorder is the fraction (0 to 1) of a delayed link's packets that the
	// hop sends at once, overtaking the held ones.
	Reorder float64
	// Loss is the fraction (0 to 1) of packets dropped at random on
	// arrival (iptables statistic --mode random in the receiver's
	// namespace), on any link, LAN or routed.
	Loss float64
}

func (s LinkSpec) validate() error {
	switch {
	case s.Delay < 0, s.Jitter < 0:
		return fmt.Errorf("negative delay %v or jitter %v", s.Delay, s.Jitter)
	case s.Jitter > s.Delay:
		return fmt.Errorf("jitter %v exceeds delay %v", s.Jitter, s.Delay)
	case s.Reorder < 0 || s.Reorder > 1, s.Loss < 0 || s.Loss > 1:
		return fmt.Errorf("reorder %v or loss %v outside [0, 1]", s.Reorder, s.Loss)
	}
	return nil
}

// SetLink sets the link between a and b, both directions, in place of
// the lab's default.
func (l *Lab) SetLink(a, b *Host, spec LinkSpec) {
	l.tb.Helper()
	if err := spec.validate(); err != nil {
		l.tb.Fatalf("netlab: link %s-%s: %v", a.Name, b.Name, err)
	}
	if a.seg == b.seg && (spec.Delay > 0 || spec.Reorder > 0) {
		l.tb.Fatalf("netlab: link %s-%s: hosts on one segment share a LAN: no delay", a.Name, b.Name)
	}
	l.mu.Lock()
	l.links[[2]*Host{a, b}] = spec
	l.links[[2]*Host{b, a}] = spec
	l.mu.Unlock()
	l.hop.setLink(a.IP, b.IP, spec)
	l.hop.setLink(b.IP, a.IP, spec)
	for _, h := range []*Host{a, b} {
		if err := l.applyFilter(h); err != nil {
			l.tb.Fatalf("netlab: link %s-%s: %v", a.Name, b.Name, err)
		}
	}
}

// Partition cuts the lab into groups: from then on no packet passes
// between hosts of different groups (each drops what arrives from the
// others); hosts in no group keep every link. Established TCP connections
// stall as on a real partition, they are not reset. Heal undoes it.
func (l *Lab) Partition(groups ...[]*Host) {
	l.tb.Helper()
	cut := map[*Host][]netip.Addr{}
	for i, g := range groups {
		for j, other := range groups {
			if i == j {
				continue
			}
			for _, h := range g {
				for _, o := range other {
					cut[h] = append(cut[h], o.IP)
				}
			}
		}
	}
	l.setCut(cut)
}

// Heal ends a Partition.
func (l *Lab) Heal() {
	l.tb.Helper()
	l.setCut(map[*Host][]netip.Addr{})
}

func (l *Lab) setCut(cut map[*Host][]netip.Addr) {
	l.mu.Lock()
	old := l.cut
	l.cut = cut
	l.mu.Unlock()
	for _, h := range l.Hosts() {
		if len(old[h]) == 0 && len(cut[h]) == 0 {
			continue
		}
		if err := l.applyFilter(h); err != nil {
			l.tb.Fatalf("netlab: partition: %v", err)
		}
	}
}

// applyFilter writes host h's INPUT rules: loopback passes, then the
// partition's drops, then each link's random loss.
func (l *Lab) applyFilter(h *Host) error {
	l.mu.Lock()
	var b strings.Builder
	b.WriteString("*filter\n:INPUT ACCEPT [0:0]\n:NETLAB-CUT - [0:0]\n:NETLAB-LOSS - [0:0]\n")
	b.WriteString("-A INPUT -i lo -j ACCEPT\n-A INPUT -j NETLAB-CUT\n-A INPUT -j NETLAB-LOSS\n")
	for _, src := range l.cut[h] {
		fmt.Fprintf(&b, "-A NETLAB-CUT -s %s -j DROP\n", src)
	}
	for key, spec := range l.links {
		if key[1] != h {
			continue
		}
		src := key[0].IP
		if spec.Loss > 0 {
			fmt.Fprintf(&b, "-A NETLAB-LOSS -s %s -m statistic --mode random --probability %.6f -j DROP\n", src, spec.Loss)
		}
		fmt.Fprintf(&b, "-A NETLAB-LOSS -s %s -j RETURN\n", src)
	}
	if l.link.Loss > 0 {
		fmt.Fprintf(&b, "-A NETLAB-LOSS -s %s -m statistic --mode random --probability %.6f -j DROP\n", LabNet, l.link.Loss)
	}
	b.WriteString("COMMIT\n")
	l.mu.Unlock()
	// Without --noflush the filter table is replaced whole, atomically.
	return nsRun(h.NS, b.String(), "iptables-restore")
}

// SetRate limits host h's bandwidth to bitsPerSecond each way with a
// token bucket (tc tbf) on both ends of its veth pair; 0 removes the
// limit. The bucket holds 10 ms of traffic (at least 16 KiB) and queues at
// most 200 ms before dropping.
func (l *Lab) SetRate(h *Host, bitsPerSecond int64) {
	l.tb.Helper()
	ends := [][2]string{{h.NS, "eth0"}, {l.router, fmt.Sprintf("h%d", h.idx)}}
	for _, e := range ends {
		var err error
		if bitsPerSecond <= 0 {
			err = run("", "ip", "netns", "exec", e[0], "tc", "qdisc", "del", "dev", e[1], "root")
			if err != nil && strings.Contains(err.Error(), "No such file") {
				err = nil // no limit was set
			}
		} else {
			burst := max(bitsPerSecond/8/100, 16*1024)
			err = nsRun(e[0], "", "tc", "qdisc", "replace", "dev", e[1], "root", "tbf",
				"rate", fmt.Sprintf("%dbit", bitsPerSecond), "burst", fmt.Sprint(burst), "latency", "200ms")
		}
		if err != nil {
			l.tb.Fatalf("netlab: rate of %s: %v", h.Name, err)
		}
	}
}
