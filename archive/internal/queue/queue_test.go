package queue_test

import (
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/internal/queue"
	"github.com/couriernet/courier/message"
)

// TestMinQueueBytes: archive.MinQueueBytes, documented as two of the
// largest messages, counts each with the queue's own overhead.
func TestMinQueueBytes(t *testing.T) {
	if want := int64(2 * (message.MaxSize + queue.ItemOverhead)); archive.MinQueueBytes != want {
		t.Fatalf("archive.MinQueueBytes %d, want %d", archive.MinQueueBytes, want)
	}
}
