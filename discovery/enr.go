package discovery

import (
	"crypto/ecdsa"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	gcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/p2p/enode"
	"github.com/ethereum/go-ethereum/p2p/enr"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// Keys of the Waku fields of an ENR (waku-org/specs standards/core/enr.md,
// rfc-index 31/enr.md).
const (
	// CapabilitiesKey holds the one-byte Capabilities bitfield.
	CapabilitiesKey = "waku2"
	// MultiaddrsKey holds multiaddrs the standard keys cannot carry, each
	// prefixed by its 2-byte big-endian length.
	MultiaddrsKey = "multiaddrs"
	// ShardListKey holds relay shards as a list: u16 cluster, u8 count,
	// then u16 shard ids, all big-endian.
	ShardListKey = "rs"
	// ShardVectorKey holds relay shards as u16 cluster then a 1024-bit
	// vector, 130 bytes.
	ShardVectorKey = "rsv"
)

// MaxRecordSize is the largest encoded record in bytes (EIP-778).
const MaxRecordSize = enr.SizeLimit

// shardVectorSize is the size of an rsv value: cluster id and 128 bytes.
const shardVectorSize = 2 + 128

// maxShardID is the largest shard id (relay-sharding.md: 1024 shards).
const maxShardID = 1023

// Errors of the record decoders. Every decoding error wraps ErrMalformed.
var (
	// ErrMalformed: a record or one of its Waku fields does not decode.
	ErrMalformed = errors.New("discovery: malformed ENR")
	// ErrTooLarge: a record over MaxRecordSize bytes.
	ErrTooLarge = errors.New("discovery: ENR over 300 bytes")
	// ErrNotSecp256k1: a record whose identity is not a secp256k1 key
	// ("v4" scheme), the only one Waku uses.
	ErrNotSecp256k1 = errors.New("discovery: ENR identity is not secp256k1 v4")
)

// Capabilities is the waku2 bitfield: which Waku protocols a node serves
// (nwaku waku_enr/capabilities.nim; bit 0 is the least significant).
type Capabilities uint8

// Bits of Capabilities.
const (
	Relay Capabilities = 1 << iota
	Store
	Filter
	Lightpush
	Sync
	Mix
)

var capNames = []string{"relay", "store", "filter", "lightpush", "sync", "mix"}

// Has reports whether every bit of want is set.
func (c Capabilities) Has(want Capabilities) bool { return c&want == want }

// String lists the set capabilities by name, comma separated.
func (c Capabilities) String() string {
	var out []string
	for i, name := range capNames {
		if c&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	if rest := c >> len(capNames); rest != 0 {
		out = append(out, fmt.Sprintf("0x%02x", uint8(rest)<<len(capNames)))
	}
	return strings.Join(out, ",")
}

// RelayShards are the shards of one cluster a node relays.
type RelayShards struct {
	ClusterID uint16
	Shards    []uint16
}

// Contains reports whether rs has shard s of cluster c.
func (rs RelayShards) Contains(c, s uint16) bool {
	return rs.ClusterID == c && slices.Contains(rs.Shards, s)
}

// listSize is the size of the rs value of rs.
func (rs RelayShards) listSize() int { return 3 + 2*len(rs.Shards) }

// Encode returns the key and value that carry rs in a record: rs when the
// list is smaller than the 130-byte vector (fewer than 64 shards), else rsv,
// as nwaku's withWakuRelaySharding chooses. Shard ids over 1023 are an
// error wrapping ErrMalformed.
func (rs RelayShards) Encode() (key string, value []byte, err error) {
	for _, s := range rs.Shards {
		if s > maxShardID {
			return "", nil, fmt.Errorf("%w: shard %d over %d", ErrMalformed, s, maxShardID)
		}
	}
	if rs.listSize() < shardVectorSize {
		out := binary.BigEndian.AppendUint16(nil, rs.ClusterID)
		out = append(out, byte(len(rs.Shards)))
		for _, s := range rs.Shards {
			out = binary.BigEndian.AppendUint16(out, s)
		}
		return ShardListKey, out, nil
	}
	out := make([]byte, shardVectorSize)
	binary.BigEndian.PutUint16(out, rs.ClusterID)
	for _, s := range rs.Shards {
		out[2+s/8] |= 1 << (s % 8)
	}
	return ShardVectorKey, out, nil
}

// DecodeShardList decodes an rs value. Lengths that disagree with the count
// byte and shard ids over 1023 are errors wrapping ErrMalformed. The result
// does not alias b.
func DecodeShardList(b []byte) (RelayShards, error) {
	if len(b) < 3 {
		return RelayShards{}, fmt.Errorf("%w: rs of %d bytes, want at least 3", ErrMalformed, len(b))
	}
	n := int(b[2])
	if len(b) != 3+2*n {
		return RelayShards{}, fmt.Errorf("%w: rs says %d shards in %d bytes", ErrMalformed, n, len(b))
	}
	rs := RelayShards{ClusterID: binary.BigEndian.Uint16(b), Shards: make([]uint16, n)}
	for i := range n {
		s := binary.BigEndian.Uint16(b[3+2*i:])
		if s > maxShardID {
			return RelayShards{}, fmt.Errorf("%w: rs shard %d over %d", ErrMalformed, s, maxShardID)
		}
		rs.Shards[i] = s
	}
	return rs, nil
}

// DecodeShardVector decodes an rsv value of exactly 130 bytes; bit s%8 of
// byte 2+s/8 set means shard s (nwaku toBitVector).
func DecodeShardVector(b []byte) (RelayShards, error) {
	if len(b) != shardVectorSize {
		return RelayShards{}, fmt.Errorf("%w: rsv of %d bytes, want %d", ErrMalformed, len(b), shardVectorSize)
	}
	rs := RelayShards{ClusterID: binary.BigEndian.Uint16(b), Shards: []uint16{}}
	for i, v := range b[2:] {
		for bit := range 8 {
			if v&(1<<bit) != 0 {
				rs.Shards = append(rs.Shards, uint16(8*i+bit))
			}
		}
	}
	return rs, nil
}

// EncodeMultiaddrs encodes addrs as a multiaddrs value, each prefixed by its
// 2-byte big-endian length. A /p2p component is left out, as nwaku's
// stripPeerId does: the record's key says whose addresses they are.
func EncodeMultiaddrs(addrs []ma.Multiaddr) []byte {
	var out []byte
	for _, a := range addrs {
		raw := withoutP2P(a).Bytes()
		out = binary.BigEndian.AppendUint16(out, uint16(len(raw)))
		out = append(out, raw...)
	}
	return out
}

// DecodeMultiaddrs decodes a multiaddrs value. A zero length or a length
// past the end is an error wrapping ErrMalformed; an entry that is not a
// valid multiaddr is skipped, as nwaku's decodeMultiaddrs does. The result
// does not alias b.
func DecodeMultiaddrs(b []byte) ([]ma.Multiaddr, error) {
	var out []ma.Multiaddr
	for len(b) > 0 {
		if len(b) < 2 {
			return nil, fmt.Errorf("%w: multiaddrs: a length needs 2 bytes, %d left", ErrMalformed, len(b))
		}
		n := int(binary.BigEndian.Uint16(b))
		if n == 0 || len(b) < 2+n {
			return nil, fmt.Errorf("%w: multiaddrs: length %d with %d bytes left", ErrMalformed, n, len(b)-2)
		}
		if a, err := ma.NewMultiaddrBytes(slices.Clone(b[2 : 2+n])); err == nil {
			out = append(out, a)
		}
		b = b[2+n:]
	}
	return out, nil
}

func withoutP2P(a ma.Multiaddr) ma.Multiaddr {
	var out ma.Multiaddr
	for _, c := range a {
		if c.Protocol().Code != ma.P_P2P {
			out = append(out, c)
		}
	}
	return out
}

// Peer is what a Waku node learns from another's record.
type Peer struct {
	// Node is the verified record.
	Node *enode.Node
	// ID is the libp2p peer id of the record's secp256k1 key.
	ID peer.ID
	// Addrs are the libp2p addresses (without /p2p): ip/tcp and ip6/tcp6
	// from the standard keys, then the multiaddrs field.
	Addrs []ma.Multiaddr
	// Caps is the waku2 bitfield; HasCaps is false when the record has none.
	Caps    Capabilities
	HasCaps bool
	// Shards is the rs or rsv field; HasShards false when neither is set.
	Shards    RelayShards
	HasShards bool
}

// ParseENR parses the text form "enr:<base64url>" of a record and verifies
// its signature. Errors wrap ErrMalformed (bad text or bad signature),
// ErrTooLarge or ErrNotSecp256k1.
func ParseENR(text string) (*enode.Node, error) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "enr:") {
		return nil, fmt.Errorf("%w: text does not start with \"enr:\"", ErrMalformed)
	}
	// base64url of 300 bytes is 400 characters.
	if len(text) > len("enr:")+(MaxRecordSize*4+2)/3 {
		return nil, fmt.Errorf("%w: %d characters", ErrTooLarge, len(text))
	}
	n, err := enode.Parse(enode.ValidSchemes, text)
	if err != nil {
		if strings.Contains(err.Error(), "bigger than") {
			return nil, fmt.Errorf("%w: %w", ErrTooLarge, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if n.Record().IdentityScheme() != "v4" || n.Pubkey() == nil {
		return nil, ErrNotSecp256k1
	}
	return n, nil
}

// DecodePeer reads the Waku view of a verified record: peer id, addresses,
// capabilities and shards. A malformed Waku field is an error wrapping
// ErrMalformed; absent fields are not.
func DecodePeer(n *enode.Node) (Peer, error) {
	pub := n.Pubkey()
	if pub == nil {
		return Peer{}, ErrNotSecp256k1
	}
	id, err := PeerID(pub)
	if err != nil {
		return Peer{}, err
	}
	p := Peer{Node: n, ID: id}
	r := n.Record()
	if ep, ok := n.TCPEndpoint(); ok && ep.Port() != 0 {
		proto := "ip4"
		if ep.Addr().Is6() {
			proto = "ip6"
		}
		if a, err := ma.NewMultiaddr(fmt.Sprintf("/%s/%s/tcp/%d", proto, ep.Addr(), ep.Port())); err == nil {
			p.Addrs = append(p.Addrs, a)
		}
	}
	var raw []byte
	switch err := r.Load(enr.WithEntry(MultiaddrsKey, &raw)); {
	case err == nil:
		extra, err := DecodeMultiaddrs(raw)
		if err != nil {
			return Peer{}, err
		}
		p.Addrs = append(p.Addrs, extra...)
	case !enr.IsNotFound(err):
		return Peer{}, fmt.Errorf("%w: multiaddrs: %w", ErrMalformed, err)
	}
	// nwaku writes waku2 as a one-byte string, go-waku as an RLP integer;
	// both load as a byte string (the integer 0 as an empty one).
	switch err := r.Load(enr.WithEntry(CapabilitiesKey, &raw)); {
	case err == nil:
		if len(raw) > 1 {
			return Peer{}, fmt.Errorf("%w: waku2 of %d bytes", ErrMalformed, len(raw))
		}
		p.HasCaps = true
		if len(raw) == 1 {
			p.Caps = Capabilities(raw[0])
		}
	case !enr.IsNotFound(err):
		return Peer{}, fmt.Errorf("%w: waku2: %w", ErrMalformed, err)
	}
	if p.Shards, p.HasShards, err = loadShards(r); err != nil {
		return Peer{}, err
	}
	return p, nil
}

// loadShards reads rs, else rsv (nwaku relaySharding).
func loadShards(r *enr.Record) (RelayShards, bool, error) {
	var raw []byte
	for _, k := range []string{ShardListKey, ShardVectorKey} {
		err := r.Load(enr.WithEntry(k, &raw))
		if enr.IsNotFound(err) {
			continue
		}
		if err != nil {
			return RelayShards{}, false, fmt.Errorf("%w: %s: %w", ErrMalformed, k, err)
		}
		decode := DecodeShardList
		if k == ShardVectorKey {
			decode = DecodeShardVector
		}
		rs, err := decode(raw)
		return rs, err == nil, err
	}
	return RelayShards{}, false, nil
}

// PeerID returns the libp2p peer id of a secp256k1 public key.
func PeerID(pub *ecdsa.PublicKey) (peer.ID, error) {
	k, err := crypto.UnmarshalSecp256k1PublicKey(gcrypto.CompressPubkey(pub))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotSecp256k1, err)
	}
	return peer.IDFromPublicKey(k)
}

// ECDSAKey converts a libp2p secp256k1 private key to the form go-ethereum
// signs records with. Other key types are ErrNotSecp256k1.
func ECDSAKey(k crypto.PrivKey) (*ecdsa.PrivateKey, error) {
	if k.Type() != crypto.Secp256k1 {
		return nil, ErrNotSecp256k1
	}
	raw, err := k.Raw()
	if err != nil {
		return nil, err
	}
	return gcrypto.ToECDSA(raw)
}
