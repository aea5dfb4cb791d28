package node

import (
	"errors"
	"strings"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/dburl"
)

// TestRetentionPolicyRefused: a retention policy that does not parse, or
// that gives a kind twice (nwaku refuses "duplicated retention policy
// type"), is a configuration error naming the flag, found before the
// archive is opened.
func TestRetentionPolicyRefused(t *testing.T) {
	for _, policy := range []string{"capacity:10;capacity:20", "size:1kb", "days:2"} {
		cfg := Config{ListenAddress: "127.0.0.1", Relay: true, Store: true, DataDir: t.TempDir(), ArchiveConfig: dburl.Config{Config: archive.Config{Retention: policy}}}
		n, err := New(cfg)
		if err == nil {
			n.Stop(t.Context())
			t.Errorf("%q: New accepted it", policy)
			continue
		}
		if want := "node: invalid config: --store-message-retention-policy=" + policy + ": "; !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: New error %q, want ErrConfig starting %q", policy, err, want)
		}
	}
	// Without store the policy is not read, as nwaku builds it only for
	// its store service (store_service_conf_builder.nim build).
	n := startTestNode(t, Config{Relay: true, ArchiveConfig: dburl.Config{Config: archive.Config{Retention: "capacity:10;capacity:20"}}})
	if n.Archive() != nil {
		t.Fatal("an archive without store")
	}
}
