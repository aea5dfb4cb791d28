package netlab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Disk is a small filesystem (tmpfs of a fixed size) for one node's data
// directory, which the test can fill up or make read-only.
type Disk struct {
	Path string // the mount point
	lab  *Lab
	fill string // the file that fills it, "" when not full
}

// Disk mounts a tmpfs of sizeBytes at a new directory
// (/tmp/cnl-<pid>-<lab>-disk-<name>-*); the lab unmounts and removes it
// when the test ends.
func (l *Lab) Disk(name string, sizeBytes int64) *Disk {
	l.tb.Helper()
	dir, err := os.MkdirTemp("", l.prefix+"disk-"+name+"-")
	if err != nil {
		l.tb.Fatalf("netlab: disk %s: %v", name, err)
	}
	d := &Disk{Path: dir, lab: l}
	if err := run("", "mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0755", sizeBytes), "tmpfs", dir); err != nil {
		os.Remove(dir)
		l.tb.Fatalf("netlab: disk %s: %v", name, err)
	}
	l.mu.Lock()
	l.disks = append(l.disks, d)
	l.mu.Unlock()
	return d
}

// Fill writes a file that takes every free block, so the next write that
// needs space fails with ENOSPC. It returns the bytes it took.
func (d *Disk) Fill() (int64, error) {
	if d.fill != "" {
		return 0, errors.New("netlab: disk already full")
	}
	d.fill = filepath.Join(d.Path, "netlab-fill")
	f, err := os.Create(d.fill)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	var n int64
	for {
		w, err := f.Write(chunk)
		n += int64(w)
		if err != nil {
			if errors.Is(err, unix.ENOSPC) {
				break
			}
			return n, err
		}
	}
	// Smaller writes take the last partial megabyte.
	for _, size := range []int{64 << 10, 4 << 10, 512} {
		for {
			w, err := f.Write(chunk[:size])
			n += int64(w)
			if err != nil {
				break
			}
		}
	}
	return n, nil
}

// Free removes the file Fill wrote.
func (d *Disk) Free() error {
	if d.fill == "" {
		return nil
	}
	err := os.Remove(d.fill)
	d.fill = ""
	return err
}

// ReadOnly remounts the disk read-only (ro true) or read-write.
func (d *Disk) ReadOnly(ro bool) error {
	opt := "remount,rw"
	if ro {
		opt = "remount,ro"
	}
	return run("", "mount", "-o", opt, d.Path)
}

// Stat returns the disk's free and total bytes.
func (d *Disk) Stat() (free, total int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(d.Path, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Bavail) * st.Bsize, int64(st.Blocks) * st.Bsize, nil
}

func (d *Disk) remove() error {
	if err := unix.Unmount(d.Path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmount %s: %w", d.Path, err)
	}
	return os.RemoveAll(d.Path)
}
