//go:build napi

// N-API glue of the native core: the JavaScript side of lib-net's native
// contract (lib-net shardus_net/src/lib.rs), in C so that Go never holds a
// napi_value. Every function here but sn_post, sn_unref, sn_is_closed,
// sn_inflight, item_new, item_free and mono_ns runs on a JavaScript thread
// (the main thread or a worker's).
#define NAPI_VERSION 8
#include <node_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "glue.h"
#include "_cgo_export.h"

#define ERRLEN 512

// ---- signals: keep Node's asynchronous signals off the Go runtime's threads ----
//
// Node (libuv) installs its signal handlers (process.on('SIGINT'), child
// processes' SIGCHLD, the inspector's SIGUSR1) without SA_ONSTACK, which Go
// requires of handlers that may run on its threads (os/signal, "Go
// programs that use cgo or SWIG"); and Go, built as a library, installs no
// handler of its own for them. So these signals are blocked on the thread
// that loads the core while the Go runtime starts: every thread Go creates
// keeps that mask, and the kernel delivers such a signal to one of Node's
// threads. The loading thread's mask is put back when the module
// registers. The constructor's priority runs it before the Go runtime's
// own initialiser, which has none.
static const int async_signals[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD, SIGWINCH, SIGALRM, SIGVTALRM,
	SIGIO, SIGPWR, SIGTSTP, SIGTTIN, SIGTTOU, SIGXCPU, SIGXFSZ,
};
static sigset_t load_mask;
static int mask_saved;

__attribute__((constructor(101))) static void block_async_signals(void) {
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof async_signals / sizeof async_signals[0]; i++) sigaddset(&set, async_signals[i]);
	if (pthread_sigmask(SIG_BLOCK, &set, &load_mask) == 0) mask_saved = 1;
}

static void restore_signals(void) {
	if (mask_saved) {
		pthread_sigmask(SIG_SETMASK, &load_mask, NULL);
		mask_saved = 0;
	}
}

// ---- helpers usable from any thread ----

int64_t mono_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

item *item_new(int kind, size_t extra) {
	item *it = calloc(1, sizeof(item) + extra);
	if (it) it->kind = kind;
	return it;
}

void item_free(item *it) {
	if (!it) return;
	if (it->own_data) free(it->data);
	if (it->errs) {
		for (int i = 0; i < it->n; i++) free(it->errs[i]);
		free(it->errs);
	}
	free(it);
}

int sn_is_closed(sn *s) { return __atomic_load_n(&s->closed, __ATOMIC_ACQUIRE); }

int32_t sn_inflight(sn *s) { return __atomic_load_n(&s->inflight, __ATOMIC_ACQUIRE); }

// sn_post hands it to the JavaScript thread. The lock orders posts against
// the end of the JavaScript side: once closed is set no goroutine calls the
// thread-safe function, which is then released (calling a released one
// aborts Node).
int sn_post(sn *s, item *it) {
	it->posted = mono_ns();
	pthread_mutex_lock(&s->mu);
	if (s->closed || s->tsfn == NULL) {
		pthread_mutex_unlock(&s->mu);
		item_free(it);
		return -1;
	}
	napi_status st = napi_call_threadsafe_function((napi_threadsafe_function)s->tsfn, it, napi_tsfn_nonblocking);
	pthread_mutex_unlock(&s->mu);
	if (st != napi_ok) {
		item_free(it);
		return -1;
	}
	return 0;
}

void sn_unref(sn *s) {
	if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		pthread_mutex_destroy(&s->mu);
		free(s);
	}
}

// ---- lib-net's stats rings (JavaScript thread) ----

static void ring_put(ring *r, int64_t v) {
	r->buf[r->next] = v;
	r->next = (r->next + 1) % 100;
	if (r->n < 100) r->n++;
	if (!r->any || v > r->lt_max) r->lt_max = v;
	if (!r->any || v < r->lt_min) r->lt_min = v;
	r->any = 1;
}

// ---- argument helpers (JavaScript thread) ----

static void throw_kind(napi_env env, int kind, const char *msg) {
	if (kind == 1) napi_throw_type_error(env, NULL, msg);
	else napi_throw_error(env, NULL, msg);
}

static int get_number(napi_env env, napi_value v, double *out, const char *what) {
	if (napi_get_value_double(env, v, out) != napi_ok) {
		char msg[128];
		snprintf(msg, sizeof msg, "%s must be a number", what);
		napi_throw_type_error(env, NULL, msg);
		return -1;
	}
	return 0;
}

static int get_bool(napi_env env, napi_value v, int *out, const char *what) {
	bool b;
	if (napi_get_value_bool(env, v, &b) != napi_ok) {
		char msg[128];
		snprintf(msg, sizeof msg, "%s must be a boolean", what);
		napi_throw_type_error(env, NULL, msg);
		return -1;
	}
	*out = b;
	return 0;
}

// get_string returns a malloc'd UTF-8 copy of a JavaScript string.
static char *get_string(napi_env env, napi_value v, size_t *len, const char *what) {
	size_t n;
	if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok) {
		char msg[128];
		snprintf(msg, sizeof msg, "%s must be a string", what);
		napi_throw_type_error(env, NULL, msg);
		return NULL;
	}
	char *buf = malloc(n + 1);
	if (!buf) {
		napi_throw_error(env, NULL, "out of memory");
		return NULL;
	}
	napi_get_value_string_utf8(env, v, buf, n + 1, &n);
	*len = n;
	return buf;
}

// get_bytes reads a Buffer or Uint8Array in place: no copy. The caller
// keeps the view alive with a reference until Go is done with it.
static int get_bytes(napi_env env, napi_value v, char **data, size_t *len, const char *what) {
	bool is;
	if (napi_is_typedarray(env, v, &is) == napi_ok && is) {
		napi_typedarray_type t;
		size_t n, off;
		void *p;
		napi_value ab;
		if (napi_get_typedarray_info(env, v, &t, &n, &p, &ab, &off) == napi_ok && t == napi_uint8_array) {
			*data = p;
			*len = n;
			return 0;
		}
	}
	char msg[128];
	snprintf(msg, sizeof msg, "%s must be a Buffer or Uint8Array", what);
	napi_throw_type_error(env, NULL, msg);
	return -1;
}

static int get_function(napi_env env, napi_value v, const char *what) {
	napi_valuetype t;
	if (napi_typeof(env, v, &t) != napi_ok || t != napi_function) {
		char msg[128];
		snprintf(msg, sizeof msg, "%s must be a function", what);
		napi_throw_type_error(env, NULL, msg);
		return -1;
	}
	return 0;
}

static napi_value undefined(napi_env env) {
	napi_value u;
	napi_get_undefined(env, &u);
	return u;
}

static napi_value null_value(napi_env env) {
	napi_value u;
	napi_get_null(env, &u);
	return u;
}

static napi_value str(napi_env env, const char *s, size_t n) {
	napi_value v;
	napi_create_string_utf8(env, s, n, &v);
	return v;
}

static napi_value num(napi_env env, double d) {
	napi_value v;
	napi_create_double(env, d, &v);
	return v;
}

// get_this returns the sn of a method call, or NULL with an exception.
static sn *method(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv) {
	void *data;
	if (napi_get_cb_info(env, info, argc, argv, NULL, &data) != napi_ok || data == NULL) {
		napi_throw_error(env, NULL, "bad native call");
		return NULL;
	}
	if (((sn *)data)->released) {
		napi_throw_error(env, NULL, "shardus-net: this Sn has been closed (its thread is ending)");
		return NULL;
	}
	return data;
}

// ---- activity: keeps the event loop and the Sn object alive ----

static void active_add(napi_env env, sn *s, int d) {
	int before = s->active;
	s->active += d;
	if (s->released) return;
	if (before == 0 && s->active > 0) {
		napi_ref_threadsafe_function(env, (napi_threadsafe_function)s->tsfn);
		napi_reference_ref(env, (napi_ref)s->self, NULL);
	} else if (before > 0 && s->active == 0) {
		napi_unref_threadsafe_function(env, (napi_threadsafe_function)s->tsfn);
		napi_reference_unref(env, (napi_ref)s->self, NULL);
	}
}

// new_cbref makes the callback record of a send: cb (a function value or
// NULL) and keep (a Buffer read in place, or NULL), referred to by left items.
static cbref *new_cbref(napi_env env, sn *s, napi_value cb, napi_value keep, int left, int send) {
	cbref *r = calloc(1, sizeof(cbref));
	if (!r) return NULL;
	if (cb) napi_create_reference(env, cb, 1, (napi_ref *)&r->cb);
	if (keep) napi_create_reference(env, keep, 1, (napi_ref *)&r->keep);
	r->left = left;
	r->send = send;
	if (send) s->outstanding_sends += left;
	active_add(env, s, 1);
	return r;
}

// cbref_release drops one item's hold on r, deleting it after the last.
static void cbref_release(napi_env env, sn *s, cbref *r) {
	if (--r->left > 0) return;
	if (env) {
		if (r->cb) napi_delete_reference(env, (napi_ref)r->cb);
		if (r->keep) napi_delete_reference(env, (napi_ref)r->keep);
		active_add(env, s, -1);
	}
	free(r);
}

// cbref_abandon undoes new_cbref for a send Go refused at once.
static void cbref_abandon(napi_env env, sn *s, cbref *r) {
	if (r->send) s->outstanding_sends -= r->left;
	r->left = 1;
	cbref_release(env, s, r);
}

// external makes a Buffer of it's own payload block without a copy; the
// buffer frees the block when collected.
static void free_block(napi_env env, void *data, void *hint) {
	(void)env;
	(void)hint;
	free(data);
}

static napi_value external(napi_env env, item *it) {
	napi_value v;
	if (it->data_len == 0) {
		void *p;
		napi_create_buffer(env, 0, &p, &v);
		return v;
	}
	if (it->own_data && napi_create_external_buffer(env, it->data_len, it->data, free_block, NULL, &v) == napi_ok) {
		it->own_data = 0; // the buffer owns it now
		return v;
	}
	void *p;
	napi_create_buffer_copy(env, it->data_len, it->data, &p, &v); // runtimes without external buffers
	return v;
}

static void call(napi_env env, napi_ref fn, size_t argc, napi_value *argv) {
	napi_value f;
	if (fn == NULL || napi_get_reference_value(env, fn, &f) != napi_ok || f == NULL) return;
	napi_value result;
	napi_call_function(env, undefined(env), f, argc, argv, &result);
	// An exception thrown by the callback stays pending: Node reports it as
	// an uncaught exception, as it would for lib-net's own callbacks.
}

static void deliver_received(sn *s, item *it) {
	int32_t left = __atomic_sub_fetch(&s->inflight, 1, __ATOMIC_ACQ_REL);
	ring_put(&s->receives, left);
	ring_put(&s->elapsed, (mono_ns() - it->posted) / 1000000);
}

// call_js runs on the JavaScript thread for every item posted. env is NULL
// when the thread-safe function is being torn down: the item is freed.
static void call_js(napi_env env, napi_value js_cb, void *context, void *data) {
	(void)js_cb;
	sn *s = context;
	item *it = data;
	if (env == NULL) {
		if (it->ref) cbref_release(NULL, s, it->ref);
		item_free(it);
		return;
	}
	napi_handle_scope scope;
	napi_open_handle_scope(env, &scope);
	switch (it->kind) {
	case ITEM_DONE: {
		cbref *r = it->ref;
		if (r->send) {
			s->outstanding_sends--;
			ring_put(&s->sends, s->outstanding_sends);
		}
		if (it->err) {
			napi_value a[1] = {str(env, it->err, NAPI_AUTO_LENGTH)};
			call(env, (napi_ref)r->cb, 1, a);
		} else {
			call(env, (napi_ref)r->cb, 0, NULL);
		}
		cbref_release(env, s, r);
		break;
	}
	case ITEM_MULTI: {
		cbref *r = it->ref;
		napi_value arr;
		napi_create_array_with_length(env, it->n, &arr);
		for (int i = 0; i < it->n; i++) {
			napi_set_element(env, arr, i, it->errs[i] ? str(env, it->errs[i], NAPI_AUTO_LENGTH) : null_value(env));
			if (r->send) {
				s->outstanding_sends--;
				ring_put(&s->sends, s->outstanding_sends);
			}
		}
		napi_value a[1] = {arr};
		call(env, (napi_ref)r->cb, 1, a);
		cbref_release(env, s, r);
		break;
	}
	case ITEM_REPLY: {
		cbref *r = it->ref;
		if (it->err) {
			napi_value a[1] = {str(env, it->err, NAPI_AUTO_LENGTH)};
			call(env, (napi_ref)r->cb, 1, a);
		} else {
			napi_value a[4] = {null_value(env), external(env, it), str(env, it->sign, it->sign_len), str(env, it->hdr, it->hdr_len)};
			call(env, (napi_ref)r->cb, 4, a);
		}
		cbref_release(env, s, r);
		break;
	}
	case ITEM_LEGACY: {
		deliver_received(s, it);
		napi_value a[6] = {
			str(env, it->data, it->data_len), str(env, it->ip, NAPI_AUTO_LENGTH), num(env, it->port),
			it->hdr ? num(env, it->version) : null_value(env),
			it->hdr ? str(env, it->hdr, it->hdr_len) : null_value(env),
			it->sign ? str(env, it->sign, it->sign_len) : null_value(env),
		};
		call(env, (napi_ref)s->listen_cb, 6, a);
		break;
	}
	case ITEM_RAW: {
		deliver_received(s, it);
		napi_value a[7] = {
			external(env, it), str(env, it->hdr, it->hdr_len), str(env, it->sign, it->sign_len), num(env, it->version),
			num(env, (double)it->token), str(env, it->ip, NAPI_AUTO_LENGTH), num(env, it->port),
		};
		call(env, (napi_ref)s->raw_cb, 7, a);
		break;
	}
	}
	napi_close_handle_scope(env, scope);
	item_free(it);
}

// ---- the end of the JavaScript side ----

// js_end stops posts, releases the thread-safe function and closes the Go
// endpoint (in the background). It runs once: from the env's cleanup hook
// (a worker or the process ends) or the Sn object's finalizer.
static void js_end(napi_env env, sn *s) {
	if (s->released) return;
	pthread_mutex_lock(&s->mu);
	__atomic_store_n(&s->closed, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->mu);
	s->released = 1;
	if (s->tsfn) napi_release_threadsafe_function((napi_threadsafe_function)s->tsfn, napi_tsfn_abort);
	goClose(s->go);
}

static void cleanup_hook(void *arg) {
	sn *s = arg;
	s->hook = 0;
	js_end((napi_env)s->env, s);
}

static void tsfn_finalize(napi_env env, void *data, void *hint) {
	(void)data;
	sn *s = hint;
	pthread_mutex_lock(&s->mu);
	s->tsfn = NULL;
	__atomic_store_n(&s->closed, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->mu);
	if (s->listen_cb) napi_delete_reference(env, (napi_ref)s->listen_cb);
	if (s->raw_cb) napi_delete_reference(env, (napi_ref)s->raw_cb);
	s->listen_cb = s->raw_cb = NULL;
	sn_unref(s);
}

static void object_finalize(napi_env env, void *data, void *hint) {
	(void)hint;
	sn *s = data;
	if (s->hook) {
		napi_remove_env_cleanup_hook(env, cleanup_hook, s);
		s->hook = 0;
	}
	js_end(env, s);
	if (s->self) napi_delete_reference(env, (napi_ref)s->self);
	s->self = NULL;
	sn_unref(s);
}

// ---- the Sn object's methods ----

static napi_value m_listen_common(napi_env env, napi_callback_info info, int raw) {
	size_t argc = 1;
	napi_value argv[1];
	sn *s = method(env, info, &argc, argv);
	if (!s) return NULL;
	if (argc < 1 || get_function(env, argv[0], "callback") < 0) return NULL;
	char err[ERRLEN] = {0};
	int rc = goListen(s->go, err, ERRLEN);
	if (rc) {
		throw_kind(env, rc, err);
		return NULL;
	}
	void **slot = raw ? &s->raw_cb : &s->listen_cb;
	if (*slot) napi_delete_reference(env, (napi_ref)*slot);
	napi_create_reference(env, argv[0], 1, (napi_ref *)slot);
	goSetListening(s->go, raw ? 2 : 1);
	if (!s->listening) {
		s->listening = 1;
		active_add(env, s, 1);
	}
	return undefined(env);
}

static napi_value m_listen(napi_env env, napi_callback_info info) { return m_listen_common(env, info, 0); }

static napi_value m_listen_raw(napi_env env, napi_callback_info info) { return m_listen_common(env, info, 1); }

static napi_value m_stop_listening(napi_env env, napi_callback_info info) {
	size_t argc = 0;
	sn *s = method(env, info, &argc, NULL);
	if (!s) return NULL;
	goStopListening(s->go);
	if (s->listen_cb) napi_delete_reference(env, (napi_ref)s->listen_cb);
	if (s->raw_cb) napi_delete_reference(env, (napi_ref)s->raw_cb);
	s->listen_cb = s->raw_cb = NULL;
	if (s->listening) {
		s->listening = 0;
		active_add(env, s, -1);
	}
	return undefined(env);
}

// Send kinds passed to Go.
enum { SEND_PLAIN = 0, SEND_HEADER = 1, SEND_RAW = 2 };

// send(port, host, data, cb), send_with_header(port, host, version, header,
// data, cb), send_raw(port, host, payload, cb) and send_with_header_raw(port,
// host, version, header, payload, cb).
static napi_value send_common(napi_env env, napi_callback_info info, int kind, int with_header) {
	size_t want = with_header ? 6 : 4, argc = 6;
	napi_value argv[6];
	sn *s = method(env, info, &argc, argv);
	if (!s) return NULL;
	if (argc < want) {
		napi_throw_type_error(env, NULL, "not enough arguments");
		return NULL;
	}
	double port, version = 0;
	if (get_number(env, argv[0], &port, "port") < 0) return NULL;
	size_t host_len, hdr_len = 0, data_len;
	char *host = get_string(env, argv[1], &host_len, "host");
	if (!host) return NULL;
	char *hdr = NULL, *data = NULL;
	int di = with_header ? 4 : 2, own = kind != SEND_RAW;
	napi_value result = NULL;
	if (with_header) {
		if (get_number(env, argv[2], &version, "header version") < 0) goto out;
		if (!(hdr = get_string(env, argv[3], &hdr_len, "header"))) goto out;
	}
	if (own) {
		if (!(data = get_string(env, argv[di], &data_len, "data"))) goto out;
	} else if (get_bytes(env, argv[di], &data, &data_len, "payload") < 0) {
		goto out;
	}
	if (get_function(env, argv[di + 1], "callback") < 0) goto out;
	cbref *r = new_cbref(env, s, argv[di + 1], own ? NULL : argv[di], 1, 1);
	char err[ERRLEN] = {0};
	int rc = goSend(s->go, kind, port, version, host, host_len, hdr, hdr_len, data, data_len, own, r, err, ERRLEN);
	if (rc) {
		cbref_abandon(env, s, r);
		throw_kind(env, rc, err);
		goto out;
	}
	data = NULL; // Go owns it now (freed after the write)
	result = undefined(env);
out:
	free(host);
	free(hdr);
	if (own) free(data);
	return result;
}

static napi_value m_send(napi_env env, napi_callback_info info) { return send_common(env, info, SEND_PLAIN, 0); }

static napi_value m_send_with_header(napi_env env, napi_callback_info info) { return send_common(env, info, SEND_HEADER, 1); }

static napi_value m_send_raw(napi_env env, napi_callback_info info) { return send_common(env, info, SEND_RAW, 0); }

static napi_value m_send_with_header_raw(napi_env env, napi_callback_info info) { return send_common(env, info, SEND_RAW, 1); }

// multi_send_with_header(ports, hosts, version, header, data, cb,
// awaitProcessing) and multi_send_with_header_raw(ports, hosts, version,
// header, payload, cb).
static napi_value multi_common(napi_env env, napi_callback_info info, int raw) {
	size_t argc = 7;
	napi_value argv[7];
	sn *s = method(env, info, &argc, argv);
	if (!s) return NULL;
	if (argc < (raw ? 6u : 7u)) {
		napi_throw_type_error(env, NULL, "not enough arguments");
		return NULL;
	}
	uint32_t np = 0, nh = 0;
	bool isarr;
	if (napi_is_array(env, argv[0], &isarr) != napi_ok || !isarr || napi_is_array(env, argv[1], &isarr) != napi_ok || !isarr) {
		napi_throw_type_error(env, NULL, "ports and hosts must be arrays");
		return NULL;
	}
	napi_get_array_length(env, argv[0], &np);
	napi_get_array_length(env, argv[1], &nh);
	double *ports = calloc(np + 1, sizeof(double));
	char **hosts = calloc(nh + 1, sizeof(char *));
	size_t *host_lens = calloc(nh + 1, sizeof(size_t));
	char *hdr = NULL, *data = NULL;
	size_t hdr_len = 0, data_len = 0;
	napi_value result = NULL;
	double version;
	int await = 1;
	uint32_t i;
	for (i = 0; i < np; i++) {
		napi_value v;
		napi_get_element(env, argv[0], i, &v);
		if (get_number(env, v, &ports[i], "port") < 0) goto out;
	}
	for (i = 0; i < nh; i++) {
		napi_value v;
		napi_get_element(env, argv[1], i, &v);
		if (!(hosts[i] = get_string(env, v, &host_lens[i], "host"))) goto out;
	}
	if (get_number(env, argv[2], &version, "header version") < 0) goto out;
	if (!(hdr = get_string(env, argv[3], &hdr_len, "header"))) goto out;
	if (raw) {
		if (get_bytes(env, argv[4], &data, &data_len, "payload") < 0) goto out;
	} else if (!(data = get_string(env, argv[4], &data_len, "data"))) {
		goto out;
	}
	if (get_function(env, argv[5], "callback") < 0) goto out;
	if (!raw && get_bool(env, argv[6], &await, "awaitProcessing") < 0) goto out;
	uint32_t n = np < nh ? np : nh; // lib-net zips ports with hosts
	cbref *r = new_cbref(env, s, (raw || await) ? argv[5] : NULL, raw ? argv[4] : NULL, raw ? 1 : (n ? n : 1), 1);
	int extra = (raw && n > 1) ? (int)n - 1 : 0; // one item answers all n sends
	s->outstanding_sends += extra;
	char err[ERRLEN] = {0};
	int rc = goMulti(s->go, raw, ports, hosts, host_lens, n, version, hdr, hdr_len, data, data_len, r, err, ERRLEN);
	if (rc) {
		s->outstanding_sends -= extra;
		cbref_abandon(env, s, r);
		throw_kind(env, rc, err);
		goto out;
	}
	if (!raw) data = NULL; // Go frees it after the last write
	result = undefined(env);
out:
	free(ports);
	for (i = 0; i < nh; i++) free(hosts[i]);
	free(hosts);
	free(host_lens);
	free(hdr);
	if (!raw) free(data);
	return result;
}

static napi_value m_multi_send_with_header(napi_env env, napi_callback_info info) { return multi_common(env, info, 0); }

static napi_value m_multi_send_with_header_raw(napi_env env, napi_callback_info info) { return multi_common(env, info, 1); }

// ask_raw(port, host, header, payload, timeoutMs, cb(err, payload, sender, route))
static napi_value m_ask_raw(napi_env env, napi_callback_info info) {
	size_t argc = 6;
	napi_value argv[6];
	sn *s = method(env, info, &argc, argv);
	if (!s) return NULL;
	if (argc < 6) {
		napi_throw_type_error(env, NULL, "not enough arguments");
		return NULL;
	}
	double port, timeout;
	size_t host_len, hdr_len, data_len;
	char *data, *hdr = NULL;
	if (get_number(env, argv[0], &port, "port") < 0) return NULL;
	char *host = get_string(env, argv[1], &host_len, "host");
	if (!host) return NULL;
	napi_value result = NULL;
	if (!(hdr = get_string(env, argv[2], &hdr_len, "header"))) goto out;
	if (get_bytes(env, argv[3], &data, &data_len, "payload") < 0) goto out;
	if (get_number(env, argv[4], &timeout, "timeout") < 0) goto out;
	if (get_function(env, argv[5], "callback") < 0) goto out;
	cbref *r = new_cbref(env, s, argv[5], argv[3], 1, 0);
	char err[ERRLEN] = {0};
	int rc = goAsk(s->go, port, host, host_len, hdr, hdr_len, data, data_len, timeout, r, err, ERRLEN);
	if (rc) {
		cbref_abandon(env, s, r);
		throw_kind(env, rc, err);
		goto out;
	}
	result = undefined(env);
out:
	free(host);
	free(hdr);
	return result;
}

// respond_raw(token, payload[, cb])
static napi_value m_respond_raw(napi_env env, napi_callback_info info) {
	size_t argc = 3;
	napi_value argv[3];
	sn *s = method(env, info, &argc, argv);
	if (!s) return NULL;
	if (argc < 2) {
		napi_throw_type_error(env, NULL, "not enough arguments");
		return NULL;
	}
	double token;
	char *data;
	size_t data_len;
	if (get_number(env, argv[0], &token, "token") < 0) return NULL;
	if (get_bytes(env, argv[1], &data, &data_len, "payload") < 0) return NULL;
	napi_value cb = NULL;
	if (argc > 2) {
		napi_valuetype t;
		napi_typeof(env, argv[2], &t);
		if (t != napi_undefined) {
			if (get_function(env, argv[2], "callback") < 0) return NULL;
			cb = argv[2];
		}
	}
	cbref *r = new_cbref(env, s, cb, argv[1], 1, 0);
	char err[ERRLEN] = {0};
	int rc = goRespond(s->go, (uint64_t)token, data, data_len, r, err, ERRLEN);
	if (rc) {
		cbref_abandon(env, s, r);
		throw_kind(env, rc, err);
		return NULL;
	}
	return undefined(env);
}

// evict_socket(port, host) and allow_raw(port, host, on)
static napi_value peer_common(napi_env env, napi_callback_info info, int allow) {
	size_t argc = 3;
	napi_value argv[3];
	sn *s = method(env, info, &argc, argv);
	if (!s) return NULL;
	if (argc < (allow ? 3u : 2u)) {
		napi_throw_type_error(env, NULL, "not enough arguments");
		return NULL;
	}
	double port;
	int on = 0;
	size_t host_len;
	if (get_number(env, argv[0], &port, "port") < 0) return NULL;
	if (allow && get_bool(env, argv[2], &on, "on") < 0) return NULL;
	char *host = get_string(env, argv[1], &host_len, "host");
	if (!host) return NULL;
	char err[ERRLEN] = {0};
	int rc = goPeer(s->go, allow, port, host, host_len, on, err, ERRLEN);
	free(host);
	if (rc) {
		throw_kind(env, rc, err);
		return NULL;
	}
	return undefined(env);
}

static napi_value m_evict_socket(napi_env env, napi_callback_info info) { return peer_common(env, info, 0); }

static napi_value m_allow_raw(napi_env env, napi_callback_info info) { return peer_common(env, info, 1); }

// parse_json turns JSON text into a value with the global JSON.parse.
static napi_value parse_json(napi_env env, const char *text) {
	napi_value global, json, parse, arg, out;
	napi_get_global(env, &global);
	napi_get_named_property(env, global, "JSON", &json);
	napi_get_named_property(env, json, "parse", &parse);
	arg = str(env, text, NAPI_AUTO_LENGTH);
	if (napi_call_function(env, json, parse, 1, &arg, &out) != napi_ok) return NULL;
	return out;
}

static napi_value m_stats(napi_env env, napi_callback_info info) {
	size_t argc = 0;
	sn *s = method(env, info, &argc, NULL);
	if (!s) return NULL;
	char *js = goStats(s->go, &s->sends, &s->receives, &s->elapsed);
	napi_value v = parse_json(env, js);
	free(js);
	return v;
}

// ---- module functions ----

static int opt_number(napi_env env, napi_value obj, const char *key, double *out) {
	bool has;
	napi_value v;
	if (napi_has_named_property(env, obj, key, &has) != napi_ok || !has) return 0;
	napi_get_named_property(env, obj, key, &v);
	napi_valuetype t;
	napi_typeof(env, v, &t);
	if (t == napi_undefined || t == napi_null) return 0;
	return get_number(env, v, out, key);
}

static int opt_bool(napi_env env, napi_value obj, const char *key, int *out) {
	bool has;
	napi_value v;
	if (napi_has_named_property(env, obj, key, &has) != napi_ok || !has) return 0;
	napi_get_named_property(env, obj, key, &v);
	napi_valuetype t;
	napi_typeof(env, v, &t);
	if (t == napi_undefined || t == napi_null) return 0;
	return get_bool(env, v, out, key);
}

static int opt_string(napi_env env, napi_value obj, const char *key, const char **out, size_t *len) {
	bool has;
	napi_value v;
	if (napi_has_named_property(env, obj, key, &has) != napi_ok || !has) return 0;
	napi_get_named_property(env, obj, key, &v);
	napi_valuetype t;
	napi_typeof(env, v, &t);
	if (t == napi_undefined || t == napi_null) return 0;
	char *s = get_string(env, v, len, key);
	if (!s) return -1;
	*out = s;
	return 0;
}

static void set_fn(napi_env env, napi_value obj, const char *name, napi_callback cb, void *data) {
	napi_value fn;
	napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, data, &fn);
	napi_set_named_property(env, obj, name, fn);
	if (data) {
		// A method kept apart from its object (const { send } = sn) keeps the
		// object, and so the native state the method points at, alive.
		napi_property_descriptor owner = {"__sn", NULL, NULL, NULL, NULL, obj, napi_default, NULL};
		napi_define_properties(env, fn, 1, &owner);
	}
}

// Sn(port, host, useLru, lruSize, hashKey, signingSkHex[, payloadLimit,
// headerLimit[, options]]) (lib.rs create_shardus_net).
static napi_value f_sn(napi_env env, napi_callback_info info) {
	size_t argc = 9;
	napi_value argv[9];
	napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
	if (argc < 6) {
		napi_throw_type_error(env, NULL, "Sn needs port, host, useLru, lruSize, hashKey and signing key");
		return NULL;
	}
	sn_opts o = {0};
	char *host = NULL, *hk = NULL, *sk = NULL;
	napi_value result = NULL;
	if (get_number(env, argv[0], &o.port, "port") < 0) return NULL;
	if (!(host = get_string(env, argv[1], &o.host_len, "host"))) goto out;
	if (get_bool(env, argv[2], &o.use_lru, "useLru") < 0) goto out;
	if (get_number(env, argv[3], &o.lru_size, "lruSize") < 0) goto out;
	if (!(hk = get_string(env, argv[4], &o.hash_key_len, "hashKey"))) goto out;
	if (!(sk = get_string(env, argv[5], &o.sk_len, "signing key"))) goto out;
	o.host = host;
	o.hash_key = hk;
	o.sk = sk;
	if (argc > 6 && get_number(env, argv[6], &o.payload_limit, "payload size limit") < 0) goto out;
	if (argc > 7 && get_number(env, argv[7], &o.header_limit, "header size limit") < 0) goto out;
	if (argc > 8) {
		napi_valuetype t;
		napi_typeof(env, argv[8], &t);
		if (t == napi_object) {
			napi_value x = argv[8];
			if (opt_bool(env, x, "rawAll", &o.raw_all) < 0 || opt_bool(env, x, "dedup", &o.dedup) < 0 ||
			    opt_number(env, x, "dedupSize", &o.dedup_size) < 0 || opt_number(env, x, "queueLength", &o.queue_len) < 0 ||
			    opt_number(env, x, "receiveQueue", &o.receive_queue) < 0 ||
			    opt_string(env, x, "senderId", &o.sender_id, &o.sender_id_len) < 0 ||
			    opt_string(env, x, "rawPeers", &o.raw_peers, &o.raw_peers_len) < 0)
				goto out;
		}
	}
	sn *s = calloc(1, sizeof(sn));
	if (!s) {
		napi_throw_error(env, NULL, "out of memory");
		goto out;
	}
	pthread_mutex_init(&s->mu, NULL);
	s->env = env;
	s->refs = 3; // the thread-safe function, the object, the Go side
	char err[ERRLEN] = {0};
	int rc = goNew(s, &o, err, ERRLEN);
	if (rc) {
		pthread_mutex_destroy(&s->mu);
		free(s);
		throw_kind(env, rc, err);
		goto out;
	}
	napi_value obj, name;
	napi_create_object(env, &obj);
	napi_create_string_utf8(env, "shardus-net", NAPI_AUTO_LENGTH, &name);
	napi_threadsafe_function tsfn;
	if (napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, NULL, tsfn_finalize, s, call_js, &tsfn) != napi_ok) {
		goClose(s->go);
		napi_throw_error(env, NULL, "cannot create a thread-safe function");
		goto out;
	}
	s->tsfn = tsfn;
	napi_unref_threadsafe_function(env, tsfn); // idle: the process may exit
	napi_create_reference(env, obj, 0, (napi_ref *)&s->self);
	napi_add_finalizer(env, obj, s, object_finalize, NULL, NULL);
	napi_add_env_cleanup_hook(env, cleanup_hook, s);
	s->hook = 1;
	set_fn(env, obj, "listen", m_listen, s);
	set_fn(env, obj, "send", m_send, s);
	set_fn(env, obj, "send_with_header", m_send_with_header, s);
	set_fn(env, obj, "multi_send_with_header", m_multi_send_with_header, s);
	set_fn(env, obj, "evict_socket", m_evict_socket, s);
	set_fn(env, obj, "stats", m_stats, s);
	set_fn(env, obj, "stopListening", m_stop_listening, s);
	set_fn(env, obj, "send_raw", m_send_raw, s);
	set_fn(env, obj, "send_with_header_raw", m_send_with_header_raw, s);
	set_fn(env, obj, "multi_send_with_header_raw", m_multi_send_with_header_raw, s);
	set_fn(env, obj, "ask_raw", m_ask_raw, s);
	set_fn(env, obj, "respond_raw", m_respond_raw, s);
	set_fn(env, obj, "listen_raw", m_listen_raw, s);
	set_fn(env, obj, "allow_raw", m_allow_raw, s);
	result = obj;
out:
	free(host);
	free(hk);
	free(sk);
	free((char *)o.sender_id);
	free((char *)o.raw_peers);
	return result;
}

static napi_value f_set_logging(napi_env env, napi_callback_info info) {
	size_t argc = 1;
	napi_value argv[1];
	napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
	int on;
	if (argc < 1 || get_bool(env, argv[0], &on, "enabled") < 0) return NULL;
	goSetLogging(on);
	return undefined(env);
}

static napi_value f_sender_address(napi_env env, napi_callback_info info) {
	size_t argc = 1;
	napi_value argv[1];
	napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
	if (argc < 1) {
		napi_throw_type_error(env, NULL, "getSenderAddress needs a raw transaction");
		return NULL;
	}
	size_t n;
	char *hex = get_string(env, argv[0], &n, "raw transaction");
	if (!hex) return NULL;
	char addr[64] = {0}, err[ERRLEN] = {0};
	int gas_valid = 0;
	int rc = goSenderAddress(hex, n, addr, &gas_valid, err, ERRLEN);
	free(hex);
	if (rc) {
		throw_kind(env, rc, err);
		return NULL;
	}
	napi_value obj, b;
	napi_create_object(env, &obj);
	napi_set_named_property(env, obj, "address", str(env, addr, NAPI_AUTO_LENGTH));
	napi_get_boolean(env, gas_valid, &b);
	napi_set_named_property(env, obj, "isValid", b);
	napi_set_named_property(env, obj, "gasValid", b);
	return obj;
}

// goRuntime([maxProcs[, memoryLimitBytes]]) sets and reports the Go
// runtime's GOMAXPROCS and memory limit (0 or absent: unchanged).
static napi_value f_go_runtime(napi_env env, napi_callback_info info) {
	size_t argc = 2;
	napi_value argv[2];
	napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
	double procs = 0, limit = 0;
	if (argc > 0 && get_number(env, argv[0], &procs, "maxProcs") < 0) return NULL;
	if (argc > 1 && get_number(env, argv[1], &limit, "memoryLimit") < 0) return NULL;
	char *js = goRuntime(procs, limit);
	napi_value v = parse_json(env, js);
	free(js);
	return v;
}

NAPI_MODULE_INIT() {
	restore_signals();
	char err[ERRLEN] = {0};
	if (goModuleInit(err, ERRLEN) != 0) {
		napi_throw_error(env, NULL, err);
		return NULL;
	}
	set_fn(env, exports, "Sn", f_sn, NULL);
	set_fn(env, exports, "setLoggingEnabled", f_set_logging, NULL);
	set_fn(env, exports, "getSenderAddress", f_sender_address, NULL);
	set_fn(env, exports, "goRuntime", f_go_runtime, NULL);
	return exports;
}
