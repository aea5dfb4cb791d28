//go:build napi

// Command napi is the Node.js native core of lib-net's JavaScript wrappers,
// built from libnet: a shared library (go build -tags napi
// -buildmode=c-shared) that Node loads as shardus-net.node, with a small C
// glue file (glue.c) making the N-API calls. libnet/js's install builds it;
// libnet/js/README.md documents it for users.
//
// # Contract
//
// The module exports what lib-net's Rust core does (shardus_net/src/lib.rs
// main): Sn(port, host, useLru, lruSize, hashKeyHex, signingSkHex[,
// payloadLimit, headerLimit[, options]]), setLoggingEnabled(bool) and
// getSenderAddress(rawTxHex) -> {address, isValid, gasValid}, and adds
// goRuntime([maxProcs[, memoryLimit]]). Sn's object has lib-net's listen,
// send, send_with_header, multi_send_with_header, evict_socket and stats,
// stopListening (which the wrappers call and lib-net never defined), and
// the raw lane: send_raw, send_with_header_raw, multi_send_with_header_raw,
// ask_raw, respond_raw, listen_raw and allow_raw.
//
// # Threads and lifetimes
//
// JavaScript calls run on the calling JavaScript thread (main or worker)
// only long enough to copy a string or take a Buffer's pointer and queue
// the frame: framing, signing and writing happen on the Go side. Results
// and received messages come back through one thread-safe function per Sn
// object. A goroutine posts under the Sn's mutex and only while its closed
// flag is unset; the env's cleanup hook (a worker or the process ending)
// and the object's finalizer set it before releasing the thread-safe
// function, so no goroutine calls a released one (which aborts Node). The
// C state is freed by the last of its three owners: the thread-safe
// function's finalizer, the object's finalizer, the Go side once its
// endpoint has closed.
//
// # Memory
//
// A Buffer passed to a raw function is read in place: its pointer reaches
// Go with no copy and a reference keeps the Buffer alive until the send's
// callback has run; the caller must not change it before then. A string
// is copied once, to UTF-8 in C memory, which Go frees after the write.
// Received raw payloads are copied once from the connection's read buffer
// into C memory (malloc) and handed to JavaScript as an external Buffer
// whose finalizer frees it: Go memory never reaches JavaScript, so cgo's
// pointer rules hold without pinning.
//
// # The Go runtime inside Node
//
// One Go runtime per process: the runtime starts when the library loads,
// once per process, and serves every worker. A second copy of the library
// (another path) would start a second runtime; the module refuses to
// register then. Asynchronous signals (SIGINT, SIGTERM, SIGCHLD, SIGUSR1,
// ...) are blocked on every thread Go creates, so they reach Node's
// handlers on Node's threads (glue.c). GOMAXPROCS and GOMEMLIMIT are read
// from the environment when the library loads; goRuntime changes them
// later. The Go heap is not V8's: --max-old-space-size does not bound it.
package main
