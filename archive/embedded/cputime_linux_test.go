package embedded_test

import (
	"testing"

	"github.com/couriernet/courier/archive"
)

// TestWriterCPU: on Linux the embedded archive's writer reports the CPU
// time its batches took, and only its batches: nothing before the first.
func TestWriterCPU(t *testing.T) {
	a := openT(t, t.TempDir(), archive.Config{})
	defer a.Close()
	if cpu := a.Stats().WriterCPU; cpu != 0 {
		t.Fatalf("WriterCPU %v before any batch", cpu)
	}
	for i := range 100 {
		appendWait(t, a, newEnv(t, "/waku/2/rs/0/0", "/a/1/b/c", int64(i+1), make([]byte, 10_000)))
	}
	if st := a.Stats(); st.WriterCPU <= 0 || st.Inserts != 100 {
		t.Fatalf("after 100 inserts: WriterCPU %v, inserts %d", st.WriterCPU, st.Inserts)
	}
}
