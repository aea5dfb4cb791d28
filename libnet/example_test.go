package libnet_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/couriernet/courier/libnet"
)

// Two endpoints on loopback speak the raw lane (no keys needed): a tells b
// something, then asks b a question and waits for the answer.
func Example() {
	a, err := libnet.New(libnet.Config{ListenAddr: "127.0.0.1:0", SenderID: "node-a", Lane: libnet.LaneRaw})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := libnet.New(libnet.Config{ListenAddr: "127.0.0.1:0", SenderID: "node-b", Lane: libnet.LaneRaw})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	told := make(chan string, 1)
	b.Handle("greet", func(h *libnet.Header, payload []byte, _ libnet.Respond) {
		// payload is valid until the handler returns: string() copies it.
		told <- fmt.Sprintf("%s told %s: %s", h.SenderID, h.Route, payload)
	}, libnet.RouteOptions{})
	b.Handle("upper", func(_ *libnet.Header, payload []byte, respond libnet.Respond) {
		respond([]byte(strings.ToUpper(string(payload))))
	}, libnet.RouteOptions{})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Tell(ctx, b.Addr(), libnet.Msg{Route: "greet", Payload: []byte("hello")}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-told)

	reply, err := a.Ask(ctx, b.Addr(), libnet.Msg{Route: "upper", Payload: []byte("ask me")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s answered on the %v lane: %s\n", reply.Header.SenderID, reply.Header.Lane(), reply.Payload)
	// Output:
	// node-a told greet: hello
	// node-b answered on the raw lane: ASK ME
}
