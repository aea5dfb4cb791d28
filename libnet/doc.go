// Package libnet is a Go lib-net: a direct node-to-node TCP transport for
// permissioned node networks (tell, ask, multi-send), wire-compatible with
// lib-net's header version 1 and adding a raw binary lane as header
// version 2. Wire facts come from lib-net's source
// (github.com/shardeum/lib-net, 1.3.15 at commit 2832f1d and the 1.4.x
// files), shardus-core and lib-types, cited where each rule is kept.
//
// # Frames
//
// Every frame is a u32 big-endian length followed by that many bytes. The
// first byte tells the lane: '{' is lib-net's plain JSON lane (augData
// JSON, accepted on receive); 0x01 is a headered frame, laid out with
// little-endian integers as lib-net's message.rs does:
//
//	[0x01][u8 version][u32 hdr_len][header][u32 data_len][data]
//	[u32 owner_len][owner][u32 sig_len][sig]
//
// Version 1 carries HeaderV1 (uuid, message_length, sender_id, tracker_id,
// verification_data, compression) and augData JSON as data, the payload
// base64 inside it as {"value":b64,"dataType":"bb"} (lib-types
// safeStringify): in shardus-core's route envelope {"payload":…,"route":…}
// for a tell or ask, as the whole data for a reply. On receive every Buffer
// form lib-net and shardus-core write is read (package internal/legacy).
// lib-net 1.3.11 and later never compress legacy data and ignore the
// header's compression field; so does this package, unless a peer is
// listed in Config.LegacyCompressPeers. Version 2, the raw lane, carries this fixed header and
// the payload as opaque bytes (compressed or not), with no JSON, no base64
// and no string conversion:
//
//	0   uuid        [16]byte
//	16  dir         u8   1 tell, 2 ask, 3 resp
//	17  flags       u8   bits 0-2 compression (0 none, 1 gzip, 2 brotli,
//	                     3 zstd), bit 3 trace block present
//	18  sender_len  u8
//	19  route_len   u8
//	20  raw_len     u32  payload length before compression
//	24  sender_id, route, then the trace block if flagged:
//	    send, receive, reply time as i64 Unix nanoseconds
//
// An unsigned raw frame costs 4+18+24 = 46 bytes plus sender id and route
// around the payload. Signatures (owner 32-byte Ed25519 key, sig 64-byte
// signature followed by the 32-byte keyed BLAKE2b-256 hash) cover version
// through data; legacy frames are always signed (the lane needs keys),
// raw frames when Config.SignRaw is set. Config.HashKey's comment says
// which received frames are authenticated on which lane.
//
// # Lanes
//
// Config.Lane picks the lane a network sends on, PeerLanes and SetPeerLane
// override it per peer, and a peer that answered us on the raw lane is
// known to take it. Both lanes are always accepted. A raw-lane ask is
// answered on the connection it arrived on; a legacy ask is answered as
// lib-net does, by a new frame to the sender's IP and augData PORT.
//
// # Receive limits
//
// A frame's outer length is checked against the limits before any of its
// body is read. Each connection owns a 16 KiB read buffer, which holds most
// small frames whole; a larger frame is read into 64 KiB steps as it
// arrives, so a connection receiving it holds at most the bytes that have
// arrived plus 128 KiB more (Stats.ReadBuffers). A frame that is read
// whole but rejected (bad signature, header over the limit, bad envelope)
// is dropped and counted and the connection kept, as lib-net skips it; a
// frame that cannot be delimited closes the connection. Once a frame's first byte
// has arrived the rest must arrive within Config.FrameTimeout; an accepted
// connection on which no frame begins within twice Config.IdleTimeout is
// closed; at most Config.MaxInboundConns accepted connections are open at
// once. A message over the sender's own Config.PayloadLimit is refused
// with ErrTooLarge before anything is written.
//
// # Hosts that own the envelope
//
// lib-net's JavaScript wrapper builds augData and matches replies to asks
// itself; a host like it (the Node.js core in libnet/napi) sets
// Config.FrameHandler to receive legacy frames unparsed (Frame: data,
// header version, header and signature, as lib-net's listener hands them
// to JavaScript) and sends with SendFrame and MultiSendFrame (framed and
// signed once, one result per peer), Evict and NetStats (lib-net's stats()
// shape). Those calls, and TellAsync, MultiTellAsync and AskAsync for the
// raw lane, never block: each queues to the peer in call order and
// answers through a callback, bounded by Config.AsyncQueueLen.
//
// # Ownership and lifecycle
//
// A Msg's payload is only read, and not kept after Tell, Ask, MultiTell or
// MultiAsk returns. A Handler's payload aliases the connection's read
// buffer and is valid until the Handler returns. A Reply's payload belongs
// to the caller. Each outbound peer has one pooled connection, a bounded
// queue and one writer goroutine; each connection one reader goroutine.
// Every pending ask is removed and its deadline stopped on reply, deadline,
// cancel, write error and Close; Close waits for every goroutine.
package libnet
