package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/rpc"
)

// pool holds the endpoints and the one in use. Calls run on the current
// endpoint; when it fails in transport (no JSON-RPC answer), it is dropped
// and the others are tried in order of preference, as nwaku's
// establishConnection reconnects; the first that answers becomes current.
// When none answers, the next call starts again with the failed one.
type pool struct {
	addrs   []string
	dial    DialFunc
	timeout time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	cur     int      // index into addrs of the endpoint in use
	backend Backend  // open connection to addrs[cur], or nil
	chainID *big.Int // expected chain id, nil until learned
	closed  bool
}

func newPool(c Config) *pool {
	p := &pool{addrs: c.Endpoints, dial: c.Dial, timeout: c.CallTimeout, log: c.Logger}
	if c.ChainID != nil && c.ChainID.Sign() > 0 {
		p.chainID = new(big.Int).Set(c.ChainID)
	}
	return p
}

// do runs f with a Backend, failing over to the other endpoints when f's
// error is a transport error. It returns f's result on the first endpoint
// that answers (even with a JSON-RPC error, such as a revert), or, when
// none does, an error wrapping ErrChainID if every endpoint serves another
// chain and ErrUnavailable otherwise. f gets a context bounded by
// CallTimeout.
func (p *pool) do(ctx context.Context, f func(ctx context.Context, b Backend) error) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	order := p.order()
	p.mu.Unlock()

	var errs []error
	mismatches := 0
	for _, i := range order {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := p.try(ctx, i, f)
		if err == nil || answered(err) || ctx.Err() != nil {
			return err
		}
		if errors.Is(err, ErrChainID) {
			mismatches++
		}
		errs = append(errs, fmt.Errorf("%s: %w", Redact(p.addrs[i]), err))
	}
	if mismatches == len(order) {
		return fmt.Errorf("%w: %w", ErrChainID, endpointErrors(errs))
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, endpointErrors(errs))
}

// endpointErrors are the errors of the endpoints tried, one each. Its text
// is theirs joined with "; ", on one line (errors.Join would put each on
// its own); errors.Is and errors.As see each of them.
type endpointErrors []error

func (e endpointErrors) Error() string {
	var b strings.Builder
	for i, err := range e {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

func (e endpointErrors) Unwrap() []error { return e }

// try runs f on endpoint i within one CallTimeout, dropping the endpoint
// when it fails in transport. Its errors have the endpoint address's
// secret parts redacted from their text (redactError): the transports
// write the whole URL into theirs.
func (p *pool) try(ctx context.Context, i int, f func(ctx context.Context, b Backend) error) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	b, err := p.use(ctx, i)
	if err != nil {
		return redactError(p.addrs[i], err)
	}
	err = redactError(p.addrs[i], f(ctx, b))
	if err != nil && !answered(err) {
		p.drop(i, b, err)
	}
	return err
}

// order returns the endpoint indices to try: the current one, then the
// others from the most preferred.
func (p *pool) order() []int {
	out := make([]int, 0, len(p.addrs))
	out = append(out, p.cur)
	for i := range p.addrs {
		if i != p.cur {
			out = append(out, i)
		}
	}
	return out
}

// use returns the open Backend of endpoint i, dialing it (and checking its
// chain id) when it is not the current one.
func (p *pool) use(ctx context.Context, i int) (Backend, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	if i == p.cur && p.backend != nil {
		b := p.backend
		p.mu.Unlock()
		return b, nil
	}
	want := p.chainID
	p.mu.Unlock()

	b, err := p.dial(ctx, p.addrs[i])
	if err != nil {
		return nil, err
	}
	id, err := b.ChainID(ctx)
	if err != nil {
		closeBackend(b)
		return nil, err
	}
	if want != nil && id.Cmp(want) != 0 {
		closeBackend(b)
		p.log.Error("rln: Ethereum RPC endpoint serves another chain", "endpoint", Redact(p.addrs[i]), "chain_id", id, "want", want)
		return nil, fmt.Errorf("%w: endpoint serves chain %s, want %s", ErrChainID, id, want)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		closeBackend(b)
		return nil, ErrClosed
	}
	if p.chainID == nil {
		p.chainID = id
	}
	if p.backend != nil && p.cur == i { // another caller won the dial
		closeBackend(b)
		return p.backend, nil
	}
	if p.backend != nil {
		closeBackend(p.backend)
	}
	if p.cur != i {
		p.log.Warn("rln: using Ethereum RPC endpoint", "endpoint", Redact(p.addrs[i]), "instead_of", Redact(p.addrs[p.cur]))
	}
	p.cur, p.backend = i, b
	return b, nil
}

// drop closes endpoint i's Backend b after a transport failure, unless
// another caller already replaced it.
func (p *pool) drop(i int, b Backend, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == i && p.backend == b {
		p.backend = nil
		closeBackend(b)
		p.log.Debug("rln: Ethereum RPC endpoint failed", "endpoint", Redact(p.addrs[i]), "err", err)
	}
}

// current returns the redacted address of the endpoint in use and its
// chain id (nil until an endpoint answered).
func (p *pool) current() (string, *big.Int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var id *big.Int
	if p.chainID != nil {
		id = new(big.Int).Set(p.chainID)
	}
	return Redact(p.addrs[p.cur]), id
}

func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	if p.backend != nil {
		closeBackend(p.backend)
		p.backend = nil
	}
}

func closeBackend(b Backend) {
	if c, ok := b.(interface{ Close() }); ok {
		c.Close()
	}
}

// answered reports whether err came from a JSON-RPC server's answer (an
// error object such as a revert, a contract missing at the address,
// or a missing receipt), as opposed to a transport failure that another
// endpoint may not have.
func answered(err error) bool {
	var re rpc.Error
	return errors.As(err, &re) || errors.Is(err, ethereum.NotFound) || errors.Is(err, bind.ErrNoCode) ||
		errors.Is(err, ErrNoContract) || errors.Is(err, ErrNotMember) || errors.Is(err, errAnswered)
}

// errAnswered marks errors of this package about an answer's content (a
// malformed result), which another endpoint would not fix.
var errAnswered = errors.New("answered")
