package netlab

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logLimit bounds the bytes of output a process keeps; older lines go
// first.
const logLimit = 4 << 20

// Proc is a process the lab started in a host's namespace. Its stdout and
// stderr are kept (the last logLimit bytes) and shown when the test fails.
type Proc struct {
	Name string
	host *Host
	bin  string
	args []string
	env  []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when the current run exits
	waitErr error
	log     logBuf
	runs    int
}

// logBuf collects output lines, bounded by logLimit.
type logBuf struct {
	mu      sync.Mutex
	lines   []string
	size    int
	partial []byte
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		l.lines = append(l.lines, line)
		l.size += len(line)
		for l.size > logLimit && len(l.lines) > 1 {
			l.size -= len(l.lines[0])
			l.lines = l.lines[1:]
		}
	}
	return len(p), nil
}

func (l *logBuf) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func (l *logBuf) mark(s string) {
	l.Write([]byte(s + "\n"))
}

// Start starts bin with args in host h's namespace (ip netns exec), with
// the test's environment less COURIER_* and WAKUNODE2_* variables (which
// would set node flags) plus env. The lab kills it when the test ends.
func (h *Host) Start(name, bin string, env []string, args ...string) *Proc {
	l := h.lab
	l.tb.Helper()
	p := &Proc{Name: name, host: h, bin: bin, args: args, env: env}
	if err := p.start(); err != nil {
		l.tb.Fatalf("netlab: start %s: %v", name, err)
	}
	l.mu.Lock()
	l.procs = append(l.procs, p)
	l.mu.Unlock()
	l.tb.Cleanup(func() {
		p.kill()
		if l.tb.Failed() {
			l.tb.Logf("--- %s on %s (%s %s), last output:\n%s", name, h.Name, bin, strings.Join(args, " "), p.tail(200))
		}
	})
	return p
}

func (p *Proc) start() error {
	cmd := exec.Command("ip", append([]string{"netns", "exec", p.host.NS, p.bin}, p.args...)...)
	cmd.Env = append(childEnv(), p.env...)
	cmd.Stdout, cmd.Stderr = &p.log, &p.log
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs++
	p.log.mark(fmt.Sprintf("=== netlab: run %d of %s at %s", p.runs, p.Name, time.Now().Format(time.RFC3339Nano)))
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(done)
	}()
	return waitExec(cmd.Process.Pid, p.bin, done)
}

// waitExec waits until process pid runs bin: ip netns exec has joined the
// namespace and exec'd it, so signals and /proc/<pid> are bin's.
func waitExec(pid int, bin string, done <-chan struct{}) error {
	want, err := exec.LookPath(bin)
	if err == nil {
		want, err = filepath.EvalSymlinks(want)
	}
	if err == nil {
		want, err = filepath.Abs(want)
	}
	if err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == want {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited at once", bin)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: ip netns exec did not exec it within 10 s", bin)
		}
		time.Sleep(time.Millisecond)
	}
}

func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COURIER_") && !strings.HasPrefix(kv, "WAKUNODE2_") {
			env = append(env, kv)
		}
	}
	return env
}

// Pid is the current run's process id.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Exited reports whether the current run has ended.
func (p *Proc) Exited() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		return true
	default:
		return false
	}
}

func (p *Proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Signal(sig)
}

// Pause stops the process (SIGSTOP) and waits until it is stopped: it
// keeps its sockets but answers nothing. Resume continues it.
func (p *Proc) Pause() error {
	if err := p.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
		if err != nil {
			return err
		}
		// pid (comm) state ...: comm may hold spaces, the state follows ")".
		if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'T' {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not stopped 5 s after SIGSTOP", p.Name)
		}
		time.Sleep(time.Millisecond)
	}
}

// Resume continues a paused process (SIGCONT).
func (p *Proc) Resume() error { return p.signal(syscall.SIGCONT) }

// Kill9 kills the process with SIGKILL and waits for it to end.
func (p *Proc) Kill9() error {
	p.log.mark("=== netlab: kill -9 at " + time.Now().Format(time.RFC3339Nano))
	p.kill()
	if !p.Exited() {
		return fmt.Errorf("%s still running after SIGKILL", p.Name)
	}
	return nil
}

func (p *Proc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}

// Stop sends SIGTERM and waits up to timeout for the process to end; it
// returns how long the exit took and the process's exit error (nil for
// exit code 0).
func (p *Proc) Stop(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := p.signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
	case <-time.After(timeout):
		return time.Since(start), fmt.Errorf("%s still running %v after SIGTERM", p.Name, timeout)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Since(start), p.waitErr
}

// Restart starts the process again with the same arguments; the previous
// run must have ended.
func (p *Proc) Restart() error {
	if !p.Exited() {
		return fmt.Errorf("restart %s: still running", p.Name)
	}
	return p.start()
}

// Lines returns the output lines kept, from every run.
func (p *Proc) Lines() []string { return p.log.snapshot() }

func (p *Proc) tail(n int) string {
	lines := p.log.snapshot()
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitLine waits until a line of the current run matches re and returns
// its submatches; it fails if the run ends first or timeout passes.
func (p *Proc) WaitLine(re *regexp.Regexp, timeout time.Duration) ([]string, error) {
	deadline := time.Now().Add(timeout)
	marker := fmt.Sprintf("=== netlab: run %d of ", p.runsNow())
	for {
		lines := p.log.snapshot()
		from := 0
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.HasPrefix(lines[i], marker) {
				from = i
				break
			}
		}
		for _, line := range lines[from:] {
			if m := re.FindStringSubmatch(line); m != nil {
				return m, nil
			}
		}
		if p.Exited() {
			return nil, fmt.Errorf("%s exited (%v) before logging %q", p.Name, p.waitErr, re)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s did not log %q within %v", p.Name, re, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *Proc) runsNow() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs
}

// Memory is a process's resident memory from /proc/<pid>/status.
type Memory struct {
	RSS  int64 // VmRSS, bytes
	Peak int64 // VmHWM, the run's peak resident set, bytes
}

// Memory reads the current run's resident memory.
func (p *Proc) Memory() (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			m.RSS = kb << 10
		case "VmHWM:":
			m.Peak = kb << 10
		}
	}
	return m, nil
}

// PeakRSS returns the largest peak resident set (VmHWM, bytes) of the
// nodes' current runs; a node that exited is left out, one whose memory
// cannot be read is logged on tb and left out.
func PeakRSS(tb testing.TB, nodes []*Node) int64 {
	var peak int64
	for _, n := range nodes {
		if n.Exited() {
			continue
		}
		m, err := n.Memory()
		if err != nil {
			tb.Logf("memory of %s: %v", n.Host.Name, err)
			continue
		}
		peak = max(peak, m.Peak)
	}
	return peak
}
