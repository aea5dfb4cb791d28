package archive_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/message"
)

// The embedded archive in a directory of its own: three messages are
// appended (each acknowledged once committed), then read back two per
// page, oldest first, following the cursor.
func Example() {
	dir, err := os.MkdirTemp("", "archive-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	a, err := embedded.Open(dir, archive.Config{}, embedded.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()

	const pubsubTopic, contentTopic = "/waku/2/rs/1/0", "/example/1/chat/proto"
	ctx := context.Background()
	for i, text := range []string{"first", "second", "third"} {
		m := &message.Message{Payload: []byte(text), ContentTopic: contentTopic, Timestamp: 1_700_000_000_000_000_000 + int64(i)}
		wire := m.Encode(nil)
		committed := make(chan error, 1)
		// The archive keeps the envelope and its wire bytes until done runs.
		if err := a.Append(ctx, message.NewEnvelope(m, pubsubTopic, wire, nil), func(err error) { committed <- err }); err != nil {
			log.Fatal(err)
		}
		if err := <-committed; err != nil {
			log.Fatal(err)
		}
	}

	q := archive.Query{PubsubTopic: pubsubTopic, ContentTopics: []string{contentTopic}, Forward: true, Limit: 2, IncludeData: true}
	for page := 1; ; page++ {
		res, err := a.Query(ctx, q)
		if err != nil {
			log.Fatal(err)
		}
		for _, s := range res.Messages {
			m, err := message.Decode(s.Wire, nil) // s.Wire is a fresh buffer the caller owns
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("page %d: %d %s\n", page, s.Timestamp, m.Payload)
		}
		if res.Cursor == nil {
			break
		}
		q.Cursor = res.Cursor
	}
	// Output:
	// page 1: 1700000000000000000 first
	// page 1: 1700000000000000001 second
	// page 2: 1700000000000000002 third
}
