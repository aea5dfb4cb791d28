package driver

import (
	"bytes"
	"errors"
	"log/slog"
	"regexp"
	"slices"
	"testing"

	"github.com/couriernet/courier/archive"
)

// TestMigrate: Migrate runs the steps from have to want in order, logs
// each of them only for a database that held a schema already, and stops
// at the first that fails with an error that wraps archive.ErrSchema and
// names the version it was going to.
func TestMigrate(t *testing.T) {
	failAt := errors.New("step failed")
	for _, c := range []struct {
		name       string
		have, want int
		fail       int // the step that fails, -1 for none
		steps      []int
		logged     []string
		err        string
	}{
		{"new database", 0, 3, -1, []int{0, 1, 2}, nil, ""},
		{"from version 1", 1, 3, -1, []int{1, 2}, []string{
			"archive: test: migrating from=1 to=2", "archive: test: migrated to=2",
			"archive: test: migrating from=2 to=3", "archive: test: migrated to=3"}, ""},
		{"up to date", 3, 3, -1, nil, nil, ""},
		{"a step fails", 1, 3, 1, []int{1}, []string{"archive: test: migrating from=1 to=2"},
			"archive: database schema: migration to version 2: step failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			log := slog.New(slog.NewTextHandler(&out, nil))
			var steps []int
			err := Migrate(log, "test", c.have, c.want, func(v int) error {
				steps = append(steps, v)
				if v == c.fail {
					return failAt
				}
				return nil
			})
			if c.err == "" && err != nil || c.err != "" && (err == nil || err.Error() != c.err || !errors.Is(err, archive.ErrSchema)) {
				t.Fatalf("error %v, want %q wrapping ErrSchema", err, c.err)
			}
			if !slices.Equal(steps, c.steps) {
				t.Errorf("steps %v, want %v", steps, c.steps)
			}
			var logged []string
			line := regexp.MustCompile(`msg="([^"]+)" (from=\d+ )?(to=\d+)`)
			for _, m := range line.FindAllStringSubmatch(out.String(), -1) {
				logged = append(logged, m[1]+" "+m[2]+m[3])
			}
			if !slices.Equal(logged, c.logged) {
				t.Errorf("logged %q, want %q", logged, c.logged)
			}
		})
	}
}
