package doccheck

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	src := "# page\n\n" +
		"<!-- doccheck: run -->\n```sh\necho one\n```\n\n" +
		"```js\nconsole.log(1)\n```\n\n" +
		"1. a step\n\n   <!-- doccheck: skip long-running: a node -->\n   ```bash\n   courier --rest \\\n       --store\n   ```\n\n" +
		"<!-- doccheck: run node=\"--rest --store\" -->\n\n~~~console\ncurl -s 127.0.0.1:8645/health\n~~~\n" +
		"```\nplain, not a shell block\n```\n"
	got, err := Parse("docs/x.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{File: "docs/x.md", Line: 4, Kind: Run, Text: "echo one\n"},
		{File: "docs/x.md", Line: 15, Kind: Skip, Reason: "long-running: a node", Text: "courier --rest \\\n    --store\n"},
		{File: "docs/x.md", Line: 22, Kind: Run, Node: "--rest --store", Text: "curl -s 127.0.0.1:8645/health\n"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
	}
	if fl := got[1].FirstLine(); fl != "courier --rest" {
		t.Errorf("FirstLine = %q", fl)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"unmarked", "text\n\n```sh\nls\n```\n", "x.md:3: shell block without a doccheck mark"},
		{"unknown mark", "<!-- doccheck: maybe -->\n```sh\nls\n```\n", `x.md:1: unknown mark "maybe"`},
		{"skip without a category", "<!-- doccheck: skip because -->\n```sh\nls\n```\n", "x.md:1: unknown mark"},
		{"mark then text", "<!-- doccheck: run -->\nsome text\n```sh\nls\n```\n", "x.md:1: a mark not followed by a shell block"},
		{"mark on a js block", "<!-- doccheck: run -->\n```js\nx\n```\n", "x.md:1: a mark on a block that is not a shell block"},
		{"two marks", "<!-- doccheck: run -->\n<!-- doccheck: run -->\n```sh\nls\n```\n", "x.md:1: a mark not followed"},
		{"mark at the end", "<!-- doccheck: run -->\n", "x.md:1: a mark not followed"},
		{"unclosed", "<!-- doccheck: run -->\n```sh\nls\n", "x.md:2: fence never closed"},
	} {
		_, err := Parse("x.md", []byte(tc.src))
		if !errors.Is(err, ErrMark) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want ErrMark with %q", tc.name, err, tc.want)
		}
	}
}

func TestCourierFlags(t *testing.T) {
	text := "go build -o courier ./cmd/courier\n" +
		"./courier node --listen-address 127.0.0.1 --rest \\\n    --store-sync=true # --not-this\n" +
		"curl -s --fail 127.0.0.1:8645/health | grep --quiet ok\n" +
		"echo x | go run ./cmd/courier message hash --pubsub-topic /t && ls --all\n" +
		"docker run -d --name courier -v v:/data localhost/courier --relay=true --staticnode=/ip4/x\n"
	got := CourierFlags(text)
	want := []string{"listen-address", "rest", "store-sync", "pubsub-topic", "relay", "staticnode"}
	if !slices.Equal(got, want) {
		t.Errorf("CourierFlags = %q, want %q", got, want)
	}
}

func TestChecklist(t *testing.T) {
	got := Checklist([]Block{
		{File: "README.md", Kind: Skip, Reason: "set-up: CI runs it", Text: "\ngo test -race ./...\n"},
		{File: "docs/a.md", Kind: Run, Text: "ls\n"},
		{File: "docs/a.md", Kind: Skip, Reason: "slow: minutes", Text: "a | b\n"},
	})
	want := "| page | block (first line) | why it is not run |\n|---|---|---|\n" +
		"| [README.md](../README.md) | `go test -race ./...` | set-up: CI runs it |\n" +
		"| [docs/a.md](a.md) | `a \\| b` | slow: minutes |\n"
	if got != want {
		t.Errorf("Checklist:\n%s\nwant\n%s", got, want)
	}
}
