package sha256x2

import "github.com/klauspost/cpuid/v2"

// haveRounds: blocks2 needs the SHA extensions, SSSE3 (PSHUFB), SSE4.1
// (PBLENDW) and AVX (VMOVDQU), as crypto/sha256's own SHA-NI rounds do,
// and SSE4.2 (CRC32).
var haveRounds = cpuid.CPU.Supports(cpuid.SHA, cpuid.SSSE3, cpuid.SSE4, cpuid.SSE42, cpuid.AVX)

// blocks2 runs the SHA-256 compression of n 64-byte blocks read from p1 on
// the chaining value h1, and of n read from p2 on h2, and carries the
// CRC-32C register *crc over p1's blocks (blocks2_amd64.s). The register
// is the CRC32 instruction's: hash/crc32's value inverted.
//
//go:noescape
func blocks2(h1, h2 *[8]uint32, p1, p2 *byte, n int, crc *uint32)
