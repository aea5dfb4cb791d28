package netlab

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Prefix starts the name of every namespace and directory a lab creates,
// followed by the creating process's id: cnl-<pid>-<lab>-<host>. A lab
// removes what it created when its test ends; Sweep removes what a
// process that died without cleaning up (kill -9, a crash) left behind.
const Prefix = "cnl-"

// Bounds of one lab.
const (
	// MaxHosts is the most hosts one lab holds.
	MaxHosts = 64
	// MaxSegments is the most segments one lab holds; segment s is the
	// subnet 10.77.s.0/24.
	MaxSegments = 250
	// DefaultTimeout is Config.Timeout's default.
	DefaultTimeout = 10 * time.Minute
)

// LabNet is the only address block a lab uses. Hosts route only it, and
// no namespace has a default route, so no packet can leave for any other
// address.
var LabNet = netip.MustParsePrefix("10.77.0.0/16")

// ErrUnavailable is wrapped by Available's error when the machine cannot
// run a lab.
var ErrUnavailable = errors.New("netlab: network namespaces unavailable")

// Config describes a lab.
type Config struct {
	// Name labels the lab's namespaces: 1 to 8 of [a-z0-9].
	Name string
	// Link is the default of every link between hosts on different
	// segments (delay, jitter, reorder) and of every pair of hosts (loss).
	// Zero: a perfect link.
	Link LinkSpec
	// Timeout bounds the lab's life: after it every process in the lab is
	// killed and the test fails. Default DefaultTimeout.
	Timeout time.Duration
}

var labName = regexp.MustCompile(`^[a-z0-9]{1,8}$`)

// Lab is a set of network namespaces joined by veth pairs to bridges in
// one router namespace, with the processes started in them. Hosts on one
// segment (one bridge) share a LAN; traffic between segments is routed
// through the hop, a TUN device the lab serves, which delays it.
//
// Methods that set the lab up or change it (AddHost, SetLink, Partition,
// ...) fail the test on error, so call them from the test's goroutine.
type Lab struct {
	tb     testing.TB
	name   string
	prefix string // cnl-<pid>-<name>-
	router string // the router namespace
	hop    *hop
	link   LinkSpec // default

	mu       sync.Mutex
	segments []*Segment
	hosts    []*Host
	procs    []*Proc
	disks    []*Disk
	cut      map[*Host][]netip.Addr // Partition: sources each host drops
	links    map[[2]*Host]LinkSpec  // SetLink, keyed (from, to)
	done     bool
	timer    *time.Timer
}

// Segment is a LAN of the lab: a bridge in the router namespace with the
// subnet 10.77.<n>.0/24, the router at .1.
type Segment struct {
	lab   *Lab
	n     int
	hosts int
}

// Host is a network namespace of the lab with one interface (eth0) on a
// segment and a route to LabNet through the router.
type Host struct {
	Name string     // as given to AddHost
	NS   string     // the namespace's name
	IP   netip.Addr // its address on its segment
	lab  *Lab
	seg  *Segment
	idx  int
}

// Available reports whether this process can run a lab: root, ip, tc,
// iptables-restore, /dev/net/tun and network namespaces. It probes once
// per process.
func Available() error {
	availOnce.Do(func() { availErr = probe() })
	return availErr
}

var (
	availOnce sync.Once
	availErr  error
)

func probe() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: needs root (uid %d)", ErrUnavailable, os.Geteuid())
	}
	for _, tool := range []string{"ip", "tc", "iptables-restore", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: %s not found (Debian packages iproute2, iptables, mount)", ErrUnavailable, tool)
		}
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	ns := fmt.Sprintf("%s%d-probe", Prefix, os.Getpid())
	if err := run("", "ip", "netns", "add", ns); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer run("", "ip", "netns", "del", ns)
	if err := nsRun(ns, "*filter\n-A INPUT -m statistic --mode random --probability 0.5 -j DROP\nCOMMIT\n", "iptables-restore"); err != nil {
		return fmt.Errorf("%w: iptables statistic: %v", ErrUnavailable, err)
	}
	return nil
}

// Require skips tb when the machine cannot run a lab, and fails it
// instead when the environment sets CI=true, where the suite must run.
func Require(tb testing.TB) {
	tb.Helper()
	err := Available()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("CI=true and the fault-injection lab cannot run: %v", err)
	}
	tb.Skipf("fault-injection lab skipped: %v (run as root with iproute2 and iptables)", err)
}

// New creates a lab: its router namespace and hop. Everything the lab
// creates is removed by tb.Cleanup, on SIGINT or SIGTERM of the test
// process, or by the next process's Sweep.
func New(tb testing.TB, cfg Config) *Lab {
	tb.Helper()
	Require(tb)
	if !labName.MatchString(cfg.Name) {
		tb.Fatalf("netlab: lab name %q is not 1 to 8 of [a-z0-9]", cfg.Name)
	}
	if err := cfg.Link.validate(); err != nil {
		tb.Fatalf("netlab: default link: %v", err)
	}
	Sweep(tb)
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	l := &Lab{
		tb: tb, name: cfg.Name, link: cfg.Link,
		prefix: fmt.Sprintf("%s%d-%s-", Prefix, os.Getpid(), cfg.Name),
		cut:    map[*Host][]netip.Addr{},
		links:  map[[2]*Host]LinkSpec{},
	}
	l.router = l.prefix + "r"
	register(l)
	tb.Cleanup(l.close)
	if err := l.setupRouter(); err != nil {
		tb.Fatalf("netlab: router: %v", err)
	}
	l.timer = time.AfterFunc(cfg.Timeout, func() {
		tb.Errorf("netlab: lab %s outlived its timeout %v; its processes are killed", cfg.Name, cfg.Timeout)
		l.killAll()
	})
	return l
}

func (l *Lab) setupRouter() error {
	if err := run("", "ip", "netns", "add", l.router); err != nil {
		return err
	}
	for _, kv := range [][2]string{
		{"net/ipv4/ip_forward", "1"},
		{"net/ipv4/conf/all/rp_filter", "0"},
		{"net/ipv4/conf/default/rp_filter", "0"},
		{"net/ipv4/conf/all/send_redirects", "0"},
		{"net/ipv4/conf/default/send_redirects", "0"},
	} {
		if err := writeSysctl(l.router, kv[0], kv[1]); err != nil {
			return err
		}
	}
	h, err := openHop(l.router, "hop0", l.link)
	if err != nil {
		return err
	}
	l.hop = h
	return l.ipBatch(l.router,
		"link set lo up",
		"link set hop0 up mtu "+fmt.Sprint(hopMTU),
		"route add "+LabNet.String()+" dev hop0 table 100",
	)
}

// ipBatch runs ip commands inside namespace ns in one ip -batch.
func (l *Lab) ipBatch(ns string, cmds ...string) error {
	return run(strings.Join(cmds, "\n")+"\n", "ip", "-n", ns, "-batch", "-")
}

// Segment adds a LAN: a bridge in the router namespace.
func (l *Lab) Segment() *Segment {
	l.tb.Helper()
	l.mu.Lock()
	n := len(l.segments) + 1
	if n > MaxSegments {
		l.mu.Unlock()
		l.tb.Fatalf("netlab: more than %d segments", MaxSegments)
	}
	s := &Segment{lab: l, n: n}
	l.segments = append(l.segments, s)
	l.mu.Unlock()
	br := fmt.Sprintf("br%d", n)
	if err := l.ipBatch(l.router,
		"link add "+br+" type bridge",
		fmt.Sprintf("addr add 10.77.%d.1/24 dev %s", n, br),
		"link set "+br+" up",
		// Traffic between segments goes through the hop; what the hop
		// writes back arrives on hop0 and takes the main table.
		fmt.Sprintf("rule add iif %s lookup 100 pref %d", br, 1000+n),
	); err != nil {
		l.tb.Fatalf("netlab: segment %d: %v", n, err)
	}
	if err := writeSysctl(l.router, "net/ipv4/conf/"+br+"/rp_filter", "0"); err != nil {
		l.tb.Fatalf("netlab: segment %d: %v", n, err)
	}
	return s
}

// AddHost adds a host on a segment of its own, so every packet between it
// and any other host crosses the hop.
func (l *Lab) AddHost(name string) *Host {
	l.tb.Helper()
	return l.Segment().AddHost(name)
}

var hostName = regexp.MustCompile(`^[a-z0-9]{1,8}$`)

// AddHost adds a host on segment s: a namespace with loopback up, eth0 at
// 10.77.<s>.<k> and a route to LabNet via the router.
func (s *Segment) AddHost(name string) *Host {
	l := s.lab
	l.tb.Helper()
	if !hostName.MatchString(name) {
		l.tb.Fatalf("netlab: host name %q is not 1 to 8 of [a-z0-9]", name)
	}
	l.mu.Lock()
	for _, h := range l.hosts {
		if h.Name == name {
			l.mu.Unlock()
			l.tb.Fatalf("netlab: host %s added twice", name)
		}
	}
	if len(l.hosts) >= MaxHosts || s.hosts >= 250 {
		l.mu.Unlock()
		l.tb.Fatalf("netlab: more than %d hosts (or 250 on a segment)", MaxHosts)
	}
	s.hosts++
	h := &Host{Name: name, NS: l.prefix + name, lab: l, seg: s, idx: len(l.hosts) + 1,
		IP: netip.AddrFrom4([4]byte{10, 77, byte(s.n), byte(s.hosts + 1)})}
	l.hosts = append(l.hosts, h)
	l.mu.Unlock()
	if err := l.setupHost(h); err != nil {
		l.tb.Fatalf("netlab: host %s: %v", name, err)
	}
	return h
}

func (l *Lab) setupHost(h *Host) error {
	if err := run("", "ip", "netns", "add", h.NS); err != nil {
		return err
	}
	port := fmt.Sprintf("h%d", h.idx)
	if err := run("", "ip", "link", "add", "eth0", "netns", h.NS, "type", "veth", "peer", "name", port, "netns", l.router); err != nil {
		return err
	}
	if err := l.ipBatch(l.router,
		fmt.Sprintf("link set %s master br%d", port, h.seg.n),
		"link set "+port+" up",
	); err != nil {
		return err
	}
	if err := l.ipBatch(h.NS,
		"link set lo up",
		"addr add "+h.IP.String()+"/24 dev eth0",
		"link set eth0 up",
		fmt.Sprintf("route add %s via 10.77.%d.1", LabNet, h.seg.n),
	); err != nil {
		return err
	}
	return l.applyFilter(h)
}

// Hosts returns the lab's hosts in the order they were added.
func (l *Lab) Hosts() []*Host {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*Host(nil), l.hosts...)
}

// HopStats returns the hop's counters.
func (l *Lab) HopStats() HopStats { return l.hop.stats() }

// killAll kills every process of the lab (the timeout's and close's first
// step).
func (l *Lab) killAll() {
	l.mu.Lock()
	procs := append([]*Proc(nil), l.procs...)
	l.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
}

// close removes everything the lab created: processes, namespaces (with
// their interfaces and rules), the hop and the disks.
func (l *Lab) close() {
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		return
	}
	l.done = true
	l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
	l.killAll()
	if l.hop != nil {
		l.hop.close()
	}
	for _, h := range l.Hosts() {
		if err := removeNS(h.NS); err != nil {
			l.tb.Errorf("netlab: %v", err)
		}
	}
	if err := removeNS(l.router); err != nil {
		l.tb.Errorf("netlab: %v", err)
	}
	l.mu.Lock()
	disks := l.disks
	l.mu.Unlock()
	for _, d := range disks {
		if err := d.remove(); err != nil {
			l.tb.Errorf("netlab: %v", err)
		}
	}
	unregister(l)
}

// removeNS kills what still runs in namespace ns and deletes it.
func removeNS(ns string) error {
	if _, err := os.Stat("/run/netns/" + ns); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	killNSProcs(ns)
	return run("", "ip", "netns", "del", ns)
}

// killNSProcs sends SIGKILL to every process in namespace ns.
func killNSProcs(ns string) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(out)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil && pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// Live labs of this process, closed on SIGINT or SIGTERM.
var (
	liveMu    sync.Mutex
	live      = map[*Lab]bool{}
	sigOnce   sync.Once
	sweepOnce sync.Once
)

func register(l *Lab) {
	liveMu.Lock()
	live[l] = true
	liveMu.Unlock()
	sigOnce.Do(func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			sig := <-c
			liveMu.Lock()
			labs := make([]*Lab, 0, len(live))
			for l := range live {
				labs = append(labs, l)
			}
			liveMu.Unlock()
			for _, l := range labs {
				l.closeQuiet()
			}
			signal.Reset(sig)
			syscall.Kill(os.Getpid(), sig.(syscall.Signal))
		}()
	})
}

func unregister(l *Lab) {
	liveMu.Lock()
	delete(live, l)
	liveMu.Unlock()
}

// closeQuiet is close for a process about to die: it reports nothing to
// the test, which may have ended.
func (l *Lab) closeQuiet() {
	l.killAll()
	if l.hop != nil {
		l.hop.close()
	}
	for _, h := range l.Hosts() {
		removeNS(h.NS)
	}
	removeNS(l.router)
	l.mu.Lock()
	disks := l.disks
	l.mu.Unlock()
	for _, d := range disks {
		d.remove()
	}
}
