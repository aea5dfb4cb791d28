// Package store implements 13/WAKU2-STORE v3, /vac/waku/store-query/3.0.0
// (rfc-index 13/store.md): a Server that answers queries from an
// archive.Archive and a client, Query.
//
// # Wire
//
// A stream carries one StoreQueryRequest and one StoreQueryResponse, each
// one protobuf behind an unsigned-varint length prefix (nwaku readLp and
// writeLp, go-waku pbio). The codec is written with protowire. Where
// nwaku v0.38.1's decoders (waku_store/rpc_codec.nim, minprotobuf) treat a
// proto3 field as required, the encoders here always write it, zero values
// included: the request's request_id, include_data and pagination_forward,
// the response's request_id, status_code and status_desc, and each
// key-value's message_hash.
//
// # Semantics
//
// The server follows nwaku v0.38.1 where it and the spec differ, and says
// so: the time range includes both ends; hashes are ANDed with a pubsub
// topic, content topics and the time range (js-waku sends a pubsub topic
// with its hash queries); more than 10 content topics is refused only with
// a cursor; a hash or cursor field of another length than 32 bytes is
// truncated or padded with zeros. Pages default to 20 and are cut to 100;
// the cursor is the hash of the last message of the page in query
// direction; responses list messages in forward order, and the page after
// the last is an empty 200 (js-waku stops on it). Request ids are echoed
// on success only. The archive.Query doc comment is the full rule set.
//
// Status codes and texts are nwaku's (waku_store/protocol.nim,
// waku/node/kernel_api/store.nim, waku_archive/archive.nim):
//
//	200 OK                  success, request id echoed
//	400 BAD_REQUEST         "decoding rpc failed: <minprotobuf error>", e.g.
//	                        "decoding rpc failed: MissingRequiredField request_id"
//	300 BAD_RESPONSE        "BAD_RESPONSE: archive error: DRIVER_ERROR: cursor not found"
//	                        "BAD_RESPONSE: archive error: INVALID_QUERY: all zeroes cursor hash"
//	                        "BAD_RESPONSE: archive error: INVALID_QUERY: too many content topics"
//	429 TOO_MANY_REQUESTS   "TOO_MANY_REQUESTS", request id "N/A", sent before
//	                        the request is read
//	503 SERVICE_UNAVAILABLE "SERVICE_UNAVAILABLE": no room in the memory bound
//	                        below within Config.BusyWait (courier's; nwaku
//	                        has the code and no such bound)
//
// Error responses carry an empty request id, as nwaku's do.
//
// # Memory bound
//
// A request of a few bytes asks for a page of up to 100 messages of up to
// 150 KiB, and a peer that never reads the response makes the server hold
// it until Config.Timeout: nwaku bounds this only by its ten streams per
// peer and protocol, and without a bound a hundred such requests held
// 2.4 GB. The server bounds what all answers hold together by
// Config.MaxBytesInFlight (default 128 MiB): before it queries the
// archive, a request reserves twice the largest frame its page size can
// give (the query result and the frame built from it; 31 MB for a full
// page with data, 13 kB for 100 hashes), keeps the frame's length once it
// is built, and gives that back when the frame is written or the stream
// fails. A request that finds no room within Config.BusyWait (5 s) is
// answered 503 SERVICE_UNAVAILABLE, which costs a few bytes. Request
// frames are read as their bytes arrive (package internal/lpframe), at
// most MaxRequestSize (256 KiB) each.
//
// # No re-encode
//
// The server writes each message's stored bytes (archive.Stored.Wire) into
// the response as they are: no message is decoded or encoded on the way
// out. The response is built in one buffer sized in advance and written
// with one Write: BenchmarkFrameResponse allocates that buffer and nothing
// else, 0.05 allocations per returned message for a page of 20.
// BenchmarkServe measures the whole answer from the embedded archive:
// 13 to 14 allocations per returned message (2026-11-30), of which one is
// the message's bytes read from its segment and the rest the index scan
// (database/sql and the SQLite driver box every column of every row).
//
//	go test -run '^$' -bench 'Serve|FrameResponse' -benchtime 1000x ./store/
package store
