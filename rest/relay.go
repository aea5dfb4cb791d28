package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/shard"
)

// now is the clock the publish handlers use to fill an absent timestamp.
var now = time.Now

func (s *Server) postSubscriptions(w http.ResponseWriter, r *http.Request) {
	s.changeSubscriptions(w, r, false, func(topics, _ []string) error {
		if err := s.subscribe(dedupe(topics)); err != nil {
			return fmt.Errorf("Failed to subscribe: %w", err)
		}
		s.cache.addPubsub(topics)
		return nil
	})
}

func (s *Server) deleteSubscriptions(w http.ResponseWriter, r *http.Request) {
	s.changeSubscriptions(w, r, false, func(topics, _ []string) error {
		if err := s.unsubscribe(s.cache.removePubsub(topics)); err != nil {
			return fmt.Errorf("Failed to unsubscribe: %w", err)
		}
		return nil
	})
}

func (s *Server) postAutoSubscriptions(w http.ResponseWriter, r *http.Request) {
	s.changeSubscriptions(w, r, true, func(contentTopics, shards []string) error {
		if err := s.subscribe(dedupe(shards)); err != nil {
			return fmt.Errorf("Failed to subscribe: %w", err)
		}
		s.cache.addContent(contentTopics, shards)
		return nil
	})
}

// deleteAutoSubscriptions stops caching the content topics and leaves a
// shard only when no subscription of this API needs it any more. nwaku
// leaves the shard of every listed content topic, which also stops the other
// content topics on it (logos-delivery#4456); this package does not.
func (s *Server) deleteAutoSubscriptions(w http.ResponseWriter, r *http.Request) {
	s.changeSubscriptions(w, r, true, func(contentTopics, shards []string) error {
		if err := s.unsubscribe(s.cache.removeContent(contentTopics, shards)); err != nil {
			return fmt.Errorf("Failed to unsubscribe: %w", err)
		}
		return nil
	})
}

// changeSubscriptions reads and checks the body's topics (content topics
// when auto, with their shards), then runs apply under the subscription
// lock; an error from apply is answered with its text, 400 when it
// matches ErrSubscriptionRefused, else 500.
func (s *Server) changeSubscriptions(w http.ResponseWriter, r *http.Request, auto bool, apply func(topics, shards []string) error) {
	topics, ok := s.readTopics(w, r)
	if !ok {
		return
	}
	var shards []string
	if auto {
		if shards, ok = s.shardsOf(w, r, topics); !ok {
			return
		}
	} else if !validPubsubTopics(w, topics) {
		return
	}
	s.subMu.Lock()
	defer s.subMu.Unlock()
	if err := apply(topics, shards); err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, ErrSubscriptionRefused) {
			code = http.StatusBadRequest
		}
		writeText(w, code, err.Error())
		return
	}
	writeOK(w)
}

func (s *Server) subscribe(topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	return s.cfg.Relay.RelaySubscribe(topics)
}

func (s *Server) unsubscribe(topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	return s.cfg.Relay.RelayUnsubscribe(topics)
}

// getMessages answers 404 with an empty body for a topic not subscribed
// through this API, as nwaku.
func (s *Server) getMessages(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("pubsubTopic")
	answerCached(s, w, r, cacheRead{
		pending:     func() (int64, bool) { return s.cache.pendingPubsub(topic) },
		drain:       func(limit int64) ([]*message.Envelope, bool) { return s.cache.drainPubsub(topic, limit) },
		notReadable: func() { writeText(w, http.StatusNotFound, "") },
	}, toMessage)
}

// getAutoMessages answers 404 with the content topic as body for a content
// topic not subscribed through this API, as nwaku.
func (s *Server) getAutoMessages(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("contentTopic")
	answerCached(s, w, r, cacheRead{
		pending:     func() (int64, bool) { return s.cache.pendingContent(topic) },
		drain:       func(limit int64) ([]*message.Envelope, bool) { return s.cache.drainContent(topic, limit) },
		notReadable: func() { writeText(w, http.StatusNotFound, topic) },
	}, toMessage)
}

func toMessage(e *message.Envelope) Message { return NewMessage(e.Message()) }

// cacheRead is how a GET reads a message cache: the answer bytes of what
// it would drain (cache.pendingPubsub), the drain itself
// (cache.drainPubsub), and its answer for a topic not readable.
type cacheRead struct {
	pending     func() (int64, bool)
	drain       func(limit int64) ([]*message.Envelope, bool)
	notReadable func()
}

// answerCached answers a GET that drains a message cache: it reserves in
// the budget what answering the pending messages holds (reserveAnswer),
// drains at most that, and writes the JSON array of conv of each, one
// element at a time (writeJSONList), before it gives the bytes back.
func answerCached[T any](s *Server, w http.ResponseWriter, r *http.Request, rd cacheRead, conv func(*message.Envelope) T) {
	pending, ok := rd.pending()
	if !ok {
		rd.notReadable()
		return
	}
	n, ok := s.bodies.reserveAnswer(w, r, pending)
	if !ok {
		return
	}
	defer s.bodies.release(n)
	envs, ok := rd.drain(n)
	if !ok {
		rd.notReadable()
		return
	}
	writeJSONList(w, envs, conv)
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	msg, text, release, ok := s.readMessage(w, r)
	if !ok {
		return
	}
	defer release()
	s.publish(w, r, r.PathValue("pubsubTopic"), msg, text, false)
}

func (s *Server) postAutoMessage(w http.ResponseWriter, r *http.Request) {
	msg, text, release, ok := s.readMessage(w, r)
	if !ok {
		return
	}
	defer release()
	topic, err := s.cfg.Node.ContentTopicShard(msg.ContentTopic)
	if errors.Is(err, ErrAutoshardingDisabled) {
		writeText(w, http.StatusBadRequest, "Failed to publish. Autosharding is disabled")
		return
	}
	if err != nil {
		writeText(w, http.StatusBadRequest, "Failed to publish. "+autoshardingText(err))
		return
	}
	s.publish(w, r, topic, msg, text, true)
}

// publish fills an absent or zero timestamp with the current time (nwaku
// relay/types.nim toWakuMessage), checks the size limit and hands msg and
// its payload text to the relay backend, and answers; auto says the
// request came through the autosharding route, which reports a message no
// relay peer was sent (RelayBackend.RelayTopicPeers).
func (s *Server) publish(w http.ResponseWriter, r *http.Request, topic string, msg *message.Message, text *payloadText, auto bool) {
	if msg.Timestamp == 0 {
		msg.Timestamp = now().UnixNano()
		msg.Present |= message.HasTimestamp
	}
	if msg.Size()+protowire.SizeBytes(text.n)-protowire.SizeBytes(0) > message.MaxSize {
		writeText(w, http.StatusBadRequest, fmt.Sprintf("Failed to publish: Message size exceeded maximum of %d bytes", message.MaxSize))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.PublishTimeout)
	defer cancel()
	err := s.cfg.Relay.RelayPublish(ctx, topic, msg, text.n, text.decodeInto)
	switch {
	case err == nil && auto && s.noRelayPeers(topic):
		writeText(w, http.StatusBadRequest, "Failed to publish: publish failed in relay: NoPeersToPublish")
	case err == nil:
		writeOK(w)
	case errors.Is(err, ErrBase64): // checked before; here only if the checks missed a case
		writeText(w, http.StatusBadRequest, "Incorrect base64 string")
	case errors.Is(err, ErrNotSubscribed):
		writeText(w, http.StatusBadRequest, "Failed to publish: Node not subscribed to topic: "+topic)
	case errors.Is(err, ErrInvalidMessage):
		writeText(w, http.StatusBadRequest, "Failed to publish: "+err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		writeText(w, http.StatusInternalServerError, "Failed to publish: timedout")
	default:
		s.log.Warn("publish failed", "pubsubTopic", topic, "err", err)
		writeText(w, http.StatusInternalServerError, "Failed to publish: "+err.Error())
	}
}

// contentTypeOK checks the media type of a request that has a body, with
// nwaku's answers: 400 "Invalid content type" when the Content-Type header
// is missing or unreadable (nim-presto's getContentBody, answered by nwaku's
// requestErrorHandler in waku/rest_api/endpoint/builder.nim), 400 "Wrong
// Content-Type, expected application/json or text/plain" for another media
// type (waku/rest_api/endpoint/rest_serdes.nim decodeRequestBody). A request
// without a body passes: its handler answers what is missing.
func contentTypeOK(w http.ResponseWriter, r *http.Request) bool {
	if r.ContentLength == 0 {
		return true
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case err != nil || !strings.Contains(mt, "/"):
		writeText(w, http.StatusBadRequest, "Invalid content type")
		return false
	case strings.HasPrefix(r.URL.Path, "/filter/") && mt != "application/json":
		// The filter handlers read JSON only (filter/handlers.nim).
		filterBadBody(w, "Wrong Content-Type, expected application/json")
		return false
	case mt != "application/json" && mt != "text/plain":
		writeText(w, http.StatusBadRequest, "Wrong Content-Type, expected application/json or text/plain")
		return false
	}
	return true
}

// readBody reads the whole request body within Config.MaxBodyBytes. On
// failure it has answered: 413 over the limit (at once, reading nothing,
// when the Content-Length is over it), 400 when empty or unreadable.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if !contentTypeOK(w, r) {
		return nil, false
	}
	if r.ContentLength > s.cfg.MaxBodyBytes {
		w.Header().Set("Connection", "close") // the body is left unread
		writeText(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body too large: over %d bytes", s.cfg.MaxBodyBytes))
		return nil, false
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), r.ContentLength, s.cfg.MaxBodyBytes)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeText(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body too large: over %d bytes", tooLarge.Limit))
		return nil, false
	case err != nil:
		writeText(w, http.StatusBadRequest, "Failed to read request body: "+err.Error())
		return nil, false
	case len(body) == 0:
		missingBody(w, r)
		return nil, false
	}
	return body, true
}

// missingBody answers a request without a body as nwaku's handler for its
// path does: an empty 400 where the handler checks for a body first
// (waku/rest_api/endpoint/relay/handlers.nim), "Missing content body"
// where it reads the body with decodeRequestBody alone (relay's auto
// subscriptions and lightpush v1, rest_serdes.nim; filter/handlers.nim),
// inside the text
// the admin and lightpush handlers give a body they cannot decode.
func missingBody(w http.ResponseWriter, r *http.Request) {
	const text = "Missing content body"
	switch p := r.URL.Path; {
	case p == "/relay/v1/auto/subscriptions" || p == "/lightpush/v1/message":
		writeText(w, http.StatusBadRequest, text)
	case strings.HasPrefix(p, "/filter/"):
		filterBadBody(w, text)
	case strings.HasPrefix(p, "/admin/"):
		writeText(w, http.StatusBadRequest, "Failed to decode request: "+text)
	case p == "/lightpush/v3/message":
		writeLightpush(w, http.StatusBadRequest, "Invalid push request! "+text)
	default:
		writeText(w, http.StatusBadRequest, "")
	}
}

// readMessage reads and parses a REST message body to publish, with the
// publishing rules; on failure it has answered 400 with nwaku's texts. The
// payload stays in its base64 text, checked (text), to be decoded once,
// into the encoding (RelayBackend.RelayPublish). The body is read into a
// pooled buffer (readPooledBody) that text aliases: the caller calls
// release once the backend has returned, and not before.
func (s *Server) readMessage(w http.ResponseWriter, r *http.Request) (msg *message.Message, text *payloadText, release func(), ok bool) {
	body, release, ok := s.readPooledBody(w, r)
	if !ok {
		return nil, nil, nil, false
	}
	msg, text, err := decodeMessage(body, true)
	if err == nil {
		_, err = checkPublishable(msg, text)
	}
	switch {
	case errors.Is(err, ErrBase64):
		release()
		writeText(w, http.StatusBadRequest, "Incorrect base64 string")
		return nil, nil, nil, false
	case err != nil:
		release()
		undecodable(w, err)
		return nil, nil, nil, false
	}
	return msg, text, release, true
}

// bodyPool holds the body buffers of publish requests (*[]byte), so that a
// node publishing at a steady rate reads each body into memory already in
// use rather than into a fresh buffer of the body's size: on a virtual
// machine the first touch of fresh memory costs several times a copy.
var bodyPool sync.Pool

// readPooledBody is readBody into a buffer of bodyPool when the request
// gives a Content-Length within Config.MaxBodyBytes; release returns the
// buffer, after which nothing may use the body.
func (s *Server) readPooledBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool) {
	if !contentTypeOK(w, r) {
		return nil, func() {}, false
	}
	n := r.ContentLength
	if n <= 0 || n > s.cfg.MaxBodyBytes {
		body, ok := s.readBody(w, r)
		return body, func() {}, ok
	}
	bp, _ := bodyPool.Get().(*[]byte)
	if bp == nil || int64(cap(*bp)) < n {
		b := make([]byte, n)
		bp = &b
	}
	body = (*bp)[:n]
	release = func() { bodyPool.Put(bp) }
	// net/http ends the body at its Content-Length.
	if _, err := io.ReadFull(r.Body, body); err != nil {
		release()
		writeText(w, http.StatusBadRequest, "Failed to read request body: "+err.Error())
		return nil, nil, false
	}
	if len(body) == 0 {
		release()
		missingBody(w, r)
		return nil, nil, false
	}
	return body, release, true
}

// readTopics reads a JSON array of strings.
func (s *Server) readTopics(w http.ResponseWriter, r *http.Request) ([]string, bool) {
	body, ok := s.readBody(w, r)
	if !ok {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var topics []string
	if err := dec.Decode(&topics); err != nil || topics == nil {
		undecodable(w, fmt.Errorf("%w: want a JSON array of strings", ErrInvalidBody))
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		undecodable(w, fmt.Errorf("%w: data after the JSON array", ErrInvalidBody))
		return nil, false
	}
	return topics, true
}

// undecodable answers 400 in nwaku's form for a body that does not decode.
func undecodable(w http.ResponseWriter, err error) {
	writeText(w, http.StatusBadRequest, undecodableText(bodyDetail(err)))
}

// undecodableText is nwaku's answer to a body that does not decode
// (rest_serdes.nim decodeRequestBody), with the decoder's reason.
func undecodableText(detail string) string {
	return "Invalid content body, could not decode: Unable to deserialize data: body(" + detail + ")"
}

// bodyDetail is err's text without the ErrInvalidBody prefix.
func bodyDetail(err error) string {
	return strings.TrimPrefix(err.Error(), ErrInvalidBody.Error()+": ")
}

// validPubsubTopics answers 400 unless every topic is a static-shard pubsub
// topic. The text is nwaku's, which prints the list as a Nim sequence.
func validPubsubTopics(w http.ResponseWriter, topics []string) bool {
	var bad []string
	for _, t := range topics {
		if _, err := shard.ParsePubsubTopic(t); err != nil {
			bad = append(bad, t)
		}
	}
	if len(bad) > 0 {
		writeText(w, http.StatusBadRequest, "Invalid pubsub topic(s): "+nimSeq(bad))
		return false
	}
	return true
}

// shardsOf returns the pubsub topic of each content topic, or answers as
// nwaku's auto subscription handlers do when one has none: 500 "Subscribe
// failed:Failed to decode subscription event: <why>" (unsubscribe:
// "Unsubscribe failed:Failed to decode unsubscribe event: <why>"), why
// being the static sharding text or autoshardingText (waku/node/
// kernel_api/relay.nim getTopicOfSubscriptionEvent). nwaku subscribes the
// topics before the first bad one; this refuses the whole list.
func (s *Server) shardsOf(w http.ResponseWriter, r *http.Request, contentTopics []string) ([]string, bool) {
	shards := make([]string, len(contentTopics))
	for i, t := range contentTopics {
		p, err := s.cfg.Node.ContentTopicShard(t)
		if err != nil {
			why := "Static sharding is used, relay subscriptions must specify a pubsub topic"
			if !errors.Is(err, ErrAutoshardingDisabled) {
				why = autoshardingText(err)
			}
			prefix := "Subscribe failed:Failed to decode subscription event: "
			if r.Method == http.MethodDelete {
				prefix = "Unsubscribe failed:Failed to decode unsubscribe event: "
			}
			writeText(w, http.StatusInternalServerError, prefix+why)
			return nil, false
		}
		shards[i] = p
	}
	return shards, true
}

// autoshardingText is nwaku's text for a content topic autosharding
// cannot place (waku/waku_core/topics/sharding.nim getShard): the parse
// error's text, which shard.ParseContentTopic gives as nwaku words it.
func autoshardingText(err error) string {
	var pe *shard.ParseError
	switch {
	case errors.As(err, &pe):
		return "Autosharding error: " + pe.Reason
	case errors.Is(err, shard.ErrUnsupportedGeneration):
		return "Autosharding error: Generation > 0 are not supported yet"
	}
	return "Autosharding error: " + err.Error()
}

// nimSeq formats strings as Nim prints a seq[string]: @["a", "b"].
func nimSeq(s []string) string {
	var b strings.Builder
	b.WriteString("@[")
	for i, v := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(v))
	}
	b.WriteString("]")
	return b.String()
}

func writeOK(w http.ResponseWriter) { writeText(w, http.StatusOK, "OK") }

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	io.WriteString(w, text)
}

// writeJSONList answers 200 with the JSON array of conv of each of envs,
// the bytes json.Marshal writes for the whole slice, but encoded one
// element at a time straight to w: besides envs, the answer holds one
// element's JSON at once, whatever their number. An element that does not
// encode (none of the types used here can fail) ends the body there,
// truncated: the status is sent already.
func writeJSONList[T any](w http.ResponseWriter, envs []*message.Envelope, conv func(*message.Envelope) T) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(dropNewline{w})
	io.WriteString(w, "[")
	for i, e := range envs {
		if i > 0 {
			io.WriteString(w, ",")
		}
		if enc.Encode(conv(e)) != nil {
			return
		}
	}
	io.WriteString(w, "]")
}

// dropNewline writes what a json.Encoder writes without the newline that
// ends each value (Encode writes a value and its newline in one Write).
type dropNewline struct{ w io.Writer }

func (d dropNewline) Write(b []byte) (int, error) {
	n, err := d.w.Write(bytes.TrimSuffix(b, []byte("\n")))
	if err == nil {
		n = len(b)
	}
	return n, err
}

// writeJSON answers 200 with v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeText(w, http.StatusInternalServerError, "An error occurred while building the json response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// readAll reads rd (a MaxBytesReader of limit) to the end into one buffer
// sized from the request's Content-Length (when it is known and within
// limit), so a large body is not copied through growing buffers. A body
// of unknown length is read into a buffer that doubles up to limit bytes,
// never beyond: what the request reserved of the body budget.
func readAll(rd io.Reader, contentLength, limit int64) ([]byte, error) {
	if contentLength <= 0 || contentLength > limit {
		return readUpTo(rd, limit)
	}
	// Not bytes.Buffer.ReadFrom: it grows a buffer with fewer than 512
	// bytes free, which copied the whole body once more.
	buf := make([]byte, contentLength)
	if _, err := io.ReadFull(rd, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// readUpTo reads rd to the end into a buffer of at most limit bytes; a
// longer rd is a *http.MaxBytesError.
func readUpTo(rd io.Reader, limit int64) ([]byte, error) {
	buf := make([]byte, 0, min(512, limit))
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) >= limit {
				// Full: one more byte tells the end from a longer body.
				var one [1]byte
				n, err := io.ReadFull(rd, one[:])
				switch {
				case err == io.EOF:
					return buf, nil
				case n > 0:
					return nil, &http.MaxBytesError{Limit: limit}
				}
				return nil, err
			}
			grown := make([]byte, len(buf), min(2*int64(cap(buf)), limit))
			copy(grown, buf)
			buf = grown
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// noRelayPeers reports whether the relay counts no relay peer on topic.
func (s *Server) noRelayPeers(topic string) bool { return s.cfg.Relay.RelayTopicPeers(topic) == 0 }
