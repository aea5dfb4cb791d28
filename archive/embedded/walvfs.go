package embedded

// The index's SQLite VFS: the default (unix) one, but for the writes to
// the write-ahead log. SQLite writes each WAL frame as two writes, its
// 24-byte header and then its page (walWriteOneFrame), so a commit of F
// frames costs 2F pwrite(2) calls; at a handful of messages per batch that
// was about a third of the writer's SQLite time. This VFS holds the frames
// a transaction appends at the end of the WAL and writes them with the
// commit frame's page (the frame whose header holds the database size
// after the commit; the WAL format at sqlite.org/fileformat2.html#walformat)
// in one write, before COMMIT returns: so a committed transaction is in the
// kernel exactly as before, and kill -9 loses nothing that was
// acknowledged. Any other access to the WAL (a read, a write elsewhere, a
// size, sync, truncate, file control or close) first writes what is held.
// Only the frames of a transaction not yet committed are ever held, and
// they are invisible to readers until the commit frame's write.

/*
#include <stdlib.h>
#include <string.h>

// The parts of SQLite's public VFS interface (sqlite3.h, "OS Interface
// Object" and "OS Interface Open File Handle") this file uses; SQLite
// itself comes from the mattn/go-sqlite3 package.
typedef long long i64;
typedef struct file file;
typedef struct io_methods io_methods;
typedef struct vfs vfs;
struct file { const io_methods *methods; };
struct io_methods {
	int version;
	int (*close)(file*);
	int (*read)(file*, void*, int, i64);
	int (*write)(file*, const void*, int, i64);
	int (*truncate)(file*, i64);
	int (*sync)(file*, int);
	int (*fileSize)(file*, i64*);
	int (*lock)(file*, int);
	int (*unlock)(file*, int);
	int (*checkReservedLock)(file*, int*);
	int (*fileControl)(file*, int, void*);
	int (*sectorSize)(file*);
	int (*deviceCharacteristics)(file*);
	int (*shmMap)(file*, int, int, int, void volatile**);
	int (*shmLock)(file*, int, int, int);
	void (*shmBarrier)(file*);
	int (*shmUnmap)(file*, int);
	int (*fetch)(file*, i64, int, void**);
	int (*unfetch)(file*, i64, void*);
};
struct vfs {
	int version;
	int osFileSize;
	int maxPathname;
	vfs *next;
	const char *name;
	void *appData;
	int (*open)(vfs*, const char*, file*, int, int*);
	void *rest[15]; // delete ... nextSystemCall: the default VFS's own
};
extern vfs *sqlite3_vfs_find(const char*);
extern int sqlite3_vfs_register(vfs*, int);

#define OPEN_WAL 0x00080000 // SQLITE_OPEN_WAL
#define OK 0
#define ERR_NOMEM 7
#define FRAME_HEADER 24
// MAX_HELD bounds the bytes held, and so each write: the unix VFS writes at
// most 128 KiB - 1 bytes in one call (seekAndWriteFd), and a transaction of
// more frames than fit is written as it goes.
#define MAX_HELD (64 << 10)

typedef struct {
	file base;
	file *real;          // the default VFS's file, after this struct
	unsigned char *buf;  // held bytes, from off on
	int len;
	i64 off;
	i64 end;             // end of what was written or held at the end of the WAL
	int held;            // buf ends with the header of a frame that is not a commit's
} walFile;

static vfs *base;
static vfs courier;

#define REAL(f) (((walFile*)(f))->real)

static int flush(walFile *w) {
	if (w->len == 0) {
		return OK;
	}
	int n = w->len;
	w->len = 0;
	w->held = 0;
	return w->real->methods->write(w->real, w->buf, n, w->off);
}

// Calls that only pass through.
static int pClose(file *f) {
	walFile *w = (walFile*)f;
	int rc = flush(w);
	int rc2 = w->real->methods->close(w->real);
	free(w->buf);
	w->buf = NULL;
	return rc != OK ? rc : rc2;
}
static int pRead(file *f, void *p, int n, i64 off) { return REAL(f)->methods->read(REAL(f), p, n, off); }
static int pWrite(file *f, const void *p, int n, i64 off) { return REAL(f)->methods->write(REAL(f), p, n, off); }
static int pTruncate(file *f, i64 n) { return REAL(f)->methods->truncate(REAL(f), n); }
static int pSync(file *f, int flags) { return REAL(f)->methods->sync(REAL(f), flags); }
static int pFileSize(file *f, i64 *n) { return REAL(f)->methods->fileSize(REAL(f), n); }
static int pLock(file *f, int l) { return REAL(f)->methods->lock(REAL(f), l); }
static int pUnlock(file *f, int l) { return REAL(f)->methods->unlock(REAL(f), l); }
static int pCheckReservedLock(file *f, int *r) { return REAL(f)->methods->checkReservedLock(REAL(f), r); }
static int pFileControl(file *f, int op, void *a) { return REAL(f)->methods->fileControl(REAL(f), op, a); }
static int pSectorSize(file *f) { return REAL(f)->methods->sectorSize(REAL(f)); }
static int pDeviceCharacteristics(file *f) { return REAL(f)->methods->deviceCharacteristics(REAL(f)); }
static int pShmMap(file *f, int pg, int sz, int ext, void volatile **pp) { return REAL(f)->methods->shmMap(REAL(f), pg, sz, ext, pp); }
static int pShmLock(file *f, int off, int n, int flags) { return REAL(f)->methods->shmLock(REAL(f), off, n, flags); }
static void pShmBarrier(file *f) { REAL(f)->methods->shmBarrier(REAL(f)); }
static int pShmUnmap(file *f, int del) { return REAL(f)->methods->shmUnmap(REAL(f), del); }
static int pFetch(file *f, i64 off, int n, void **pp) { return REAL(f)->methods->fetch(REAL(f), off, n, pp); }
static int pUnfetch(file *f, i64 off, void *p) { return REAL(f)->methods->unfetch(REAL(f), off, p); }

// The WAL's calls: whatever is held is written first.
#define FLUSHED(call) { int rc = flush((walFile*)f); if (rc != OK) return rc; return call; }
static int wRead(file *f, void *p, int n, i64 off) FLUSHED(pRead(f, p, n, off))
static int wTruncate(file *f, i64 n) { ((walFile*)f)->end = n; FLUSHED(pTruncate(f, n)) }
static int wSync(file *f, int flags) FLUSHED(pSync(f, flags))
static int wFileSize(file *f, i64 *n) FLUSHED(pFileSize(f, n))
static int wFileControl(file *f, int op, void *a) FLUSHED(pFileControl(f, op, a))
static int wFetch(file *f, i64 off, int n, void **pp) FLUSHED(pFetch(f, off, n, pp))

static int wWrite(file *f, const void *p, int n, i64 off) {
	walFile *w = (walFile*)f;
	int rc;
	if (off == 0) {
		w->end = 0; // the WAL header: the log starts over
	}
	if (w->len > 0 && off != w->off + w->len) {
		if ((rc = flush(w)) != OK) {
			return rc;
		}
	}
	int header = n == FRAME_HEADER;
	int commit = header && memcmp((const char*)p + 4, "\0\0\0\0", 4) != 0;
	// Hold a frame header appended at the end of the log, and the page
	// after a held header that is not a commit's; anything else goes out
	// now, with what is held before it.
	int hold = off >= w->end && (header || w->held);
	if (!hold && w->len == 0) {
		rc = pWrite(f, p, n, off);
	} else {
		if (w->len + n > MAX_HELD) {
			if ((rc = flush(w)) != OK) {
				return rc;
			}
			if (n > MAX_HELD) {
				rc = pWrite(f, p, n, off);
				goto done;
			}
		}
		if (w->buf == NULL) {
			if ((w->buf = malloc(MAX_HELD)) == NULL) {
				return ERR_NOMEM;
			}
		}
		if (w->len == 0) {
			w->off = off;
		}
		memcpy(w->buf + w->len, p, n);
		w->len += n;
		w->held = header && !commit;
		rc = hold ? OK : flush(w);
	}
done:
	if (rc == OK && off + n > w->end) {
		w->end = off + n;
	}
	return rc;
}

static const io_methods passMethods = {3, pClose, pRead, pWrite, pTruncate, pSync, pFileSize, pLock, pUnlock,
	pCheckReservedLock, pFileControl, pSectorSize, pDeviceCharacteristics, pShmMap, pShmLock, pShmBarrier,
	pShmUnmap, pFetch, pUnfetch};
static const io_methods walMethods = {3, pClose, wRead, wWrite, wTruncate, wSync, wFileSize, pLock, pUnlock,
	pCheckReservedLock, wFileControl, pSectorSize, pDeviceCharacteristics, pShmMap, pShmLock, pShmBarrier,
	pShmUnmap, wFetch, pUnfetch};

#define HEAD ((int)((sizeof(walFile) + 7) & ~7))

static int vOpen(vfs *v, const char *name, file *f, int flags, int *outFlags) {
	walFile *w = (walFile*)f;
	memset(w, 0, sizeof *w);
	w->real = (file*)((char*)f + HEAD);
	int rc = base->open(base, name, w->real, flags, outFlags);
	if (rc != OK || w->real->methods == NULL) {
		f->methods = NULL;
		return rc;
	}
	f->methods = (flags & OPEN_WAL) ? &walMethods : &passMethods;
	return OK;
}

// courier_wal_vfs registers the VFS named name once; it returns 0, or 1
// when SQLite has no default VFS or a file handle of it lacks version 3.
static int courier_wal_vfs(const char *name) {
	if (courier.name != NULL) {
		return 0;
	}
	base = sqlite3_vfs_find(NULL);
	if (base == NULL) {
		return 1;
	}
	memcpy(&courier, base, sizeof courier);
	courier.next = NULL;
	courier.name = strdup(name);
	courier.osFileSize = HEAD + base->osFileSize;
	courier.open = vOpen;
	return sqlite3_vfs_register(&courier, 0);
}
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// walVFS is the name of the VFS the index's connections open it with.
const walVFS = "courier-wal"

var walVFSOnce = sync.OnceValue(func() error {
	name := C.CString(walVFS)
	defer C.free(unsafe.Pointer(name))
	if rc := C.courier_wal_vfs(name); rc != 0 {
		return fmt.Errorf("archive: index: registering SQLite VFS %s: code %d", walVFS, int(rc))
	}
	return nil
})
