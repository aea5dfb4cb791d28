package archive_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/couriernet/courier/archive"
)

func TestErrorsHavePrefix(t *testing.T) {
	for _, err := range []error{archive.ErrClosed, archive.ErrBadQuery, archive.ErrUnknownCursor,
		archive.ErrBadEnvelope, archive.ErrConfig, archive.ErrLocked, archive.ErrCorrupt, archive.ErrSchema, archive.ErrNwakuDatabase} {
		if !strings.HasPrefix(err.Error(), "archive: ") {
			t.Errorf("%q lacks the prefix", err)
		}
	}
	if !errors.Is(archive.ErrUnknownCursor, archive.ErrBadQuery) {
		t.Error("ErrUnknownCursor does not wrap ErrBadQuery")
	}
}
