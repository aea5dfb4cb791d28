package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/dburl"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/store"
)

// The store scenario's workload: small messages, so that a million fit on
// a test machine's disk, spread over storeContentTopics content topics one
// millisecond apart.
const (
	storePayloadSize   = 1000
	storeContentTopics = 10
	storePageSize      = 20
	// storeWindow is the time range of each query: 2,000 messages of the
	// archive, 200 of the queried content topic, so a page of 20 is always
	// full.
	storeWindow = 2000 * time.Millisecond
)

// runStore fills an archive (the embedded one, or Postgres with
// Config.StoreDBURL) with Config.StoreMessages messages, as fast as its
// write queue takes them, then times Config.StoreQueries store v3 queries
// through the protocol on loopback: a page of 20 with data, one content
// topic and a time range at a random place in the archive. It returns two
// rows: "store-insert" (msg_per_s: messages per second from the first
// append to the archive's Close) and "store-query" (ns_per_msg_p50/p99: the latency of
// one query, request to decoded response).
func runStore(ctx context.Context, cfg Config) ([]Row, error) {
	name := "[embedded]"
	if cfg.StoreDBURL != "" {
		name = "[postgres]"
	}
	open, cleanup, err := storeArchive(cfg)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	a, err := open(ctx)
	if err != nil {
		return nil, err
	}
	n := cfg.StoreMessages
	base := time.Now().Add(-time.Duration(n) * time.Millisecond).UnixNano()
	insert, head, tail, err := fillStore(ctx, cfg, a, n, base)
	if err != nil {
		a.Close()
		return nil, err
	}
	// The fill ends when Close returns: the last fsync and checkpoint are
	// part of it, so a short run does not end before its first sync.
	t0 := time.Now()
	if err := a.Close(); err != nil {
		return nil, err
	}
	insert += time.Since(t0)
	fmt.Fprintf(cfg.Out, "store%s: %d messages of %d bytes in %v: %.0f msg/s; the first 10 %%: %.0f msg/s, the last 10 %%: %.0f msg/s\n",
		name, n, storePayloadSize, insert.Round(time.Millisecond), float64(n)/insert.Seconds(),
		float64(n/10+1)/head.Seconds(), float64(n-1-n*9/10)/tail.Seconds())
	if a, err = open(ctx); err != nil {
		return nil, err
	}
	defer a.Close()
	ins := NewRow("store-insert"+name, fmt.Sprintf("%dB", storePayloadSize), n)
	ins.WallMs = float64(insert) / 1e6
	ins.MsgPerS = float64(n) / insert.Seconds()

	lat, wall, err := queryStore(ctx, cfg, a, n, base)
	if err != nil {
		return nil, err
	}
	q := NewRow("store-query"+name, fmt.Sprintf("%dB", storePayloadSize), len(lat))
	q.WallMs = float64(wall) / 1e6
	q.MsgPerS = float64(len(lat)) / wall.Seconds()
	q.P50Ns, q.P99Ns = percentile(lat, 50), percentile(lat, 99)
	fmt.Fprintf(cfg.Out, "store%s: %d queries (page of %d with data, one content topic, a time range): p50 %v, p99 %v\n",
		name, len(lat), storePageSize, time.Duration(q.P50Ns).Round(time.Microsecond), time.Duration(q.P99Ns).Round(time.Microsecond))
	// The same queries answered in process (store.Answer: the archive and
	// the response, no libp2p), to tell the archive's share of the latency.
	direct := make([]float64, 0, cfg.StoreQueries)
	for i := range cfg.StoreQueries {
		req := storeRequest(cfg, i, n, base)
		t0 := time.Now()
		if _, err := store.Answer(ctx, a, req); err != nil {
			return nil, err
		}
		direct = append(direct, float64(time.Since(t0)))
	}
	fmt.Fprintf(cfg.Out, "store%s: the same queries in process, without libp2p: p50 %v, p99 %v\n", name,
		time.Duration(percentile(direct, 50)).Round(time.Microsecond), time.Duration(percentile(direct, 99)).Round(time.Microsecond))
	return []Row{ins, q}, nil
}

// storeRequest is the i-th query of the scenario: a page of 20 with data,
// the i-th content topic, a window of storeWindow at a place the seed
// picks, alternately forward and backward.
func storeRequest(cfg Config, i, n int, base int64) *store.Request {
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i)))
	from := base
	if span := int64(n)*int64(time.Millisecond) - int64(storeWindow); span > 0 {
		from += r.Int64N(span)
	}
	to := from + int64(storeWindow)
	return &store.Request{IncludeData: true, PubsubTopic: cfg.PubsubTopic, ContentTopics: []string{storeContentTopic(i)},
		StartTime: &from, EndTime: &to, Forward: i%2 == 0, Limit: storePageSize}
}

// storeArchive returns how to open the scenario's archive (again, on the
// same data) and how to remove it.
func storeArchive(cfg Config) (open func(context.Context) (archive.Archive, error), cleanup func(), err error) {
	if cfg.StoreDBURL != "" {
		return func(ctx context.Context) (archive.Archive, error) {
			return dburl.Open(ctx, cfg.StoreDBURL, dburl.Config{})
		}, func() {}, nil
	}
	dir, err := os.MkdirTemp(cfg.Dir, "courier-bench-store-")
	if err != nil {
		return nil, nil, err
	}
	return func(context.Context) (archive.Archive, error) {
		a, err := embedded.Open(filepath.Join(dir, "archive"), archive.Config{}, embedded.Options{})
		if err != nil {
			return nil, err // not a nil *embedded.Archive in an Archive
		}
		return a, nil
	}, func() { os.RemoveAll(dir) }, nil
}

func storeContentTopic(i int) string {
	return fmt.Sprintf("/courier/1/store-bench-%d/proto", i%storeContentTopics)
}

// fillStore appends n messages and returns the time from the first
// append to the last acknowledgement, the time to the acknowledgement of
// the message at 10 % (the rate while the index is small) and the time
// between the acknowledgements of the message at 90 % and the last (the
// rate where the index is largest).
func fillStore(ctx context.Context, cfg Config, a archive.Archive, n int, base int64) (total, head, tail time.Duration, err error) {
	acked := make(chan error, 1)
	var first, ninth time.Time // written by the writer goroutine before the last ack
	start := time.Now()
	progress := progressFunc(cfg.Progress, "store")
	for i := range n {
		payload := make([]byte, storePayloadSize)
		binary.BigEndian.PutUint64(payload, uint64(i))
		m := &message.Message{Payload: payload, ContentTopic: storeContentTopic(i), Timestamp: base + int64(i)*int64(time.Millisecond),
			Present: message.HasTimestamp}
		wire := m.Encode(nil)
		env := message.NewEnvelope(m, cfg.PubsubTopic, wire, nil)
		var done func(error)
		switch i {
		case n - 1:
			done = func(err error) { acked <- err }
		case n / 10:
			done = func(error) { first = time.Now() }
		case n * 9 / 10:
			done = func(error) { ninth = time.Now() }
		}
		if err := a.Append(ctx, env, done); err != nil {
			return 0, 0, 0, err
		}
		if i%1000 == 0 {
			progress(i, n)
		}
	}
	if err := <-acked; err != nil {
		return 0, 0, 0, err
	}
	end := time.Now()
	return end.Sub(start), first.Sub(start), end.Sub(ninth), nil
}

// queryStore times cfg.StoreQueries queries from a client host to a
// server host serving a, both on loopback.
func queryStore(ctx context.Context, cfg Config, a archive.Archive, n int, base int64) ([]float64, time.Duration, error) {
	sh, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		return nil, 0, err
	}
	defer sh.Close()
	ch, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		return nil, 0, err
	}
	defer ch.Close()
	srv, err := store.NewServer(sh, a, store.Config{})
	if err != nil {
		return nil, 0, err
	}
	defer srv.Close()
	if err := ch.Connect(ctx, peer.AddrInfo{ID: sh.ID(), Addrs: sh.Addrs()}); err != nil {
		return nil, 0, err
	}
	var c message.Counters
	lat := make([]float64, 0, cfg.StoreQueries)
	start := time.Now()
	for i := range cfg.StoreQueries {
		req := storeRequest(cfg, i, n, base)
		t0 := time.Now()
		resp, err := store.Query(ctx, ch, sh.ID(), req, &c)
		if err != nil {
			return nil, 0, err
		}
		lat = append(lat, float64(time.Since(t0)))
		if want := min(storePageSize, n/storeContentTopics); len(resp.Messages) != want {
			return nil, 0, fmt.Errorf("query %d: %d messages, want %d", i, len(resp.Messages), want)
		}
	}
	return lat, time.Since(start), nil
}

// percentile returns the p-th percentile of v (sorted in place).
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[min(len(v)-1, int(float64(len(v))*p/100))]
}
