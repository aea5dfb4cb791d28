package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/dburl"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/store"
)

// The store scenario's workload: messages of Config.StoreProfile (1,000
// bytes by default, so that ten million fit on a test machine's disk),
// spread over storeContentTopics content topics, their timestamps evenly
// over the storeSpan before the run, as a store node holding two days of
// traffic (nwaku's default retention) would have them.
const (
	storeContentTopics = 10
	storePageSize      = 20
	storeSpan          = 48 * time.Hour
	// storeWindowMsgs is how many messages of the archive the time range
	// of each query covers: 200 of the queried content topic, so a page of
	// 20 is always full.
	storeWindowMsgs = 2000
	// storeRetention is the policy of the retention pass: it deletes the
	// older half of the archive.
	storeRetention = "time:86400"
	// storeIngestRate is the pace, in msg/s, of the ingest that runs
	// during the retention pass.
	storeIngestRate = 1000
)

// DefaultStoreProfile is the store scenario's default payload size.
const DefaultStoreProfile = "1kB"

// storeWork makes message i of a store run: its payload starts with i,
// the rest is zero; its timestamp is i steps after base.
type storeWork struct {
	pubsub     string
	sizes      []int // by message, or one size for all
	base, step int64 // ns
}

func (w *storeWork) size(i int) int {
	if len(w.sizes) == 1 {
		return w.sizes[0]
	}
	return w.sizes[i%len(w.sizes)]
}

func (w *storeWork) ts(i int) int64 { return w.base + int64(i)*w.step }

// env returns message i with timestamp ts, encoded and hashed.
func (w *storeWork) env(i int, ts int64) *message.Envelope {
	payload := make([]byte, w.size(i))
	binary.BigEndian.PutUint64(payload, uint64(i))
	m := &message.Message{Payload: payload, ContentTopic: storeContentTopic(i), Timestamp: ts, Present: message.HasTimestamp}
	return message.NewEnvelope(m, w.pubsub, m.Encode(nil), nil)
}

// runStore fills an archive (the embedded one, or Postgres with
// Config.StoreDBURL) with Config.StoreMessages messages, as fast as its
// write queue takes them, then times Config.StoreQueries store v3 queries
// of each kind, and last runs a retention pass that deletes the older half
// while new messages arrive. Its rows:
//
//   - store-insert: msg_per_s, messages per second from the first append
//     to the archive's Close; wire_bytes_per_msg. The notes give the rate
//     over the first and the last 10 % and the bytes on disk per message.
//   - store-query: a page of 20 with data, one content topic and a time
//     range at a random place, through the protocol on loopback
//     (ns_per_msg_p50/p99: request to decoded response).
//   - store-query-topic, store-query-hash, store-query-cursor: in process
//     (store.Answer: the archive and the response, no libp2p): the same
//     queries; 20 hashes of random messages; a page of 20 of one content
//     topic after the cursor of a random message.
//   - store-retention: the pass of storeRetention (msgs: messages deleted,
//     wall_ms: its duration), with ns_per_msg_p50/p99 the latency from
//     Append to the acknowledgement of the messages appended meanwhile at
//     storeIngestRate.
func runStore(ctx context.Context, cfg Config) ([]Row, error) {
	name := "[embedded]"
	if cfg.StoreDBURL != "" {
		name = "[postgres]"
	}
	prof, err := ParseProfile(cfg.StoreProfile)
	if err != nil {
		return nil, fmt.Errorf("%w: --store-profile: %v", ErrConfig, err)
	}
	open, diskBytes, cleanup, err := storeArchive(cfg)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	n := cfg.StoreMessages
	w := &storeWork{pubsub: cfg.PubsubTopic, sizes: prof.Sizes, step: max(int64(storeSpan)/int64(n), 1)}
	if len(prof.Sizes) > 1 {
		w.sizes = schedule(prof, min(n, 100_000), cfg.Seed) // repeated past 100,000 messages
	}
	w.base = time.Now().UnixNano() - int64(n)*w.step
	fmt.Fprintf(cfg.Out, "store%s: load average %s at the start\n", name, loadAverage())
	a, err := open(ctx, archive.Config{})
	if err != nil {
		return nil, err
	}
	insert, head, tail, wire, err := fillStore(ctx, cfg, a, w, n)
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
	st := a.Stats()
	first, last := float64(n/10+1)/head.Seconds(), float64(n-1-n*9/10)/tail.Seconds()
	fmt.Fprintf(cfg.Out, "store%s: %d messages of %s in %v: %.0f msg/s; the first 10 %%: %.0f msg/s, the last 10 %%: %.0f msg/s (%.2f); load average %s\n",
		name, n, prof.Name, insert.Round(time.Millisecond), float64(n)/insert.Seconds(), first, last, last/first, loadAverage())
	if st.WriterCPU > 0 {
		fmt.Fprintf(cfg.Out, "store%s: writer CPU %.1f µs/msg; %d checkpoints, %v of them on the writer\n",
			name, float64(st.WriterCPU.Microseconds())/float64(n), st.Checkpoints, st.WriterCheckpointTime.Round(time.Millisecond))
	}
	disk, err := diskBytes(ctx)
	if err != nil {
		return nil, err
	}
	meanWire := float64(wire) / float64(n)
	fmt.Fprintf(cfg.Out, "store%s: on disk %.0f bytes/msg, %.2f times the wire size (%.0f bytes/msg)\n",
		name, float64(disk)/float64(n), float64(disk)/float64(wire), meanWire)
	ins := NewRow("store-insert"+name, prof.Name, n)
	ins.WallMs = float64(insert) / 1e6
	ins.MsgPerS = float64(n) / insert.Seconds()
	ins.WireBytesPerMsg = meanWire

	if a, err = open(ctx, archive.Config{}); err != nil {
		return nil, err
	}
	rows, err := queryRows(ctx, cfg, a, w, n, name, prof.Name)
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	ret, err := retentionPass(ctx, cfg, open, w, n, name, prof.Name)
	if err != nil {
		return nil, err
	}
	return append(append([]Row{ins}, rows...), ret), nil
}

// queryRows times the store scenario's queries on a: through the
// protocol, then each kind in process.
func queryRows(ctx context.Context, cfg Config, a archive.Archive, w *storeWork, n int, name, profile string) ([]Row, error) {
	want := min(storePageSize, n/storeContentTopics)
	lat, wall, err := queryStore(ctx, cfg, a, w, n, want)
	if err != nil {
		return nil, err
	}
	q := NewRow("store-query"+name, profile, len(lat))
	q.WallMs = float64(wall) / 1e6
	q.MsgPerS = float64(len(lat)) / wall.Seconds()
	q.P50Ns, q.P99Ns = percentile(lat, 50), percentile(lat, 99)
	fmt.Fprintf(cfg.Out, "store%s: %d queries (page of %d with data, one content topic, a time range): p50 %v, p99 %v\n",
		name, len(lat), storePageSize, time.Duration(q.P50Ns).Round(time.Microsecond), time.Duration(q.P99Ns).Round(time.Microsecond))
	rows := []Row{q}
	kinds := []struct {
		kind, what string
		req        func(i int) *store.Request
		want       int
	}{
		{"topic", "the same queries", func(i int) *store.Request { return storeRequest(cfg, w, i, n) }, want},
		{"hash", "20 hashes of random messages", func(i int) *store.Request { return hashRequest(cfg, w, i, n) }, min(storePageSize, n)},
		{"cursor", "a page of one content topic after the cursor of a random message", func(i int) *store.Request { return cursorRequest(cfg, w, i, n) }, -1},
	}
	for _, k := range kinds {
		lat := make([]float64, 0, cfg.StoreQueries)
		start := time.Now()
		for i := range cfg.StoreQueries {
			req := k.req(i)
			t0 := time.Now()
			resp, err := store.Answer(ctx, a, req)
			if err != nil {
				return nil, err
			}
			lat = append(lat, float64(time.Since(t0)))
			if k.want >= 0 && len(resp.Messages) != k.want {
				return nil, fmt.Errorf("%s query %d: %d messages, want %d", k.kind, i, len(resp.Messages), k.want)
			}
		}
		r := NewRow("store-query-"+k.kind+name, profile, len(lat))
		r.WallMs = float64(time.Since(start)) / 1e6
		r.MsgPerS = float64(len(lat)) / time.Since(start).Seconds()
		r.P50Ns, r.P99Ns = percentile(lat, 50), percentile(lat, 99)
		fmt.Fprintf(cfg.Out, "store%s: in process, without libp2p, %s: p50 %v, p99 %v\n", name, k.what,
			time.Duration(r.P50Ns).Round(time.Microsecond), time.Duration(r.P99Ns).Round(time.Microsecond))
		rows = append(rows, r)
	}
	return rows, nil
}

// storeRequest is the i-th time range query of the scenario: a page of 20
// with data, the i-th content topic, a window of storeWindowMsgs messages
// at a place the seed picks, alternately forward and backward.
func storeRequest(cfg Config, w *storeWork, i, n int) *store.Request {
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i)))
	from := w.base
	if span := int64(n-storeWindowMsgs) * w.step; span > 0 {
		from += r.Int64N(span)
	}
	to := from + storeWindowMsgs*w.step
	return &store.Request{IncludeData: true, PubsubTopic: cfg.PubsubTopic, ContentTopics: []string{storeContentTopic(i)},
		StartTime: &from, EndTime: &to, Forward: i%2 == 0, Limit: storePageSize}
}

// hashRequest is the i-th hash lookup: the hashes of 20 random messages of
// the archive, with their pubsub topic (as js-waku sends it) and data.
func hashRequest(cfg Config, w *storeWork, i, n int) *store.Request {
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i)|1<<62))
	req := &store.Request{IncludeData: true, PubsubTopic: cfg.PubsubTopic, Limit: storePageSize}
	seen := map[int]bool{}
	for len(req.Hashes) < min(storePageSize, n) {
		j := r.IntN(n)
		if !seen[j] {
			seen[j] = true
			req.Hashes = append(req.Hashes, w.env(j, w.ts(j)).Hash())
		}
	}
	return req
}

// cursorRequest is the i-th cursor query: a page of 20 with data of the
// content topic of a random message, after (forward) or before it.
func cursorRequest(cfg Config, w *storeWork, i, n int) *store.Request {
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i)|1<<61))
	j := r.IntN(n)
	h := w.env(j, w.ts(j)).Hash()
	return &store.Request{IncludeData: true, PubsubTopic: cfg.PubsubTopic, ContentTopics: []string{storeContentTopic(j)},
		Cursor: &h, Forward: i%2 == 0, Limit: storePageSize}
}

// storeArchive returns how to open the scenario's archive (again, on the
// same data, with the settings of cfg), how many bytes its files or
// tables take, and how to remove it.
func storeArchive(cfg Config) (open func(context.Context, archive.Config) (archive.Archive, error), disk func(context.Context) (int64, error), cleanup func(), err error) {
	quiet := slog.New(slog.DiscardHandler) // the archive's retention log lines
	if cfg.StoreDBURL != "" {
		return func(ctx context.Context, c archive.Config) (archive.Archive, error) {
				c.Logger = quiet
				return dburl.Open(ctx, cfg.StoreDBURL, dburl.Config{Config: c})
			}, func(ctx context.Context) (int64, error) {
				return postgresBytes(ctx, cfg.StoreDBURL)
			}, func() {}, nil
	}
	dir, err := os.MkdirTemp(cfg.Dir, "courier-bench-store-")
	if err != nil {
		return nil, nil, nil, err
	}
	adir := filepath.Join(dir, "archive")
	return func(_ context.Context, c archive.Config) (archive.Archive, error) {
			c.Logger = quiet
			a, err := embedded.Open(adir, c, embedded.Options{})
			if err != nil {
				return nil, err // not a nil *embedded.Archive in an Archive
			}
			return a, nil
		}, func(context.Context) (int64, error) {
			return dirBytes(adir)
		}, func() { os.RemoveAll(dir) }, nil
}

// dirBytes returns the size of the files in dir.
func dirBytes(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			total += fi.Size()
		}
		return err
	})
	return total, err
}

// postgresBytes returns the size of the tables in the current schema of
// the database at url, their indexes and TOAST included.
func postgresBytes(ctx context.Context, url string) (int64, error) {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer c.Close(ctx)
	var n int64
	err = c.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
		JOIN pg_namespace ns ON ns.oid = c.relnamespace WHERE ns.nspname = current_schema() AND c.relkind = 'r'`).Scan(&n)
	return n, err
}

func storeContentTopic(i int) string {
	return fmt.Sprintf("/courier/1/store-bench-%d/proto", i%storeContentTopics)
}

// fillStore appends n messages and returns the time from the first
// append to the last acknowledgement, the time to the acknowledgement of
// the message at 10 % (the rate while the index is small), the time
// between the acknowledgements of the message at 90 % and the last (the
// rate where the index is largest), and the wire bytes appended.
func fillStore(ctx context.Context, cfg Config, a archive.Archive, w *storeWork, n int) (total, head, tail time.Duration, wire int64, err error) {
	acked := make(chan error, 1)
	var first, ninth time.Time // written by the writer goroutine before the last ack
	start := time.Now()
	progress := progressFunc(cfg.Progress, "store")
	for i := range n {
		env := w.env(i, w.ts(i))
		wire += int64(len(env.Wire()))
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
			return 0, 0, 0, 0, err
		}
		if i%1000 == 0 {
			progress(i, n)
		}
	}
	if err := <-acked; err != nil {
		return 0, 0, 0, 0, err
	}
	end := time.Now()
	return end.Sub(start), first.Sub(start), end.Sub(ninth), wire, nil
}

// retentionPass reopens the archive with storeRetention, whose first run
// starts at Open, and appends new messages at storeIngestRate until a
// second after the run has ended. It returns the store-retention row.
func retentionPass(ctx context.Context, cfg Config, open func(context.Context, archive.Config) (archive.Archive, error), w *storeWork, n int, name, profile string) (Row, error) {
	a, err := open(ctx, archive.Config{Retention: storeRetention})
	if err != nil {
		return Row{}, err
	}
	defer a.Close()
	start := time.Now()
	var mu sync.Mutex
	var during, after []float64
	var ended time.Time // when the first retention run was seen to end
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	sent, failed := 0, 0
	for i := n; ; <-tick.C {
		if ended.IsZero() && a.Stats().RetentionRuns > 0 {
			ended = time.Now()
		}
		if !ended.IsZero() && time.Since(ended) > time.Second {
			break
		}
		for due := 1 + int(time.Since(start).Seconds()*storeIngestRate); sent < due; sent++ {
			env := w.env(i, time.Now().UnixNano())
			i++
			t0, inRun := time.Now(), ended.IsZero()
			err := a.Append(ctx, env, func(err error) {
				d := float64(time.Since(t0))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					failed++
				case inRun:
					during = append(during, d)
				default:
					after = append(after, d)
				}
			})
			if err != nil {
				return Row{}, err
			}
		}
	}
	took := ended.Sub(start)
	if err := a.Close(); err != nil {
		return Row{}, err
	}
	st := a.Stats()
	mu.Lock()
	defer mu.Unlock()
	if failed > 0 || st.RetentionErrors > 0 {
		return Row{}, fmt.Errorf("retention pass: %d appends failed, %d retention errors", failed, st.RetentionErrors)
	}
	r := NewRow("store-retention"+name, profile, int(st.Deleted))
	r.WallMs = float64(took) / 1e6
	r.MsgPerS = float64(len(during)) / took.Seconds()
	r.P50Ns, r.P99Ns = percentile(during, 50), percentile(during, 99)
	fmt.Fprintf(cfg.Out, "store%s: retention %s over %v of timestamps deleted %d of %d messages in %v; %d appended meanwhile at %d msg/s: p50 %v, p99 %v from Append to acknowledgement (after it: p50 %v, p99 %v); load average %s\n",
		name, storeRetention, storeSpan, st.Deleted, n, took.Round(time.Millisecond), len(during), storeIngestRate,
		time.Duration(r.P50Ns).Round(time.Microsecond), time.Duration(r.P99Ns).Round(time.Microsecond),
		time.Duration(percentile(after, 50)).Round(time.Microsecond), time.Duration(percentile(after, 99)).Round(time.Microsecond), loadAverage())
	return r, nil
}

// queryStore times cfg.StoreQueries queries from a client host to a
// server host serving a, both on loopback; each must return want
// messages.
func queryStore(ctx context.Context, cfg Config, a archive.Archive, w *storeWork, n, want int) ([]float64, time.Duration, error) {
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
		req := storeRequest(cfg, w, i, n)
		t0 := time.Now()
		resp, err := store.Query(ctx, ch, sh.ID(), req, &c)
		if err != nil {
			return nil, 0, err
		}
		lat = append(lat, float64(time.Since(t0)))
		if len(resp.Messages) != want {
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
