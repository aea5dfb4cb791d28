package archive

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultRetention is nwaku's default --store-message-retention-policy
// (tools/confutils/cli_args.nim): two days.
const DefaultRetention = "time:172800"

// DefaultRetentionInterval is how often retention runs: nwaku's
// WakuArchiveDefaultRetentionPolicyInterval (waku_archive/archive.nim).
const DefaultRetentionInterval = 30 * time.Minute

// Retention is a parsed retention policy; a zero field is no limit, and
// the zero Retention keeps everything.
type Retention struct {
	// Time: messages whose timestamp is older than this expire.
	Time time.Duration
	// Capacity: the archive keeps at least this many of the newest
	// messages; when it holds 30 % more, the oldest are deleted down to
	// Capacity plus 15 % (nwaku's CapacityRetentionPolicy, MaxOverflow 1.3,
	// retention_policy_capacity.nim), so deletes come in batches.
	Capacity int64
	// Size bounds the stored message bytes: the wire bytes of the messages
	// (Postgres), or the segment files (embedded). The index is not
	// counted.
	Size int64
}

// retentionSyntax is nwaku's check of one policy
// (waku_archive/retention_policy/builder.nim), applied after lowering.
var retentionSyntax = regexp.MustCompile(`^\w+:\d*\.?\d+((g|m)b)?$`)

// ParseRetention parses a retention policy in nwaku's grammar: "" or
// "none" (keep everything), or policies joined by ";", each one of
// "time:<seconds>", "capacity:<messages>" or "size:<n>GB|MB" (1024-based,
// decimals allowed, e.g. "size:1.5gb"); case does not matter. All the
// policies given apply; a kind given twice ("capacity:10;capacity:20") is
// an error, as in nwaku (waku/factory/conf_builder/
// store_service_conf_builder.nim validateRetentionPolicies). Errors wrap
// ErrConfig.
func ParseRetention(s string) (Retention, error) {
	var r Retention
	seen := map[string]bool{}
	for part := range strings.SplitSeq(strings.ToLower(strings.TrimSpace(s)), ";") {
		part = strings.TrimSpace(part)
		if part == "" || part == "none" {
			continue
		}
		if !retentionSyntax.MatchString(part) {
			return Retention{}, errorf(ErrConfig, "retention policy %q: want time:<seconds>, capacity:<count> or size:<n>gb|mb", part)
		}
		kind, arg, _ := strings.Cut(part, ":")
		if seen[kind] {
			return Retention{}, errorf(ErrConfig, "retention policy %q: a %s policy is given twice", s, kind)
		}
		seen[kind] = true
		var err error
		switch kind {
		case "time":
			var sec int64
			if sec, err = positiveInt(arg); err == nil && sec > math.MaxInt64/int64(time.Second) {
				err = fmt.Errorf("over %d seconds", math.MaxInt64/int64(time.Second))
			}
			r.Time = time.Duration(sec) * time.Second
		case "capacity":
			r.Capacity, err = positiveInt(arg)
		case "size":
			r.Size, err = parseSize(arg)
		default:
			err = fmt.Errorf("unknown policy %q", kind)
		}
		if err != nil {
			return Retention{}, errorf(ErrConfig, "retention policy %q: %v", part, err)
		}
	}
	return r, nil
}

func positiveInt(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("%q is not a positive integer", s)
	}
	return v, nil
}

func parseSize(s string) (int64, error) {
	mult := float64(1 << 20)
	switch {
	case strings.HasSuffix(s, "gb"):
		mult = 1 << 30
	case strings.HasSuffix(s, "mb"):
	default:
		return 0, fmt.Errorf("%q: the unit must be MB or GB", s)
	}
	v, err := strconv.ParseFloat(s[:len(s)-2], 64)
	if err != nil || v*mult < 1 || v*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is not a positive size", s)
	}
	return int64(v * mult), nil
}

// String renders r in the grammar ParseRetention reads ("none" for none).
func (r Retention) String() string {
	var parts []string
	if r.Time > 0 {
		parts = append(parts, fmt.Sprintf("time:%d", int64(r.Time/time.Second)))
	}
	if r.Capacity > 0 {
		parts = append(parts, fmt.Sprintf("capacity:%d", r.Capacity))
	}
	if r.Size > 0 {
		if r.Size%(1<<30) == 0 {
			parts = append(parts, fmt.Sprintf("size:%dGB", r.Size>>30))
		} else {
			parts = append(parts, fmt.Sprintf("size:%sMB", strconv.FormatFloat(float64(r.Size)/(1<<20), 'f', -1, 64)))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ";")
}

func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}
