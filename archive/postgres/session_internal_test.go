package postgres

import (
	"context"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/pgtest"
)

// TestSessionDefaults: the archive's connections plan each statement once
// (plan_cache_mode=force_generic_plan) and never JIT-compile a query
// (jit=off), unless the URL sets its own value.
func TestSessionDefaults(t *testing.T) {
	url := pgtest.DB(t)
	for _, tt := range []struct {
		name, query string
		want        map[string]string
	}{
		{"defaults", "", map[string]string{"plan_cache_mode": "force_generic_plan", "jit": "off"}},
		{"the URL's own", "&jit=on&plan_cache_mode=auto", map[string]string{"plan_cache_mode": "auto", "jit": "on"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			p, err := Open(ctx, url+tt.query, archive.Config{}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			for name, want := range tt.want {
				var got string
				if err := p.pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}
