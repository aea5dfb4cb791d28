package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
)

// scratchSchema creates an empty schema in the Postgres database at dbURL
// and returns a URL whose connections use it (search_path), so a run
// never meets the rows of an earlier one nor touches other tables; drop
// removes the schema and everything in it.
func scratchSchema(ctx context.Context, dbURL string) (string, func(), error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", nil, fmt.Errorf("bench: database URL: %w", err)
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "courier_bench_" + hex.EncodeToString(b[:])
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return "", nil, fmt.Errorf("bench: %w", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, fmt.Errorf("bench: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	drop := func() {
		c, err := pgx.Connect(context.Background(), dbURL)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	}
	return u.String(), drop, nil
}
