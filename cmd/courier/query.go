package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/metadata"
	"github.com/couriernet/courier/rest"
	"github.com/couriernet/courier/store"
)

// listFlag is a repeatable flag whose values may also be comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	*l = append(*l, strings.Split(s, ",")...)
	return nil
}

// queryOptions are courier query's flags.
type queryOptions struct {
	rest, peerAddr, peer  string
	pubsubTopic, cursor   string
	contentTopics, hashes listFlag
	startTime, endTime    int64
	pageSize, pages       int
	clusterID             uint
	forward, includeData  bool
	timeout               time.Duration
	out                   io.Writer // where the JSON lines go
}

func runQuery(args []string) error {
	fs := flag.NewFlagSet("query", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, `usage: courier query [flags]

Queries a store node (13/WAKU2-STORE v3) and prints one JSON object per
message, {"messageHash", "message"?, "pubsubTopic"?} as GET /store/v3/messages
returns them, page after page until the last. Each page is in forward order.

With --peer it dials the store node over libp2p itself; otherwise it asks a
node's REST API (--rest), which answers from its own archive, from
--peer-addr, or from its --storenode.

Flags:
`)
		fs.PrintDefaults()
	}
	o := &queryOptions{out: os.Stdout}
	fs.StringVar(&o.rest, "rest", "http://127.0.0.1:8645", "the node's REST API address")
	fs.StringVar(&o.peerAddr, "peer-addr", "", "with --rest: the store node the REST API asks (its peerAddr parameter)")
	fs.StringVar(&o.peer, "peer", "", "store node multiaddr with /p2p/<id>, queried directly over libp2p")
	fs.UintVar(&o.clusterID, "cluster-id", 0, "with --peer: the store node's cluster id, told in the metadata exchange")
	fs.StringVar(&o.pubsubTopic, "pubsub-topic", "", "pubsub topic")
	fs.Var(&o.contentTopics, "content-topic", "content topic (repeatable, or comma-separated)")
	fs.Int64Var(&o.startTime, "start-time", 0, "first timestamp, Unix ns, inclusive (0: none)")
	fs.Int64Var(&o.endTime, "end-time", 0, "last timestamp, Unix ns, inclusive (0: none)")
	fs.Var(&o.hashes, "hash", "message hash, hex or base64 (repeatable, or comma-separated)")
	fs.StringVar(&o.cursor, "cursor", "", "start after this message hash (hex or base64)")
	fs.IntVar(&o.pageSize, "page-size", 20, "messages per page (at most 100)")
	fs.IntVar(&o.pages, "pages", 0, "stop after this many pages (0: all); the next cursor goes to stderr")
	fs.BoolVar(&o.forward, "forward", true, "page from old to new; false pages from new to old")
	fs.BoolVar(&o.includeData, "include-data", true, "return the messages, not only their hashes")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound on each page")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return &usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if o.pageSize < 1 || o.pageSize > 100 {
		return &usageError{errors.New("--page-size must be 1..100")}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.peer != "" {
		return o.viaLibp2p(ctx)
	}
	return o.viaREST(ctx)
}

// request builds the store request of the flags.
func (o *queryOptions) request() (*store.Request, error) {
	r := &store.Request{PubsubTopic: o.pubsubTopic, ContentTopics: o.contentTopics, Forward: o.forward,
		IncludeData: o.includeData, Limit: uint64(o.pageSize)}
	if o.startTime > 0 {
		r.StartTime = &o.startTime
	}
	if o.endTime > 0 {
		r.EndTime = &o.endTime
	}
	for _, s := range o.hashes {
		h, err := rest.ParseHash(s)
		if err != nil {
			return nil, &usageError{fmt.Errorf("--hash %s: %w", s, err)}
		}
		r.Hashes = append(r.Hashes, h)
	}
	if o.cursor != "" {
		h, err := rest.ParseHash(o.cursor)
		if err != nil {
			return nil, &usageError{fmt.Errorf("--cursor: %w", err)}
		}
		r.Cursor = &h
	}
	return r, nil
}

// viaLibp2p dials the store node from a host of its own and pages.
func (o *queryOptions) viaLibp2p(ctx context.Context) error {
	req, err := o.request()
	if err != nil {
		return err
	}
	addr, err := ma.NewMultiaddr(o.peer)
	if err != nil {
		return &usageError{fmt.Errorf("--peer: %w", err)}
	}
	pi, err := peer.AddrInfoFromP2pAddr(addr)
	if err != nil {
		return &usageError{fmt.Errorf("--peer needs /p2p/<peer id>: %w", err)}
	}
	if o.clusterID > 65535 {
		return &usageError{errors.New("--cluster-id must be 0..65535")}
	}
	h, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		return err
	}
	defer h.Close()
	// Waku nodes drop a peer that does not answer the metadata protocol
	// with their cluster id (nwaku peer_manager.nim onPeerMetadata).
	md, err := metadata.New(h, metadata.Config{ClusterID: uint16(o.clusterID), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer md.Close()
	dctx, cancel := context.WithTimeout(ctx, o.timeout)
	err = h.Connect(dctx, *pi)
	cancel()
	if err != nil {
		return fmt.Errorf("connect to %s: %w", o.peer, err)
	}
	return o.page(ctx, req, func(ctx context.Context, r *store.Request) (*rest.StoreResponse, error) {
		resp, err := store.Query(ctx, h, pi.ID, r, nil)
		if err != nil {
			return nil, err
		}
		return rest.NewStoreResponse(resp)
	})
}

// viaREST pages through GET /store/v3/messages.
func (o *queryOptions) viaREST(ctx context.Context) error {
	req, err := o.request()
	if err != nil {
		return err
	}
	return o.page(ctx, req, func(ctx context.Context, r *store.Request) (*rest.StoreResponse, error) {
		q := url.Values{}
		q.Set("includeData", strconv.FormatBool(r.IncludeData))
		q.Set("ascending", strconv.FormatBool(r.Forward))
		q.Set("pageSize", strconv.FormatUint(r.Limit, 10))
		if o.peerAddr != "" {
			q.Set("peerAddr", o.peerAddr)
		}
		if r.PubsubTopic != "" {
			q.Set("pubsubTopic", r.PubsubTopic)
		}
		if len(r.ContentTopics) > 0 {
			q.Set("contentTopics", strings.Join(r.ContentTopics, ","))
		}
		if r.StartTime != nil {
			q.Set("startTime", strconv.FormatInt(*r.StartTime, 10))
		}
		if r.EndTime != nil {
			q.Set("endTime", strconv.FormatInt(*r.EndTime, 10))
		}
		var hs []string
		for _, h := range r.Hashes {
			hs = append(hs, "0x"+h.String())
		}
		if len(hs) > 0 {
			q.Set("hashes", strings.Join(hs, ","))
		}
		if r.Cursor != nil {
			q.Set("cursor", "0x"+r.Cursor.String())
		}
		hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(o.rest, "/")+"/store/v3/messages?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		resp, err := httpClient.Do(hreq)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET /store/v3/messages: %s: %s", resp.Status, strings.TrimSpace(string(body)))
		}
		var out rest.StoreResponse
		if err := json.Unmarshal(body, &out); err != nil {
			return nil, fmt.Errorf("GET /store/v3/messages: %w", err)
		}
		if out.StatusCode != store.StatusOK {
			return nil, &store.StatusError{Code: out.StatusCode, Desc: out.StatusDesc}
		}
		return &out, nil
	})
}

// page runs req and the pages after it, printing each message as one line
// of JSON, until a page has no cursor or --pages pages are done.
func (o *queryOptions) page(ctx context.Context, req *store.Request, ask func(context.Context, *store.Request) (*rest.StoreResponse, error)) error {
	enc := json.NewEncoder(o.out)
	for n := 1; ; n++ {
		pctx, cancel := context.WithTimeout(ctx, o.timeout)
		resp, err := ask(pctx, req)
		cancel()
		if err != nil {
			return err
		}
		for i := range resp.Messages {
			if err := enc.Encode(&resp.Messages[i]); err != nil {
				return err
			}
		}
		if resp.PaginationCursor == "" {
			return nil
		}
		if o.pages > 0 && n >= o.pages {
			fmt.Fprintf(os.Stderr, "more pages: --cursor %s\n", resp.PaginationCursor)
			return nil
		}
		c, err := rest.ParseHash(resp.PaginationCursor)
		if err != nil {
			return fmt.Errorf("cursor %q: %w", resp.PaginationCursor, err)
		}
		req.Cursor = &c
	}
}
