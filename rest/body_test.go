package rest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/couriernet/courier/message"
)

// TestPublishBodyReuse publishes bodies of several sizes, one after the
// other: the publish bodies' buffers are reused, and every published
// message keeps its own bytes.
func TestPublishBodyReuse(t *testing.T) {
	f := newFake(t)
	s := newServer(t, f, Config{})
	topic := "/waku/2/rs/0/0"
	expect(t, s, "POST", "/relay/v1/subscriptions", `["/waku/2/rs/0/0"]`, 200, "OK")
	var want []*message.Message
	for i, size := range []int{3000, 10, 3000, 1, 60000, 2} {
		payload := []byte(strings.Repeat(string(rune('a'+i)), size))
		body := fmt.Sprintf(`{"payload":"%s","contentTopic":"/a/1/b/%d","timestamp":%d}`, base64.StdEncoding.EncodeToString(payload), i, i+1)
		expect(t, s, "POST", msgsPath(topic), body, 200, "OK")
		want = append(want, &message.Message{Payload: payload, ContentTopic: fmt.Sprintf("/a/1/b/%d", i), Timestamp: int64(i + 1), Present: message.HasTimestamp})
	}
	for i, m := range f.published {
		if !m.Equal(want[i]) {
			t.Fatalf("message %d: %d bytes of payload %.10q, topic %q; want %d bytes %.10q, %q",
				i, len(m.Payload), m.Payload, m.ContentTopic, len(want[i].Payload), want[i].Payload, want[i].ContentTopic)
		}
	}
	// A body shorter than its Content-Length is refused.
	req := httptest.NewRequest("POST", msgsPath(topic), strings.NewReader(`{"payload":"AQ=="`))
	req.ContentLength = 100
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest || !strings.HasPrefix(rec.Body.String(), "Failed to read request body") {
		t.Fatalf("short body: %d %q", rec.Code, rec.Body.String())
	}
}
