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
// Range bounds are inclusive at both ends, as nwaku's Slice[SyncID]; an
// item two ranges of one payload both hold (a lower bound is the previous
// upper bound's timestamp with a zero hash) is compared within the first
// of them only. A decoded bound
// carries the hash prefix sent (zero-padded) when its timestamp delta is
// 0, and a zero hash otherwise, as nwaku decodes it.
// Where nwaku would drop a range it cannot split (fewer nanoseconds than
// partitions), this package sends the range's items instead, which nwaku
// reads as any item set.
//
// # Transfer
//
// Each side pushes what the other lacks: the messages are read from the
// archive by hash and written as WakuMessageAndTopic frames. A received
// message is decoded once, hashed once, and accepted only if the
// reconciliation with that peer found it missing here: its hash was named,
// or it lies in a range this side said it holds nothing in and its topics
// are ones this side syncs (the peer chooses the topic lists of its
// payloads, so checking them would stop no one). It is then appended to
// the archive through the same Append the relay uses and indexed. Anything
// else is rejected and counted.
//
// # Bounds
//
// A peer is not trusted to be honest: what it sends is checked before any
// work is done for it, and what each of its bytes can cost is bounded.
//
//   - Order. Each range's upper bound must be strictly above the previous
//     one's (the first range's above the first lower bound), every
//     timestamp within int64 with no wrap-around, and the items of an item
//     set strictly increasing. The spec asks it (a lower bound is strictly
//     below its upper bound, and a range starts where the previous one
//     ends) and nwaku's encoder writes nothing else; a payload that breaks
//     it is refused whole, before any of it is processed (ErrUnordered),
//     and the session ends. Without it a range may jump back to the start
//     of the window, and one payload asks for every item many times.
//   - Sizes. A payload is at most Config.MaxPayloadSize (8 MiB), a session
//     at most Config.MaxRoundTrips (64) payloads received, and at most
//     Config.MaxInboundSessions (4) are served at once. Topic lists hold at
//     most 1,024 topics of 1 to 1,024 bytes each. Every count (topics,
//     items) is checked against the bytes left before anything is
//     allocated for it.
//   - Decoding. The service does not build a decoded payload: it checks one
//     in one pass that allocates only its topic lists, then answers it
//     range by range as it reads them again. Answering one payload, from
//     reading its frame to recording what it found, allocates at most 12
//     bytes per byte received (4.4 measured for the worst payloads found:
//     the frame itself; 32 bytes per hash named, each taking at least 33;
//     80 bytes per range said empty, each taking at least 34; a reply
//     buffer as large as the payload; and an expectation that at most
//     doubles as it grows, 7.7 measured on a second round trip), plus at
//     most 400 bytes per item held, to list and push them (117 measured).
//     The payload decoder (internal/rbsr), which does build one, sizes its slices
//     exactly from that first pass and merges consecutive skips: at most
//     51 bytes per byte (a Range takes 152 bytes and ranges take at least 3
//     bytes each on average, a 2-byte skip between 4-byte empty item sets;
//     an item takes 40 bytes for at least 33).
//   - Work and reply per payload. As the ranges are in order, each held
//     item is looked at within one range at most, and each range's items
//     are found by galloping from where the previous range ended: one
//     payload costs O(its bytes + items held) with the index locked. Its
//     reply holds the payload's ranges echoed (in no more bytes than they
//     took), each held item at most once (at most 41 bytes: a time delta
//     and a hash), and at most 8 partitions of at most 43 bytes for each
//     range split, one per more than Config.ItemSetThreshold (100) items
//     held.
//   - Per session. Its replies list at most Config.StorageCapacity
//     (50,000) items in all, and it pushes at most that many distinct
//     messages: an honest session lists an item once at most (a range
//     answered with items is not visited again). Past either it fails
//     with ErrTooManyDifferences.
//   - Expectations. What sessions with one peer found missing here is
//     kept to check its transfers against until Config.ExpectTTL (2 min)
//     after its last use: the hashes named, sorted, and the ranges said
//     empty, merged into disjoint sorted ranges, so that a transferred
//     message is checked by binary search. At most Config.MaxMissing
//     (50,000, the index's capacity) entries per peer and
//     (MaxInboundSessions+1) times that, 250,000 (about 8 MiB of hashes,
//     20 MiB of ranges), for all peers; expectations of peers with no
//     session in progress are dropped first to make room, the oldest
//     first, and at most 64 of them are kept. A session that would pass a
//     bound fails with ErrTooManyDifferences.
package storesync
