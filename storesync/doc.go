// Package storesync keeps a store node's archive consistent with its peers'
// after downtime: Waku store-sync, range-based set reconciliation (RBSR) of
// (timestamp, message hash) items over /vac/waku/reconciliation/1.0.0, and
// the transfer of what one side lacks over /vac/waku/transfer/1.0.0
// (waku-org/specs standards/core/sync.md).
//
// # Items, ranges and fingerprints
//
// Every archived message within the sync window is a SyncID: its timestamp
// (Unix ns) and its 32-byte deterministic message hash, ordered by time,
// then hash. A range's fingerprint is the XOR of the hashes of the items it
// holds. Two nodes compare the fingerprint of the whole window; where
// fingerprints differ, the receiving side splits the range into
// Config.Partitions time partitions, sending a fingerprint for each, or
// the items themselves (an item set) once a range holds at most
// Config.ItemSetThreshold items. Item sets are compared element by
// element, which yields the hashes each side lacks. The exchange ends on a
// payload with no ranges, or only skip ranges, in either direction.
//
// # Wire format: nwaku's, not the spec's
//
// This package speaks the encoding nwaku v0.38.1 speaks
// (waku/waku_store_sync/codec.nim), because that is the implementation a
// courier node syncs with. It differs from the specification:
//
//   - The payload starts with a varint count of pubsub topics, each a
//     varint length and its bytes, then the same for content topics, where
//     the spec has a cluster id and shard list. An empty list means "all".
//   - The first range's lower bound timestamp is written explicitly (the
//     spec makes it 0); its hash is implicitly all zero.
//   - A payload with no ranges is the single byte 0x00; a zero-length frame
//     is read as empty too.
//   - WakuMessageAndTopic is written with the pubsub topic as field 1 and
//     the message as field 2, the spec's order reversed. Both orders are
//     read.
//
// Range bounds are inclusive at both ends, as nwaku's Slice[SyncID]. A
// decoded bound carries the hash prefix sent (zero-padded) when its
// timestamp delta is 0, and a zero hash otherwise, as nwaku decodes it.
// Where nwaku would drop a range it cannot split (fewer nanoseconds than
// partitions), this package sends the range's items instead, which nwaku
// reads as any item set.
//
// # Transfer
//
// Each side pushes what the other lacks: the messages are read from the
// archive by hash and written as WakuMessageAndTopic frames. A received
// message is decoded once, hashed once, and accepted only if its hash is
// one the reconciliation with that peer found missing here; it is then
// appended to the archive through the same Append the relay uses and
// indexed. Anything else is rejected and counted.
package storesync
