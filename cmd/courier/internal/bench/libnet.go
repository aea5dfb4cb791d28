package bench

import (
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/couriernet/courier/libnet"
)

// LibnetConfig configures the libnet scenario (docs/benchmark.md).
type LibnetConfig struct {
	N      int   // measured messages per row; 0 means 1000
	Warmup int   // warm-up messages per row, not measured; 0 means none
	Seed   int64 // seeds payload bytes and the mix order (see Workload)
	Sign   bool  // sign the raw lane too (Config.SignRaw); the legacy lane always is
	// Sizes selects rows by payload size: "1kB", "10kB", "100kB", "mix"
	// (the seed mix, 25/50/25 % of 10,000/50,000/150,000 bytes); nil = all.
	Sizes []string
	// Progress, if set, is called after each row with rows done and total.
	Progress func(done, total int)
}

const (
	libnetWindow  = 32 // tells in flight (sent, handler not yet run)
	libnetTellers = 4  // goroutines calling Tell
	libnetAskers  = 16 // goroutines calling Ask, one ask in flight each
)

// libnetAskTimeout is the bench endpoints' Config.AskTimeout. The library
// default (5 s, shardus-core's network timeout) suits live networks; here
// 16 askers each keep a 150 kB legacy-lane ask in flight, and on a loaded
// 2-core machine (or under -race) one can take longer than 5 s. The bench
// measures that latency instead of failing on it; a context deadline given
// to RunLibnet still applies.
const libnetAskTimeout = 60 * time.Second

var libnetSizes = []string{"1kB", "10kB", "100kB", "mix"}

// RunLibnet runs lib-net's legacy lane against the raw lane, tell and ask
// (the reply echoes the payload), on two endpoints over 127.0.0.1, then a
// plain loopback TCP stream of 100 kB frames. Rows are named
// libnet-<lane>-<op>-<size> and tcp-baseline-100kB. A tell is done when the
// receiver's handler has run; an ask when its reply is back. The legacy
// lane is signed (lib-net reads no unsigned headered frame); the raw lane
// only with Sign. wire_bytes_per_msg counts the bytes the sending endpoint wrote per
// message (requests only); alloc figures are process-wide (both endpoints).
func RunLibnet(ctx context.Context, cfg LibnetConfig) ([]Row, error) {
	if cfg.N <= 0 {
		cfg.N = 1000
	}
	sizes := cfg.Sizes
	if sizes == nil {
		sizes = libnetSizes
	}
	for _, s := range sizes {
		if _, err := libnetProfile(s); err != nil {
			return nil, err
		}
	}
	total := 4*len(sizes) + 1
	var rows []Row
	for _, lane := range []libnet.Lane{libnet.LaneRaw, libnet.LaneLegacy} {
		for _, op := range []string{"tell", "ask"} {
			for _, size := range sizes {
				if err := ctx.Err(); err != nil {
					return rows, err
				}
				r, err := runLibnetRow(ctx, cfg, lane, op, size)
				if err != nil {
					return rows, fmt.Errorf("libnet-%s-%s-%s: %w", lane, op, size, err)
				}
				rows = append(rows, r)
				if cfg.Progress != nil {
					cfg.Progress(len(rows), total)
				}
			}
		}
	}
	r, err := libnetTCPBaseline(cfg.N, cfg.Seed)
	if err != nil {
		return rows, fmt.Errorf("tcp-baseline-100kB: %w", err)
	}
	rows = append(rows, r)
	if cfg.Progress != nil {
		cfg.Progress(len(rows), total)
	}
	return rows, nil
}

// libnetProfile returns the payload profile of a libnet size name.
func libnetProfile(name string) (Profile, error) {
	switch name {
	case "1kB", "10kB", "100kB":
		return ParseProfile(name)
	case "mix":
		return ParseProfile(SeedProfile)
	}
	return Profile{}, fmt.Errorf("bench: unknown libnet size %q (want 1kB, 10kB, 100kB or mix)", name)
}

// libnetConfig is the configuration both endpoints of a row share.
func libnetConfig(cfg LibnetConfig, lane libnet.Lane) libnet.Config {
	base := libnet.Config{ListenAddr: "127.0.0.1:0", Lane: lane, NoLearn: true, QueueLen: 1024,
		AskTimeout: libnetAskTimeout}
	if cfg.Sign || lane == libnet.LaneLegacy { // the legacy lane is always signed, as lib-net requires
		seed := make([]byte, ed25519.SeedSize)
		binary.LittleEndian.PutUint64(seed, uint64(cfg.Seed))
		base.HashKey = make([]byte, 32)
		base.SigningKey = ed25519.NewKeyFromSeed(seed)
	}
	if cfg.Sign {
		base.SignRaw, base.RequireSigned = true, true
	}
	return base
}

func libnetPair(cfg LibnetConfig, lane libnet.Lane) (a, b *libnet.Endpoint, err error) {
	base := libnetConfig(cfg, lane)
	ca, cb := base, base
	ca.SenderID, cb.SenderID = "bench-a", "bench-b"
	if a, err = libnet.New(ca); err != nil {
		return nil, nil, err
	}
	if b, err = libnet.New(cb); err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, b, nil
}

// libnetRun is the state of one row's phase.
type libnetRun struct {
	a, b   *libnet.Endpoint
	w      *Workload
	op     string
	starts []atomic.Int64 // send time of message i, Unix ns
	hist   *hdrhistogram.Histogram
	hmu    sync.Mutex
	done   atomic.Int64
	doneCh chan struct{}
	window chan struct{}
	offset int // index of the phase's first message
	end    int // index after the phase's last message
}

func runLibnetRow(ctx context.Context, cfg LibnetConfig, lane libnet.Lane, op, size string) (Row, error) {
	n := cfg.N
	prof, err := libnetProfile(size)
	if err != nil {
		return Row{}, err
	}
	w := NewWorkload(prof, cfg.Seed, cfg.Warmup, n, "")
	a, b, err := libnetPair(cfg, lane)
	if err != nil {
		return Row{}, err
	}
	defer b.Close()
	defer a.Close()
	run := &libnetRun{a: a, b: b, w: w, op: op, starts: make([]atomic.Int64, w.Total())}
	b.Handle("bench", run.handle, libnet.RouteOptions{})
	if err := run.phase(ctx, 0, cfg.Warmup); err != nil {
		return Row{}, err
	}
	sa0, sb0 := a.Stats(), b.Stats()
	m0 := readMem()
	peak := libnetPeakSampler()
	cpu0, flt0 := processUsage()
	t0 := time.Now()
	if err := run.phase(ctx, cfg.Warmup, n); err != nil {
		return Row{}, err
	}
	wall := time.Since(t0)
	cpu1, flt1 := processUsage()
	cpu, flt := cpu1-cpu0, flt1-flt0
	peakLive, peakAlloc := peak()
	m1 := readMem()
	sa1, sb1 := a.Stats(), b.Stats()

	row := NewRow(fmt.Sprintf("libnet-%s-%s-%s", lane, op, size), prof.Name, n)
	fillLibnetRow(&row, wall, run.hist, m0, m1, float64(w.MeasuredPayloadBytes())/float64(n))
	row.CPUNsPerMsg = float64(cpu) / float64(n)
	row.MinorFaultsPerMsg = float64(flt) / float64(n)
	row.PeakHeapMB, row.PeakHeapAllocMB = peakLive/1e6, peakAlloc/1e6
	fn := float64(n)
	row.WireBytesPerMsg = float64(sa1.Sent.Bytes-sa0.Sent.Bytes) / fn
	row.Base64OpsPerMsg = float64(sa1.Base64Ops-sa0.Base64Ops+sb1.Base64Ops-sb0.Base64Ops) / fn
	row.JSONOpsPerMsg = float64(sa1.JSONOps-sa0.JSONOps+sb1.JSONOps-sb0.JSONOps) / fn
	return row, nil
}

// fillLibnetRow fills the timing and allocation cells of row.
func fillLibnetRow(row *Row, wall time.Duration, h *hdrhistogram.Histogram, m0, m1 memSample, meanPayload float64) {
	fn := float64(row.Msgs)
	row.WallMs = float64(wall) / float64(time.Millisecond)
	row.MsgPerS = fn / wall.Seconds()
	if h != nil {
		row.P50Ns, row.P99Ns = float64(h.ValueAtQuantile(50)), float64(h.ValueAtQuantile(99))
	}
	row.AllocBytesPerMsg = float64(m1.allocBytes-m0.allocBytes) / fn
	row.AllocsPerMsg = float64(m1.allocObjects-m0.allocObjects) / fn
	row.GCCollections = float64(m1.gcCycles - m0.gcCycles)
	row.PayloadCopiesPerMsg = row.AllocBytesPerMsg / meanPayload
}

// phase sends count messages starting at index first and waits until all
// are done.
func (r *libnetRun) phase(ctx context.Context, first, count int) error {
	if count == 0 {
		return nil
	}
	r.hist = hdrhistogram.New(1, int64(time.Minute), 3)
	r.offset, r.end = first, first+count
	r.doneCh, r.window = make(chan struct{}), make(chan struct{}, libnetWindow)
	r.done.Store(0)
	var next atomic.Int64
	next.Store(int64(first) - 1)
	errs := make(chan error, libnetAskers)
	workers := libnetTellers
	if r.op == "ask" {
		workers = libnetAskers
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			scratch := make([]byte, 150_000)
			for {
				i := int(next.Add(1))
				if i >= first+count {
					return
				}
				if err := r.send(ctx, scratch, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	select {
	case <-r.doneCh:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *libnetRun) send(ctx context.Context, scratch []byte, i int) error {
	p := scratch[:r.w.Size(i)]
	r.w.FillPayload(p, i)
	m := libnet.Msg{Route: "bench", Payload: p}
	peer := r.b.Addr()
	if r.op == "tell" {
		select {
		case r.window <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		r.starts[i].Store(time.Now().UnixNano())
		return r.a.Tell(ctx, peer, m)
	}
	t := time.Now()
	reply, err := r.a.Ask(ctx, peer, m)
	if err != nil {
		return err
	}
	if len(reply.Payload) != len(p) || binary.BigEndian.Uint64(reply.Payload) != uint64(i) {
		return fmt.Errorf("reply %d does not echo the payload", i)
	}
	r.record(time.Since(t))
	r.finish()
	return nil
}

func (r *libnetRun) record(d time.Duration) {
	r.hmu.Lock()
	_ = r.hist.RecordValue(int64(d))
	r.hmu.Unlock()
}

func (r *libnetRun) finish() {
	if int(r.done.Add(1)) == r.end-r.offset {
		close(r.doneCh)
	}
}

// handle is the receiver: an ask is echoed, a tell is done here.
func (r *libnetRun) handle(h *libnet.Header, p []byte, respond libnet.Respond) {
	if h.Dir == libnet.DirAsk {
		_ = respond(p)
		return
	}
	i := int(binary.BigEndian.Uint64(p))
	r.record(time.Duration(time.Now().UnixNano() - r.starts[i].Load()))
	<-r.window
	r.finish()
}

// libnetPeakSampler samples the live heap and the heap with garbage every
// 5 ms until the returned function is called; it returns the peaks in bytes.
func libnetPeakSampler() func() (live, alloc float64) {
	stop, done := make(chan struct{}), make(chan struct{})
	var live, alloc uint64
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			live, alloc = max(live, s[0].Value.Uint64()), max(alloc, s[1].Value.Uint64())
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() (float64, float64) {
		close(stop)
		<-done
		return float64(live), float64(alloc)
	}
}

// libnetTCPBaseline streams n frames of a u32 length and 100 kB payload over one
// loopback TCP connection; the reader reads each frame whole into one
// reused buffer. It is the ceiling for the raw lane's tell.
func libnetTCPBaseline(n int, seed int64) (Row, error) {
	const size = 100_000
	prof, err := ParseProfile("100kB")
	if err != nil {
		return Row{}, err
	}
	w := NewWorkload(prof, seed, 0, n, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Row{}, err
	}
	defer ln.Close()
	read := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			read <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 4+size)
		for range n {
			if _, err := io.ReadFull(c, buf); err != nil {
				read <- err
				return
			}
		}
		read <- nil
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return Row{}, err
	}
	defer c.Close()
	scratch := make([]byte, size)
	var lenb [4]byte
	binary.BigEndian.PutUint32(lenb[:], size)
	runtime.GC()
	m0 := readMem()
	cpu0, flt0 := processUsage()
	t0 := time.Now()
	for i := range n {
		w.FillPayload(scratch, i)
		bufs := net.Buffers{lenb[:], scratch}
		if _, err := bufs.WriteTo(c); err != nil {
			return Row{}, err
		}
	}
	if err := <-read; err != nil {
		return Row{}, err
	}
	wall := time.Since(t0)
	cpu1, flt1 := processUsage()
	cpu, flt := cpu1-cpu0, flt1-flt0
	row := NewRow("tcp-baseline-100kB", "100kB", n)
	fillLibnetRow(&row, wall, nil, m0, readMem(), size)
	row.CPUNsPerMsg = float64(cpu) / float64(n)
	row.MinorFaultsPerMsg = float64(flt) / float64(n)
	row.WireBytesPerMsg = 4 + size
	row.Base64OpsPerMsg, row.JSONOpsPerMsg = 0, 0
	return row, nil
}
