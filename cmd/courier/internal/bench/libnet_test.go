package bench

import (
	"context"
	"testing"
	"time"

	"github.com/couriernet/courier/libnet"
)

func TestRunLibnetRows(t *testing.T) {
	rows, err := RunLibnet(context.Background(), LibnetConfig{N: 40, Warmup: 4, Seed: 42, Sizes: []string{"1kB", "mix"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"libnet-raw-tell-1kB", "libnet-raw-tell-mix", "libnet-raw-ask-1kB", "libnet-raw-ask-mix",
		"libnet-legacy-tell-1kB", "libnet-legacy-tell-mix", "libnet-legacy-ask-1kB", "libnet-legacy-ask-mix",
		"tcp-baseline-100kB",
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		if r.Scenario != want[i] || r.Msgs != 40 || !(r.MsgPerS > 0) {
			t.Fatalf("row %d: %s msgs %d msg/s %v", i, r.Scenario, r.Msgs, r.MsgPerS)
		}
		raw := i < 4
		if raw && (r.Base64OpsPerMsg != 0 || r.JSONOpsPerMsg != 0) {
			t.Fatalf("%s: base64 %v json %v per message", r.Scenario, r.Base64OpsPerMsg, r.JSONOpsPerMsg)
		}
		if !raw && i < 8 && r.Base64OpsPerMsg == 0 {
			t.Fatalf("%s: legacy lane counted no base64", r.Scenario)
		}
	}
	if want := float64(1000 + 4 + 18 + 24 + len("bench-a") + len("bench")); rows[0].WireBytesPerMsg != want {
		t.Fatalf("raw 1kB wire bytes %v", rows[0].WireBytesPerMsg)
	}
}

func TestLibnetProfile(t *testing.T) {
	for name, want := range map[string]string{"1kB": "1kB", "100kB": "100kB", "mix": SeedProfile} {
		p, err := libnetProfile(name)
		if err != nil || p.Name != want {
			t.Fatalf("libnetProfile(%q) = %v, %v", name, p.Name, err)
		}
	}
	if _, err := libnetProfile("2kB"); err == nil {
		t.Fatal("unknown size accepted")
	}
}

// The bench's asks wait up to 60 s, not the library's 5 s default, on
// both lanes and signed or not, so a loaded machine slows a row down
// instead of failing it.
func TestLibnetAskTimeout(t *testing.T) {
	for _, lane := range []libnet.Lane{libnet.LaneRaw, libnet.LaneLegacy} {
		for _, sign := range []bool{false, true} {
			c := libnetConfig(LibnetConfig{Sign: sign}, lane)
			if c.AskTimeout != 60*time.Second || c.Lane != lane {
				t.Fatalf("lane %v sign %v: AskTimeout %v lane %v", lane, sign, c.AskTimeout, c.Lane)
			}
		}
	}
}
