package metadata

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/protowalk"
)

// MaxRPCSize is the largest encoded request or response in bytes that is
// read, as nwaku's RpcResponseMaxBytes (waku_metadata/protocol.nim).
const MaxRPCSize = 1024

// Field numbers of WakuMetadataRequest and WakuMetadataResponse
// (rfc-index 66/metadata.md; nwaku waku_metadata/rpc.nim).
const (
	fieldClusterID        protowire.Number = 1
	fieldShardsDeprecated protowire.Number = 2
	fieldShards           protowire.Number = 3
)

// Sentinel errors of the codec: every decoding error (Service.Request's
// included) wraps one of them.
var (
	// ErrTooLarge: an encoded RPC over MaxRPCSize bytes.
	ErrTooLarge = errors.New("metadata: rpc over 1024 bytes")
	// ErrMalformed: bytes that are not a valid protobuf, or a known field
	// with the wrong wire type.
	ErrMalformed = errors.New("metadata: malformed rpc")
)

// RPC is a WakuMetadataRequest or WakuMetadataResponse; both have the same
// fields: {optional uint32 cluster_id = 1; repeated uint32 shards = 3 (packed);
// repeated uint32 shards = 2 (deprecated)}.
type RPC struct {
	// ClusterID is field 1; meaningful only when HasClusterID is true.
	ClusterID    uint32
	HasClusterID bool
	// Shards are the shard ids. The slice is owned by the RPC.
	Shards []uint32
}

// append appends the encoding of r to dst, as nwaku and go-waku write it:
// field 1 when HasClusterID (zero included: a cluster id of 0 is set
// explicitly), then every shard unpacked in the deprecated field 2, then all
// shards packed in field 3 (omitted when there are none). When that is over
// MaxRPCSize bytes, the deprecated field 2 is left out: nwaku, go-waku and
// decode read field 3 first, and a peer drops an RPC over MaxRPCSize. An
// RPC whose field 3 alone is over MaxRPCSize is still encoded whole; see
// CheckShards.
func (r *RPC) append(dst []byte) []byte {
	if r.HasClusterID {
		dst = protowire.AppendTag(dst, fieldClusterID, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(r.ClusterID))
	}
	if len(r.Shards) == 0 {
		return dst
	}
	if r.headerSize()+r.deprecatedSize()+r.packedSize() <= MaxRPCSize {
		for _, s := range r.Shards {
			dst = protowire.AppendTag(dst, fieldShardsDeprecated, protowire.VarintType)
			dst = protowire.AppendVarint(dst, uint64(s))
		}
	}
	dst = protowire.AppendTag(dst, fieldShards, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(r.shardBytes()))
	for _, s := range r.Shards {
		dst = protowire.AppendVarint(dst, uint64(s))
	}
	return dst
}

// size returns the length in bytes of the encoding append produces.
func (r *RPC) size() int {
	n := r.headerSize() + r.packedSize()
	if len(r.Shards) > 0 && n+r.deprecatedSize() <= MaxRPCSize {
		n += r.deprecatedSize()
	}
	return n
}

// headerSize is the length of field 1.
func (r *RPC) headerSize() int {
	if !r.HasClusterID {
		return 0
	}
	return protowire.SizeTag(fieldClusterID) + protowire.SizeVarint(uint64(r.ClusterID))
}

// shardBytes is the length of the shard ids as varints.
func (r *RPC) shardBytes() int {
	n := 0
	for _, s := range r.Shards {
		n += protowire.SizeVarint(uint64(s))
	}
	return n
}

// packedSize is the length of field 3, 0 without shards.
func (r *RPC) packedSize() int {
	if len(r.Shards) == 0 {
		return 0
	}
	return protowire.SizeTag(fieldShards) + protowire.SizeBytes(r.shardBytes())
}

// deprecatedSize is the length of the unpacked field 2.
func (r *RPC) deprecatedSize() int {
	return len(r.Shards)*protowire.SizeTag(fieldShardsDeprecated) + r.shardBytes()
}

// MinShardsFit is the number of shards that always fit in one RPC, whatever
// the cluster id and shard ids (0..1023): each id takes at most 2 bytes in
// field 3, after at most 4 bytes of field 1 and 3 of field 3's tag and
// length. More fit when ids below 128 (1 byte each) are among them: at most
// 573, for shards 0..572 of cluster 0. All 1024 never fit.
const MinShardsFit = (MaxRPCSize - 4 - 3) / 2

// CheckShards returns nil when the metadata RPC of a node of clusterID
// relaying shards fits in MaxRPCSize bytes, which every peer reads at most
// (nwaku's RpcResponseMaxBytes, waku_metadata/protocol.nim); else an error
// wrapping ErrTooLarge that says how large it would be. shards is only
// read.
func CheckShards(clusterID uint16, shards []uint16) error {
	r := RPC{ClusterID: uint32(clusterID), HasClusterID: true, Shards: make([]uint32, len(shards))}
	for i, s := range shards {
		r.Shards[i] = uint32(s)
	}
	if n := r.size(); n > MaxRPCSize {
		return fmt.Errorf("%w: %d shards take %d bytes even packed (field 3 alone), and peers read at most %d (nwaku's RpcResponseMaxBytes); relay at most %d shards, or fewer above shard 127",
			ErrTooLarge, len(shards), n, MaxRPCSize, MinShardsFit)
	}
	return nil
}

// decode parses one encoded RPC of at most MaxRPCSize bytes. It does not
// alias data; Shards has len == cap. Shards are read from field 3 if it holds any, else from packed
// field 2, else from unpacked field 2, the order of nwaku's decoder. A varint
// wider than 32 bits is truncated, as protobuf does for uint32. Unknown
// fields are skipped; a repeated cluster id takes the last value. Errors wrap
// ErrTooLarge or ErrMalformed.
func decode(data []byte) (RPC, error) {
	if len(data) > MaxRPCSize {
		return RPC{}, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(data))
	}
	var r RPC
	var s3, packed2, unpacked2 []uint32
	rd := protowalk.NewReader(data)
	for rd.Next() {
		switch num, typ := rd.Num(), rd.Type(); {
		case num == fieldClusterID:
			r.ClusterID, r.HasClusterID = uint32(rd.Varint()), true
		case num == fieldShards:
			s3 = appendShards(&rd, s3)
		case num == fieldShardsDeprecated && typ == protowire.BytesType:
			packed2 = appendShards(&rd, packed2)
		case num == fieldShardsDeprecated:
			unpacked2 = appendShards(&rd, unpacked2)
		}
	}
	if err := rd.Err(); err != nil {
		return RPC{}, malformed(err)
	}
	switch {
	case len(s3) > 0:
		r.Shards = s3
	case len(packed2) > 0:
		r.Shards = packed2
	default:
		r.Shards = unpacked2
	}
	r.Shards = slices.Clip(r.Shards) // an append by the caller copies
	return r, nil
}

// appendShards reads one element (varint) or a packed run (bytes) of a
// repeated uint32 field and appends it to dst; any other wire type is an
// error of rd.
func appendShards(rd *protowalk.Reader, dst []uint32) []uint32 {
	if rd.Type() == protowire.VarintType {
		return append(dst, uint32(rd.Varint()))
	}
	return protowalk.AppendPacked(rd, dst)
}

// malformed gives a protowalk error ErrMalformed's wording.
func malformed(err error) error {
	e := err.(*protowalk.Error)
	switch {
	case e.Kind == protowalk.BadTag:
		return fmt.Errorf("%w: tag at offset %d: %v", ErrMalformed, e.Off, e.Err)
	case e.Kind == protowalk.WrongType && e.Num == fieldClusterID:
		return fmt.Errorf("%w: field 1 has wire type %d", ErrMalformed, e.Type)
	case e.Kind == protowalk.WrongType:
		return fmt.Errorf("%w: shards field has wire type %d", ErrMalformed, e.Type)
	}
	return fmt.Errorf("%w: field %d at offset %d: %v", ErrMalformed, e.Num, e.Off, e.Err)
}
