package bench

import "context"

type LibnetConfig struct {
	N, Warmup int
	Seed      int64
	Sign      bool
	Sizes     []string
	Progress  func(done, total int)
}

func RunLibnet(ctx context.Context, cfg LibnetConfig) ([]Row, error) { return nil, nil }
