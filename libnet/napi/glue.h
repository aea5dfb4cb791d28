//go:build napi

// The C side of the native core: what the N-API glue (glue.c) and the Go
// side (cgo) share. Every pointer here is C memory: no Go pointer is kept
// by C past the call that passed it (cgo's pointer rules).
#ifndef COURIER_LIBNET_GLUE_H
#define COURIER_LIBNET_GLUE_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

// Item kinds posted from Go to the JavaScript thread.
enum {
	ITEM_DONE = 1,   // a send completed: call its callback with err or nothing
	ITEM_LEGACY = 2, // a legacy frame: listen callback (data, ip, port, ver, hdr, sign)
	ITEM_RAW = 3,    // a raw-lane message: raw listen callback
	ITEM_MULTI = 4,  // a raw multi-send completed: callback with per-peer results
	ITEM_REPLY = 5,  // a raw ask completed: callback (err, payload, sender, route)
};

// A ring of lib-net's stats (stats.rs, ring_buffer.rs): the last 100
// samples and the long-term extremes. JavaScript thread only.
typedef struct ring {
	int64_t buf[100];
	int n, next, any;
	int64_t lt_max, lt_min;
} ring;

// cbref is one JavaScript callback and, optionally, a Buffer kept alive
// for the send. left counts the items that still refer to it; the last
// one handled deletes the references. JavaScript thread only.
typedef struct cbref {
	void *cb;   // napi_ref of the callback, or NULL
	void *keep; // napi_ref of a Buffer the send reads, or NULL
	int left;
	int send;   // counted in outstanding_sends
} cbref;

// item is one message from Go to the JavaScript thread. Its strings live in
// the same malloc'd block, after the struct; data may be its own block
// (free_data) handed to JavaScript as an external buffer.
typedef struct item {
	int kind;
	cbref *ref;      // DONE, MULTI, REPLY
	char *err;       // DONE, REPLY: error text or NULL
	char *data;      // LEGACY: UTF-8 data; RAW, REPLY: payload
	size_t data_len;
	int own_data;    // data is a malloc'd block of its own (RAW, REPLY)
	char *hdr;       // LEGACY: header JSON or NULL; RAW, REPLY: route
	size_t hdr_len;
	char *sign;      // LEGACY: sign JSON or NULL; RAW, REPLY: sender id
	size_t sign_len;
	char ip[48];
	int port;
	int version;     // LEGACY: header version (0: none); RAW: dir (1 tell, 2 ask)
	uint64_t token;  // RAW ask: the respond token
	int n;           // MULTI: results
	char **errs;     // MULTI: n entries, NULL for success
	int64_t posted;  // monotonic ns when posted
} item;

// sn is one Sn object's native state. refs counts its two owners: the
// JavaScript side (until the thread-safe function is finalized) and the Go
// side (until its endpoint has closed).
typedef struct sn {
	uintptr_t go;          // Go handle
	void *env;             // napi_env
	void *tsfn;            // napi_threadsafe_function, NULL once finalized
	void *self;            // napi_ref of the Sn object (strong while active)
	void *listen_cb;       // napi_ref: legacy listen callback
	void *raw_cb;          // napi_ref: raw listen callback
	pthread_mutex_t mu;    // guards closed against posts
	int closed;            // no more posts: the JavaScript side is gone
	int refs;              // atomic
	int32_t inflight;      // atomic: messages posted and not yet delivered
	int active;            // JavaScript thread: listening + outstanding callbacks
	int listening;
	int outstanding_sends;
	int released;          // the thread-safe function has been released
	int hook;              // the env cleanup hook is registered
	ring sends, receives, elapsed;
} sn;

// sn_opts is what Sn(...) was called with; strings are borrowed for the
// call. The last group is the optional ninth argument, an object that
// courier's own package passes (the published wrappers pass eight).
typedef struct sn_opts {
	double port;
	const char *host;
	size_t host_len;
	int use_lru;
	double lru_size;
	const char *hash_key;
	size_t hash_key_len;
	const char *sk;
	size_t sk_len;
	double payload_limit; // 0: not given
	double header_limit;  // 0: not given
	int raw_all;          // every peer takes the raw lane
	int dedup;            // drop duplicate raw messages before JavaScript
	double dedup_size;
	const char *sender_id;
	size_t sender_id_len;
	double queue_len;     // per-peer send queue; 0: default
	double receive_queue; // messages posted to JavaScript and not yet delivered; 0: default
	const char *raw_peers; // "ip:port" list, comma-separated
	size_t raw_peers_len;
} sn_opts;

item *item_new(int kind, size_t extra);
void item_free(item *it);
int sn_post(sn *s, item *it); // 0 posted; -1 closed (the item is freed)
void sn_unref(sn *s);
int64_t mono_ns(void);
int sn_is_closed(sn *s);
int32_t sn_inflight(sn *s);

#endif
