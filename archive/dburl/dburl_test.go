package dburl_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/dburl"
	"github.com/couriernet/courier/archive/internal/archivetest"
	"github.com/couriernet/courier/message"
)

func TestOpenURL(t *testing.T) {
	for _, u := range []string{"", "sqlite://", "mysql://h/db", "postgres//x", "/var/db.sqlite3"} {
		if a, err := dburl.Open(context.Background(), u, dburl.Config{}); !errors.Is(err, archive.ErrConfig) || a != nil {
			t.Errorf("Open(%q): %v, want ErrConfig", u, err)
		}
	}
	if a, err := dburl.Open(context.Background(), "postgres://x:y@127.0.0.1:1/db?sslmode=bogus", dburl.Config{}); !errors.Is(err, archive.ErrConfig) || a != nil {
		t.Errorf("bad sslmode: %v, want ErrConfig", err)
	}
	if a, err := (dburl.Location{}).Open(context.Background(), dburl.Config{}); !errors.Is(err, archive.ErrConfig) || a != nil {
		t.Errorf("the zero Location: %v, want ErrConfig", err)
	}
}

// TestParse resolves URLs as nwaku's archive driver builder does
// (waku_archive/driver/builder.nim, common/databases/dburl.nim): the text
// after "sqlite://" is the SQLite file's path, relative to the working
// directory unless absolute, with the segments in PATH.segments.
func TestParse(t *testing.T) {
	for _, tt := range []struct {
		url  string
		want dburl.Location
		err  bool
	}{
		{"sqlite://store.sqlite3", dburl.Location{Dir: "store.sqlite3.segments", Index: "store.sqlite3"}, false},
		{"sqlite:///var/waku/db.sqlite3", dburl.Location{Dir: "/var/waku/db.sqlite3.segments", Index: "/var/waku/db.sqlite3"}, false},
		{"postgres://u:p@127.0.0.1:5432/waku", dburl.Location{Postgres: "postgres://u:p@127.0.0.1:5432/waku"}, false},
		{"postgresql://u:p@127.0.0.1:5432/waku", dburl.Location{Postgres: "postgresql://u:p@127.0.0.1:5432/waku"}, false},
		{"sqlite://", dburl.Location{}, true},
		{"mysql://u:p@h:1/db", dburl.Location{}, true},
	} {
		got, err := dburl.Parse(tt.url)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%q: %+v, %v", tt.url, got, err)
		}
		if err != nil && !errors.Is(err, archive.ErrConfig) {
			t.Errorf("%q: %v does not wrap ErrConfig", tt.url, err)
		}
	}
}

// TestOpenSQLite: sqlite://PATH opens the embedded archive with its index
// at PATH and its segments in PATH.segments, and reopens it there.
func TestOpenSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.sqlite3")
	url := "sqlite://" + path
	a, err := dburl.Open(context.Background(), url, dburl.Config{})
	if err != nil {
		t.Fatal(err)
	}
	env := archivetest.NewEnv(t, "/waku/2/rs/0/0", "/a/1/b/c", 5, []byte("x"))
	archivetest.AppendWait(t, a, env)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no index at PATH: %v", err)
	}
	if segs, _ := filepath.Glob(filepath.Join(path+dburl.SegmentsSuffix, "*.seg")); len(segs) != 1 {
		t.Fatalf("segments in PATH.segments: %v", segs)
	}
	b, err := dburl.Open(context.Background(), url, dburl.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	res, err := b.Query(context.Background(), archive.Query{Hashes: []message.Hash{env.Hash()}, IncludeData: true})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("reopened: %+v, %v", res, err)
	}
}

// TestOpenSQLiteMissingDir: sqlite://PATH whose directory does not exist,
// or is a file, is refused with ErrConfig naming the directory, and nothing
// is created: nwaku's SQLite driver creates the file, not its directories.
func TestOpenSQLiteMissingDir(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "no", "such", "dir")
	a, err := dburl.Open(context.Background(), "sqlite://"+filepath.Join(missing, "store.sqlite3"), dburl.Config{})
	if !errors.Is(err, archive.ErrConfig) || a != nil || !strings.Contains(err.Error(), "directory "+missing+" does not exist") {
		t.Fatalf("Open under a missing directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "no")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the missing directory was created: %v", err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if a, err := dburl.Open(context.Background(), "sqlite://"+filepath.Join(file, "store.sqlite3"), dburl.Config{}); !errors.Is(err, archive.ErrConfig) || a != nil || !strings.Contains(err.Error(), file+" is not a directory") {
		t.Fatalf("Open under a file: %v", err)
	}
}

// TestParseIn resolves a node's --store-message-db-url against its data
// directory: "" is the embedded archive in it (nwaku's ./store.sqlite3
// without one), "embedded" too; other URLs as Parse.
func TestParseIn(t *testing.T) {
	for _, tt := range []struct {
		url, dataDir string
		want         dburl.Location
		err          bool
	}{
		{"", "", dburl.Location{Dir: "store.sqlite3.segments", Index: "store.sqlite3"}, false},
		{"", "/d", dburl.Location{Dir: "/d/archive"}, false},
		{"embedded", "/d", dburl.Location{Dir: "/d/archive"}, false},
		{"sqlite://store.sqlite3", "/d", dburl.Location{Dir: "store.sqlite3.segments", Index: "store.sqlite3"}, false},
		{"sqlite:///var/waku/db.sqlite3", "", dburl.Location{Dir: "/var/waku/db.sqlite3.segments", Index: "/var/waku/db.sqlite3"}, false},
		{"postgres://u:p@127.0.0.1:5432/waku", "", dburl.Location{Postgres: "postgres://u:p@127.0.0.1:5432/waku"}, false},
		{"postgresql://u:p@127.0.0.1:5432/waku", "", dburl.Location{Postgres: "postgresql://u:p@127.0.0.1:5432/waku"}, false},
		{"sqlite://", "", dburl.Location{}, true},
		{"mysql://u:p@h:1/db", "", dburl.Location{}, true},
	} {
		got, err := dburl.ParseIn(tt.url, tt.dataDir)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%q in %q: %+v, %v", tt.url, tt.dataDir, got, err)
		}
		if err != nil && !errors.Is(err, archive.ErrConfig) {
			t.Errorf("%q: %v does not wrap ErrConfig", tt.url, err)
		}
	}
}

// TestLocationString: a location names itself in logs and errors without
// a PostgreSQL password.
func TestLocationString(t *testing.T) {
	for _, tt := range []struct {
		loc  dburl.Location
		want string
	}{
		{dburl.Location{Postgres: "postgres://waku:secret@127.0.0.1:5432/waku"}, "PostgreSQL postgres://waku:xxxxx@127.0.0.1:5432/waku"},
		{dburl.Location{Dir: "/d/archive"}, "embedded in /d/archive"},
		{dburl.Location{Dir: "s.sqlite3.segments", Index: "s.sqlite3"}, "embedded (index s.sqlite3, segments s.sqlite3.segments)"},
	} {
		if got := tt.loc.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.loc, got, tt.want)
		}
	}
}

// TestRedact hides the password of the user info and of every query
// parameter named for one, and leaves the rest of the URL as it was.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:PWSECRET@h:5432/db":                         "postgres://u:xxxxx@h:5432/db",
		"postgres://u@127.0.0.1:1/db?password=PWSECRET":           "postgres://u@127.0.0.1:1/db?password=xxxxx",
		"postgres://u@h/db?sslmode=require&sslpassword=PWSECRET":  "postgres://u@h/db?sslmode=require&sslpassword=xxxxx",
		"postgresql://u@h/db?PassWord=PWSECRET&user=u":            "postgresql://u@h/db?PassWord=xxxxx&user=u",
		"postgres://u@h/db?my%5Fpassword=PWSECRET#frag":           "postgres://u@h/db?my%5Fpassword=xxxxx#frag",
		"mysql://u:PWSECRET@x/db":                                 "mysql://u:xxxxx@x/db",
		"mysql://u:PW%zzSECRET@x/db?password=PWSECRET":            "mysql://u:xxxxx@x/db?password=xxxxx",
		"u:PWSECRET@x/db":                                         "u:xxxxx@x/db",
		"postgres://u:p@ss:PWSECRET@h/db":                         "postgres://u:xxxxx@h/db",
		"postgres://waku@h:5432/waku?sslmode=disable":             "postgres://waku@h:5432/waku?sslmode=disable",
		"sqlite://store.sqlite3":                                  "sqlite://store.sqlite3",
		"postgres://u:PWSECRET@h/db?application_name=a&password=": "postgres://u:xxxxx@h/db?application_name=a&password=xxxxx",
	} {
		if got := dburl.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestErrorsHidePasswords: the errors of a URL that is refused or whose
// database cannot be reached do not show its passwords.
func TestErrorsHidePasswords(t *testing.T) {
	for _, u := range []string{
		"mysql://u:PWSECRET@x/db",
		"mysql://u@x/db?password=PWSECRET",
		"postgres://u@127.0.0.1:1/db?password=PWSECRET",
		"postgres://u:PWSECRET@127.0.0.1:1/db?sslpassword=PWSECRET2",
		"postgres://u:PWSECRET@127.0.0.1:1/db?sslmode=bogus",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		a, err := dburl.Open(ctx, u, dburl.Config{})
		cancel()
		if err == nil {
			a.Close()
			t.Fatalf("Open(%q) succeeded", u)
		}
		if strings.Contains(err.Error(), "PWSECRET") {
			t.Errorf("Open(%q): the error shows the password: %v", u, err)
		}
		loc, err := dburl.Parse(u)
		if err == nil && strings.Contains(loc.String(), "PWSECRET") {
			t.Errorf("Location %q shows the password", loc)
		}
	}
}

// FuzzRedact: Redact takes any text, and what it returns is its own
// redaction (nothing is left to hide).
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"postgres://u:p@h/db?password=x&sslpassword=y", "u:p@h", "mysql://a@b/c?d#e", "", "://@?&=#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := dburl.Redact(s)
		if again := dburl.Redact(r); again != r {
			t.Errorf("Redact(%q) = %q, but Redact(%q) = %q", s, r, r, again)
		}
	})
}
