package postgres

import (
	"math"
	"strconv"
	"testing"
	"time"
)

// TestNewPartition: a timestamp near now gets the hour it falls in, one
// far from now the year-long cell around it, both cut to the gap between
// the partitions on either side; names carry the range in seconds and
// read back to it.
func TestNewPartition(t *testing.T) {
	const h = int64(time.Hour)
	now := int64(1_750_000_000) * int64(time.Second) // in the hour from 1749999600 s
	year := partitionFarWidth
	maxFrom := math.MaxInt64 - math.MaxInt64%year
	minTo := math.MinInt64 - math.MinInt64%year // the first cell's end: % rounds towards 0
	parts := []partition{
		{From: 1749992400 * int64(time.Second), To: 1749996000 * int64(time.Second)}, // two hours before now's
		{From: now + 2*h - now%h, To: now + 3*h - now%h},
	}
	for _, tt := range []struct {
		name     string
		ts       int64
		in       []partition
		from, to int64
		max      bool
		wantName string
	}{
		{"near, none around", now, nil, 1749999600e9, 1750003200e9, false, "courier_messages_1749999600_1750003200"},
		{"near, between two", now, parts, 1749999600e9, 1750003200e9, false, "courier_messages_1749999600_1750003200"},
		{"far past", 1e9, nil, 0, year, false, "courier_messages_0_31536000"},
		{"far future, cut by the next", now + 40*24*h, []partition{{From: now + 50*24*h, To: now + 50*24*h + h}},
			(now + 40*24*h) / year * year, now + 50*24*h, false, ""},
		{"far past, cut by the one before", now - 40*24*h, []partition{{From: (now-40*24*h)/year*year + h, To: now - 40*24*h - h}},
			now - 40*24*h - h, (now-40*24*h)/year*year + year, false, ""},
		{"the last cell", math.MaxInt64 - 5, nil, maxFrom, 0, true, ""},
		{"before 1970", -1, nil, -year, 0, false, "courier_messages_m31536000_0"},
		{"before 1970, on a cell's start", -year, nil, -year, 0, false, "courier_messages_m31536000_0"},
		{"the first cell", math.MinInt64 + 5, nil, math.MinInt64, minTo, false, "courier_messages_min_m" + strconv.FormatInt(-minTo/1e9, 10)},
		{"the first cell, cut by the next", math.MinInt64 + 5, []partition{{From: minTo - h, To: minTo}}, math.MinInt64, minTo - h, false, ""},
	} {
		p := newPartition(tt.ts, now, tt.in)
		if p.From != tt.from || p.Max != tt.max || (!tt.max && p.To != tt.to) || !p.holds(tt.ts) {
			t.Errorf("%s: %+v, want from %d to %d max %v", tt.name, p, tt.from, tt.to, tt.max)
		}
		if tt.wantName != "" && p.Name != tt.wantName {
			t.Errorf("%s: name %s, want %s", tt.name, p.Name, tt.wantName)
		}
		if (tt.from%int64(time.Second) == 0 || tt.from == math.MinInt64) && tt.to%int64(time.Second) == 0 {
			back, ok := parsePartition(p.Name)
			if !ok || back != p {
				t.Errorf("%s: %s parses to %+v, %v", tt.name, p.Name, back, ok)
			}
		}
		for _, q := range tt.in {
			if p.From < q.To && q.From < p.To {
				t.Errorf("%s: %+v overlaps %+v", tt.name, p, q)
			}
		}
	}
	for _, bad := range []string{"courier_messages", "courier_messages_1_x", "courier_messages_5_5", "courier_messages_9_3",
		"courier_messages_99999999999_max", "courier_messages_v1", "courier_hashes", "courier_messages_m5_m9", "courier_messages_mm5_1",
		"courier_messages_m_1", "courier_messages_1_min", "courier_messages_max_1", "courier_messages_m99999999999_1"} {
		if p, ok := parsePartition(bad); ok {
			t.Errorf("parsePartition(%q) = %+v", bad, p)
		}
	}
	if p, ok := findPartition(parts, parts[1].From); !ok || p != parts[1] {
		t.Errorf("findPartition at a partition's start: %+v, %v", p, ok)
	}
	if _, ok := findPartition(parts, parts[0].To); ok {
		t.Error("findPartition at a partition's end found it")
	}
}
