package embedded

// The page cache under every SQLite connection of the process: SQLite's
// own (pcache1), with one thing changed. When a B-tree balance puts new
// pages in page-number order (sqlite3.c, balance_nonroot, "Reassign page
// numbers"), it swaps two pages through a spare page number, the lock
// page's (PENDING_BYTE / page size + 1: 1,048,577 with 1 KiB pages). The
// cache then remembers that number as its largest key, and the commit that
// ends the transaction (pager_end_transaction) truncates the cache to the
// database's size; while the database is smaller than the lock page's
// offset (1 GiB), that largest key is further above the size than the
// cache has hash slots, so the truncate walks every slot: with the
// writer's cache of 64 MiB, tens of thousands of slots at every commit
// that split a page out of order. This cache hands pcache1 the key one
// past the largest page it holds in place of the lock page's, for the
// length of the swap; no page has that key, none is fetched during the
// swap, and the truncate then finds nothing above the database's size.
//
// SQLite takes a page cache only before it initializes (sqlite3_config),
// so this package installs it at its init; if the program used SQLite
// before that, SQLite keeps its own, which behaves the same but for the
// walk (pageCacheErr says so).

/*
#include <stdlib.h>
#include <string.h>

// The page cache interface of SQLite (sqlite3.h, "Custom Page Cache
// Object"), with SQLite itself from the mattn/go-sqlite3 package.
typedef struct pcache pcache;
typedef struct { void *buf; void *extra; } pcachePage;
typedef struct {
	int version;
	void *arg;
	int (*init)(void*);
	void (*shutdown)(void*);
	pcache *(*create)(int pageSize, int extraSize, int purgeable);
	void (*cachesize)(pcache*, int);
	int (*pagecount)(pcache*);
	pcachePage *(*fetch)(pcache*, unsigned key, int create);
	void (*unpin)(pcache*, pcachePage*, int discard);
	void (*rekey)(pcache*, pcachePage*, unsigned oldKey, unsigned newKey);
	void (*truncate)(pcache*, unsigned limit);
	void (*destroy)(pcache*);
	void (*shrink)(pcache*);
} pcacheMethods;
extern int sqlite3_config(int, ...);
#define CONFIG_PCACHE2 18    // SQLITE_CONFIG_PCACHE2
#define CONFIG_GETPCACHE2 19 // SQLITE_CONFIG_GETPCACHE2
// The lock page's offset: SQLite's default, which only its test control
// SQLITE_TESTCTRL_PENDING_BYTE changes (nothing in courier calls it).
#define PENDING_BYTE 0x40000000

static pcacheMethods inner;

// A cache: pcache1's, the lock page's number for its page size, and the
// largest key of a page it may hold.
typedef struct {
	pcache *inner;
	unsigned lockPage;
	unsigned maxKey;
} cache;

static unsigned long long swaps; // keys stood in for, for the tests

#define C(p) ((cache*)(p))
#define INNER(p) (C(p)->inner)

// key is the key pcache1 gets for the pager's key k: one past the
// largest page's for the lock page's number while no page reaches it.
static unsigned key(pcache *p, unsigned k) {
	cache *c = C(p);
	return k != c->lockPage || c->maxKey >= k ? k : c->maxKey + 1;
}

static int cInit(void *arg) { return inner.init(inner.arg); }
static void cShutdown(void *arg) { if (inner.shutdown) inner.shutdown(inner.arg); }
static pcache *cCreate(int pageSize, int extraSize, int purgeable) {
	cache *c = malloc(sizeof *c);
	if (c == NULL) {
		return NULL;
	}
	if ((c->inner = inner.create(pageSize, extraSize, purgeable)) == NULL) {
		free(c);
		return NULL;
	}
	c->lockPage = PENDING_BYTE / (unsigned)pageSize + 1;
	c->maxKey = 0;
	return (pcache*)c;
}
static void cCachesize(pcache *p, int n) { inner.cachesize(INNER(p), n); }
static int cPagecount(pcache *p) { return inner.pagecount(INNER(p)); }
static pcachePage *cFetch(pcache *p, unsigned k, int create) {
	if (!create) {
		return inner.fetch(INNER(p), key(p, k), 0);
	}
	// A fetch that may create a page gets its own key: the pager creates
	// the lock page only to refuse it as corrupt (getPageNormal), never
	// during a swap, and maxKey then covers it until the next truncate.
	pcachePage *pg = inner.fetch(INNER(p), k, create);
	if (pg != NULL && k > C(p)->maxKey) {
		C(p)->maxKey = k;
	}
	return pg;
}
static void cUnpin(pcache *p, pcachePage *pg, int discard) { inner.unpin(INNER(p), pg, discard); }
static void cRekey(pcache *p, pcachePage *pg, unsigned oldKey, unsigned newKey) {
	unsigned ik = key(p, newKey);
	inner.rekey(INNER(p), pg, key(p, oldKey), ik);
	if (ik != newKey) {
		__atomic_fetch_add(&swaps, 1, __ATOMIC_RELAXED);
	} else if (newKey > C(p)->maxKey) {
		C(p)->maxKey = newKey;
	}
}
static void cTruncate(pcache *p, unsigned limit) {
	inner.truncate(INNER(p), limit);
	if (limit > 0 && C(p)->maxKey >= limit) {
		C(p)->maxKey = limit - 1;
	}
}
static void cDestroy(pcache *p) {
	inner.destroy(INNER(p));
	free(p);
}
static void cShrink(pcache *p) { if (inner.shrink) inner.shrink(INNER(p)); }

// courier_pcache installs the cache; it returns SQLite's code (21,
// SQLITE_MISUSE, once SQLite has initialized).
static int courier_pcache(void) {
	int rc = sqlite3_config(CONFIG_GETPCACHE2, &inner);
	if (rc != 0) {
		return rc;
	}
	static pcacheMethods m;
	m = inner;
	m.arg = NULL;
	m.init = cInit;
	m.shutdown = cShutdown;
	m.create = cCreate;
	m.cachesize = cCachesize;
	m.pagecount = cPagecount;
	m.fetch = cFetch;
	m.unpin = cUnpin;
	m.rekey = cRekey;
	m.truncate = cTruncate;
	m.destroy = cDestroy;
	m.shrink = inner.shrink ? cShrink : NULL;
	return sqlite3_config(CONFIG_PCACHE2, &m);
}

static unsigned long long courier_pcache_swaps(void) { return __atomic_load_n(&swaps, __ATOMIC_RELAXED); }
*/
import "C"

import "fmt"

// pageCacheErr is nil once the page cache above is SQLite's, else why
// it is not.
var pageCacheErr error

func init() {
	if rc := C.courier_pcache(); rc != 0 {
		pageCacheErr = fmt.Errorf("archive: index: SQLite's page cache kept (code %d): SQLite was in use before this package's init", int(rc))
	}
}

// pageCacheSwaps returns how many times the page cache has stood a key
// in for the lock page's, in every connection of the process.
func pageCacheSwaps() uint64 { return uint64(C.courier_pcache_swaps()) }
