package txsender

import (
	"encoding/hex"
	"strings"
	"testing"
)

const eip155Example = "f86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83"

// Vectors: lib-net's own (shardeum_utils/src/lib.rs tests,
// test/test_ecrecover.ts) and EIP-155's example transaction (private key
// 0x4646...46, sender 0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F).
func TestSenderVectors(t *testing.T) {
	for _, tc := range []struct {
		name, raw, addr string
		gas             bool
	}{
		{"lib-net EIP-2930", "01f90129821f9205832dc6c0832dc6c0946b92bdc43874fc19ead67ac7e37f2e126667b30780b844a9059cbb000000000000000000000000cd21d146980570e2dfb5f65a5881efbfdd882ab2000000000000000000000000000000000000000000000000016345785d8a0000f87cf87a946b92bdc43874fc19ead67ac7e37f2e126667b307f863a04d6102e88f63713248aa95286e545e26b440b909136464216b41036801218d26a0216d8091b2612eb7def258a018b1f2bdc6633976c86e5206357ff8385135f664a08066a4dac9c48b171b3aec8bfb10db23409617b8d8cc77acd57d766f7cc4f40080a0131cc2e628e7312f6f8ba901e83c75df0c780f99f588b3cd1d88d2d546140126a008e7e60fe3996a4601e4378d8a10c99ec30887d0dabdd6d8944b8c5a0c04caab",
			"0x384913564a4b0b6f54adcac3c5fc627d69f9fe41", true},
		{"lib-net legacy", "f86d5c853f84fc751682520894bd0a42d14bd5cb0fb787476ad777241c210e979e872386f26fc1000080823f48a0dea7f6599e38b40757e31b4747059a264795d587a202426600655a81d2d9a27ea0051d012a55da07ae557edbef305eea1a034df90519002f4e24787f9a218aa280",
			"0x32b6f2c027d4c9d99ca07d047d17987390a5eb39", true},
		{"EIP-155 example", eip155Example, "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f", true},
	} {
		a, gas, err := Sender(tc.raw)
		if err != nil || "0x"+hex.EncodeToString(a[:]) != tc.addr || gas != tc.gas {
			t.Errorf("%s: %x gas %v err %v, want %s", tc.name, a, gas, err, tc.addr)
		}
	}
}

// What lib-net refuses: not hex, unknown types, a v that is no recovery
// id, a truncated transaction.
func TestSenderRefusals(t *testing.T) {
	for name, raw := range map[string]string{
		"not hex":   "zz",
		"empty":     "",
		"type 3":    "03c0",
		"type 4":    "04c0",
		"v of 29":   strings.Replace(eip155Example, "8025a0", "801da0", 1),
		"truncated": eip155Example[:40],
	} {
		if _, _, err := Sender(raw); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzSender(f *testing.F) {
	f.Add(eip155Example)
	f.Add("02c0")
	f.Fuzz(func(t *testing.T, raw string) {
		_, _, _ = Sender(raw) // must not panic
	})
}
