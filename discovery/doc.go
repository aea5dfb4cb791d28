// Package discovery finds Waku peers and says where this node is: its ENR
// (EIP-778) with the Waku fields, discv5, EIP-1459 DNS discovery and the
// filter that keeps the records of peers worth dialling.
//
// # Records
//
// Records are go-ethereum's p2p/enr and p2p/enode (secp256k1 "v4" identity).
// This package adds only the Waku fields (waku-org/specs
// standards/core/enr.md, nwaku waku/waku_enr/, go-waku
// waku/v2/protocol/enr/): the waku2 capability bitfield, multiaddrs for
// addresses the standard keys cannot carry (each prefixed by its 2-byte
// big-endian length, dropped from the end until the record fits in 300
// bytes) and relay shards in rs or rsv, whichever is smaller.
//
// Decoders never panic on input: every malformed record or field is an
// error wrapping ErrMalformed (or ErrTooLarge, ErrNotSecp256k1), and each
// decoder has a Fuzz target.
//
// # DNS
//
// ResolveTree and ResolveIPv4 ask their name servers in turn. Bounds: each
// lookup lasts at most DNSConfig.Timeout (5 s), and the whole call ends as
// soon as its context does, a lookup in flight abandoned, so that a node
// stopped while a name server never answers stops at once.
package discovery
