package bench

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// restPublisher posts workload messages to a node's REST API, each request
// on its own goroutine; the tracker's window bounds how many are in flight.
type restPublisher struct {
	url    string
	w      *Workload
	client *http.Client
	wg     sync.WaitGroup
	mu     sync.Mutex
	first  error
}

func newRESTPublisher(addr, pubsubTopic string, w *Workload) *restPublisher {
	tr := &http.Transport{MaxIdleConnsPerHost: window, MaxConnsPerHost: window}
	return &restPublisher{
		url: "http://" + addr + "/relay/v1/messages/" + url.PathEscape(pubsubTopic), w: w,
		client: &http.Client{Transport: tr, Timeout: 30 * time.Second},
	}
}

// publish builds message i's JSON body and posts it in the background. It
// returns the bytes the harness allocated: payload and body.
func (r *restPublisher) publish(i int) (int64, error) {
	payload := make([]byte, r.w.Size(i))
	r.w.FillPayload(payload, i)
	body := make([]byte, 0, base64.StdEncoding.EncodedLen(len(payload))+len(r.w.ContentTopic)+64)
	body = append(body, `{"payload":"`...)
	body = base64.StdEncoding.AppendEncode(body, payload)
	body = append(body, `","contentTopic":"`...)
	body = append(body, r.w.ContentTopic...)
	body = append(body, `","timestamp":`...)
	body = strconv.AppendInt(body, time.Now().UnixNano(), 10)
	body = append(body, '}')
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := r.post(body); err != nil {
			r.mu.Lock()
			if r.first == nil {
				r.first = fmt.Errorf("bench: REST publish of message %d: %w", i, err)
			}
			r.mu.Unlock()
		}
	}()
	return int64(cap(payload) + cap(body)), nil
}

func (r *restPublisher) post(body []byte) error {
	resp, err := r.client.Post(r.url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, text)
	}
	return nil
}

func (r *restPublisher) wait() { r.wg.Wait() }

func (r *restPublisher) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first
}
