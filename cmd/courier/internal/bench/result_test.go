package bench

import (
	"os"
	"syscall"
	"testing"
)

// TestProcessUsageFaults touches the pages of a fresh anonymous mapping, each
// for the first time: every one is a minor page fault, so the count grows
// by at least that many (and by little more: other goroutines fault too).
func TestProcessUsageFaults(t *testing.T) {
	const pages = 512
	size := pages * os.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	_, before := processUsage()
	for i := 0; i < size; i += os.Getpagesize() {
		mem[i] = 1
	}
	_, after := processUsage()
	if got := after - before; got < pages || got > 2*pages {
		t.Fatalf("%d minor faults for touching %d fresh pages", got, pages)
	}
}
