//go:build !amd64

package sha256x2

// haveRounds: there are no interleaved rounds for this architecture, so
// Sum is two calls of crypto/sha256.
const haveRounds = false

func blocks2(h1, h2 *[8]uint32, p1, p2 *byte, n int, crc *uint32) {
	panic("sha256x2: no interleaved rounds")
}
