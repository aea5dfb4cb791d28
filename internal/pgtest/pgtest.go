// Package pgtest starts a throwaway PostgreSQL server for a package's tests
// and hands each test a fresh database on it.
//
// The server runs from the PostgreSQL binaries installed on the machine
// (initdb, pg_ctl and postgres from COURIER_PG_BIN when it is set, else
// the newest /usr/lib/postgresql/N/bin, else PATH), in a temporary directory, listening
// on a loopback port and a Unix socket in that directory, with PostgreSQL's
// default durability (fsync on). initdb and postgres refuse to run as root,
// so under root they run as the user "postgres" through runuser(1).
//
// A package opts in from its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// Main starts nothing: the server starts at the first call of DB and Main
// stops it (pg_ctl stop -m immediate) and removes its directory once the
// tests are done, whether they passed or not. Without the binaries DB skips
// the test with a message; when the environment has CI=true it fails it
// instead, so a CI machine missing PostgreSQL cannot pass by skipping.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/couriernet/courier/internal/freeport"
)

// BinEnv names the environment variable that overrides where the
// PostgreSQL binaries are looked up.
const BinEnv = "COURIER_PG_BIN"

var (
	mainCalled atomic.Bool
	startOnce  sync.Once
	shared     *Server
	startErr   error
	dbSeq      atomic.Int64
)

// Main runs the package's tests and then stops the server DB started, if
// any. It returns m.Run's code, for os.Exit.
func Main(m *testing.M) int {
	mainCalled.Store(true)
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	return code
}

// DB creates an empty database on the package's server, starting the
// server on the first call, and returns its URL
// (postgres://postgres@127.0.0.1:PORT/NAME?sslmode=disable). The database
// is left for the server's removal. It skips tb when PostgreSQL is not
// installed, or fails it when CI=true.
func DB(tb testing.TB) string {
	tb.Helper()
	if !mainCalled.Load() {
		tb.Fatal("pgtest: call pgtest.Main from the package's TestMain")
	}
	startOnce.Do(func() {
		if shared, startErr = Start(); startErr == nil {
			stopOnSignal(shared)
		}
	})
	if startErr != nil {
		if errors.Is(startErr, ErrNoBinaries) && os.Getenv("CI") != "true" {
			tb.Skipf("pgtest: %v: skipped (set %s to their directory; with CI=true this fails)", startErr, BinEnv)
		}
		tb.Fatalf("pgtest: %v", startErr)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	if err := shared.exec("CREATE DATABASE " + name); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return shared.url(name)
}

// stopOnSignal stops s and exits when the test binary is interrupted
// (Ctrl-C, or SIGTERM), so an interrupted run leaves no server behind.
func stopOnSignal(s *Server) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-ch
		s.Stop()
		fmt.Fprintf(os.Stderr, "pgtest: %v: stopped the PostgreSQL server\n", sig)
		os.Exit(1)
	}()
}

// ErrNoBinaries is returned by Start when initdb, pg_ctl or postgres is
// not found.
var ErrNoBinaries = errors.New("PostgreSQL binaries (initdb, pg_ctl, postgres) not found")

// Server is a running throwaway PostgreSQL server.
type Server struct {
	// URL is the connection URL of its "postgres" database.
	URL string

	dir  string // temporary directory: data/, the socket, the log
	bin  string
	port int
	as   string // user to run the binaries as ("" for the current one)
}

// Start initializes and starts a server in a new temporary directory. Its
// caller must Stop it.
func Start() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin}
	if os.Geteuid() == 0 {
		s.as = "postgres"
	}
	if s.dir, err = os.MkdirTemp("", "pgtest-"); err != nil {
		return nil, err
	}
	if err := s.chown(); err != nil {
		os.RemoveAll(s.dir)
		return nil, err
	}
	data := filepath.Join(s.dir, "data")
	if out, err := s.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--locale=C"); err != nil {
		os.RemoveAll(s.dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	// A free port can be taken between picking and binding it: try a few.
	for range 5 {
		if s.port, err = freeport.Port(); err != nil {
			break
		}
		opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c max_connections=100", s.port, s.dir)
		var out []byte
		out, err = s.run("pg_ctl", "-D", data, "-l", filepath.Join(s.dir, "log"), "-o", opts, "-w", "-t", "120", "start")
		if err == nil {
			break
		}
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		err = fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
		if !strings.Contains(string(log), "could not bind") && !strings.Contains(string(log), "already in use") {
			break
		}
	}
	if err != nil {
		os.RemoveAll(s.dir)
		return nil, err
	}
	s.URL = s.url("postgres")
	return s, nil
}

// Stop stops the server at once and removes its directory.
func (s *Server) Stop() error {
	out, err := s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
	if err != nil {
		err = fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	if rerr := os.RemoveAll(s.dir); err == nil {
		err = rerr
	}
	return err
}

func (s *Server) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// exec runs one statement on the "postgres" database.
func (s *Server) exec(stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, stmt)
	return err
}

func (s *Server) run(name string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, name)
	var cmd *exec.Cmd
	if s.as != "" {
		cmd = exec.Command("runuser", append([]string{"-u", s.as, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = s.dir
	return cmd.CombinedOutput()
}

// chown gives the temporary directory to the user the binaries run as.
func (s *Server) chown() error {
	if s.as == "" {
		return nil
	}
	u, err := user.Lookup(s.as)
	if err != nil {
		return fmt.Errorf("running as root needs the user %q: %w", s.as, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if _, err := exec.LookPath("runuser"); err != nil {
		return fmt.Errorf("running as root needs runuser: %w", err)
	}
	return os.Chown(s.dir, uid, gid)
}

// binDir finds the directory holding initdb, pg_ctl and postgres.
func binDir() (string, error) {
	if d := os.Getenv(BinEnv); d != "" {
		if hasBinaries(d) {
			return d, nil
		}
		return "", fmt.Errorf("%w in %s=%s", ErrNoBinaries, BinEnv, d)
	}
	var dirs []string
	versions, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(versions, func(a, b string) int { return pgVersion(b) - pgVersion(a) })
	dirs = append(dirs, versions...)
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if hasBinaries(d) {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

func pgVersion(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func hasBinaries(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}
