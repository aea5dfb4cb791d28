// Command rlnprove makes RLN proofs for the end-to-end tests in a process
// of its own, outside the race detector, which makes a proof in the test
// process about seven times slower (1.5 s on two cores, against 0.2 s).
//
// It reads one JSON request from stdin,
//
//	{"circuitDir": "...", "epochSec": 10,
//	 "member": {"SecretHash": [32 bytes], "UserMessageLimit": 2, "Path": {"Index": 3, "Siblings": [[32 bytes], ...]}},
//	 "signals": [{"payload": base64, "contentTopic": "...", "timestamp": ns, "messageId": 0}, ...]}
//
// and writes {"proofs": [base64, ...]}: for each signal, the RateLimitProof
// protobuf (WakuMessage field 21) of member for that message id in the
// epoch of the signal's timestamp, in the signals' order. It proves on
// every core, one proof a core at a time. Any error is printed on stderr
// with exit status 1.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/couriernet/courier/rln"
)

type request struct {
	CircuitDir string       `json:"circuitDir"`
	EpochSec   uint64       `json:"epochSec"`
	Member     rln.Member   `json:"member"`
	Signals    []signalJSON `json:"signals"`
}

type signalJSON struct {
	Payload      []byte `json:"payload"`
	ContentTopic string `json:"contentTopic"`
	Timestamp    int64  `json:"timestamp"`
	MessageID    uint64 `json:"messageId"`
}

type response struct {
	Proofs [][]byte `json:"proofs"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "rlnprove:", err)
		os.Exit(1)
	}
}

func run() error {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		return fmt.Errorf("request: %w", err)
	}
	if req.EpochSec == 0 {
		return errors.New("request: epochSec 0")
	}
	p, err := rln.NewProver(rln.ProverConfig{Dir: req.CircuitDir, Tasks: 1})
	if err != nil {
		return err
	}
	out := response{Proofs: make([][]byte, len(req.Signals))}
	errs := make([]error, len(req.Signals))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				s := req.Signals[i]
				proof, err := p.Prove(rln.Signal{Payload: s.Payload, ContentTopic: s.ContentTopic, Timestamp: s.Timestamp},
					&req.Member, s.MessageID, rln.EpochAt(s.Timestamp, req.EpochSec))
				if err != nil {
					errs[i] = fmt.Errorf("signal %d: %w", i, err)
					continue
				}
				out.Proofs[i] = proof.Marshal()
			}
		}()
	}
	for i := range req.Signals {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
