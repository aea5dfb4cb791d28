package rest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/couriernet/courier/message"
)

// TestContentTopicRuleEveryRoute: every REST route that publishes refuses,
// 400 and before the backend sees anything, a message whose content topic
// message.CheckContentTopic refuses: empty, white space, or over 1024
// bytes (a 1024-byte one passes).
func TestContentTopicRuleEveryRoute(t *testing.T) {
	lf := &lightFake{fakeBackend: newFake(t)}
	s := lightServer(t, lf, Config{})
	const topic = "/waku/2/rs/0/0"
	expect(t, s, "POST", "/relay/v1/subscriptions", `["`+topic+`"]`, 200, "OK")
	body := func(ct string) string { return fmt.Sprintf(`{"payload":"aGk=","contentTopic":%q,"timestamp":5}`, ct) }
	push := func(ct string) string { return `{"pubsubTopic":"` + topic + `","message":` + body(ct) + `}` }
	long := "/" + strings.Repeat("a", message.MaxContentTopicSize)
	const (
		empty   = "Field `contentTopic` is missing or empty"
		tooLong = "Field `contentTopic` is over 1024 bytes"
	)
	decodeText := func(why string) string {
		return "Invalid content body, could not decode: Unable to deserialize data: body(" + why + ")"
	}
	for _, tc := range []struct {
		ct  string
		why string
	}{{"", empty}, {" \t", empty}, {long, tooLong}} {
		expect(t, s, "POST", msgsPath(topic), body(tc.ct), 400, decodeText(tc.why))
		expect(t, s, "POST", "/relay/v1/auto/messages", body(tc.ct), 400, decodeText(tc.why))
		expect(t, s, "POST", "/lightpush/v3/message", push(tc.ct), 400, `{"statusDesc":"Invalid message! rest: invalid content body: `+tc.why+`"}`)
		expect(t, s, "POST", "/lightpush/v1/message", push(tc.ct), 400, "Invalid message: rest: invalid content body: "+tc.why)
	}
	if len(lf.published) != 0 || len(lf.pushed) != 0 {
		t.Fatalf("refused messages reached the backend: %d published, %d pushed", len(lf.published), len(lf.pushed))
	}
	ok := long[:message.MaxContentTopicSize]
	expect(t, s, "POST", msgsPath(topic), body(ok), http.StatusOK, "OK")
	if len(lf.published) != 1 || lf.published[0].ContentTopic != ok {
		t.Fatalf("the 1024-byte content topic was not published")
	}
}
