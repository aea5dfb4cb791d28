package netlab

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Sweep removes what labs of processes that no longer run left behind:
// namespaces named Prefix<pid>-... (with the processes still in them) and
// tmpfs disks mounted at .../Prefix<pid>-... It runs once per process, from
// the first New; labs of running processes (another test binary's) are
// left alone.
func Sweep(tb testing.TB) {
	tb.Helper()
	sweepOnce.Do(func() {
		n, err := sweep()
		if n > 0 {
			tb.Logf("netlab: swept %d leftovers of earlier runs", n)
		}
		if err != nil {
			tb.Errorf("netlab: sweep: %v", err)
		}
	})
}

// ownerDead reports whether name (a namespace or directory name starting
// with Prefix) belongs to a process that no longer runs.
func ownerDead(name string) bool {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return false
	}
	pidText, _, ok := strings.Cut(rest, "-")
	if !ok {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func sweep() (int, error) {
	n := 0
	var errs []error
	entries, err := os.ReadDir("/run/netns")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	for _, e := range entries {
		if !ownerDead(e.Name()) {
			continue
		}
		if err := removeNS(e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	mounts, err := os.Open("/proc/self/mounts")
	if err != nil {
		return n, errors.Join(append(errs, err)...)
	}
	defer mounts.Close()
	sc := bufio.NewScanner(mounts)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		dir := f[1]
		base := dir[strings.LastIndexByte(dir, '/')+1:]
		if !ownerDead(base) {
			continue
		}
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			errs = append(errs, err)
			continue
		}
		os.RemoveAll(dir)
		n++
	}
	return n, errors.Join(errs...)
}
