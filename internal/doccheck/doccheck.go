// Package doccheck reads the shell blocks of the project's Markdown pages
// and the mark each carries, so that a test can run the blocks marked
// runnable and list the others (docs/commands.md says how pages mark them).
//
// A shell block is a fenced code block (``` or ~~~, at any indentation)
// whose info string starts with sh, bash, shell or console. The last
// non-blank line before its opening fence must be one of
//
//	<!-- doccheck: run -->
//	<!-- doccheck: run node="FLAGS" -->
//	<!-- doccheck: skip CATEGORY: REASON -->
//
// run: the block runs as written; with node=, after a node started with
// FLAGS (and ports of the test's). skip: the block is not run, for the
// reason given. An unmarked shell block, an unknown mark, a mark that is
// not followed by a shell block and an unclosed fence are errors.
package doccheck

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrMark is wrapped by every error Parse returns.
var ErrMark = errors.New("doccheck")

// Kind says whether a block is run.
type Kind int

const (
	Run Kind = iota + 1
	Skip
)

// Block is one shell block of a page.
type Block struct {
	File   string // the page's path, as given to Parse
	Line   int    // line of the opening fence, 1-based
	Kind   Kind
	Node   string // Run: the flags of the node to start first ("" for none)
	Reason string // Skip: "CATEGORY: REASON" as the mark gives it
	Text   string // the block's lines without the fences and the fence's indentation, each ending in "\n"
}

// FirstLine is the block's first non-blank line, trimmed and without a
// line continuation: how the checklist names a block.
func (b Block) FirstLine() string {
	for _, l := range strings.Split(b.Text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return strings.TrimSpace(strings.TrimSuffix(l, "\\"))
		}
	}
	return ""
}

var (
	markRE    = regexp.MustCompile(`^<!--\s*doccheck:\s*(.*?)\s*-->$`)
	runNodeRE = regexp.MustCompile(`^run node="([^"]*)"$`)
	skipRE    = regexp.MustCompile(`^skip ([a-z-]+: \S.*)$`)
	fenceRE   = regexp.MustCompile("^(```+|~~~+)\\s*([^`\\s]*)")
	shellInfo = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}
)

// Parse returns the shell blocks of one Markdown page, src, in order. It
// keeps nothing of src. Errors wrap ErrMark and name file and line.
func Parse(file string, src []byte) ([]Block, error) {
	lines := strings.Split(string(src), "\n")
	var blocks []Block
	var pending *Block // the last mark seen, until a fence or text takes it
	pendingLine := 0
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if m := markRE.FindStringSubmatch(trimmed); m != nil {
			b, err := parseMark(m[1])
			if err != nil {
				return nil, fmt.Errorf("%w: %s:%d: %v", ErrMark, file, i+1, err)
			}
			if pending != nil {
				return nil, fmt.Errorf("%w: %s:%d: a mark not followed by a shell block", ErrMark, file, pendingLine)
			}
			pending, pendingLine = &b, i+1
			continue
		}
		f := fenceRE.FindStringSubmatch(trimmed)
		if f == nil {
			if trimmed != "" && pending != nil {
				return nil, fmt.Errorf("%w: %s:%d: a mark not followed by a shell block", ErrMark, file, pendingLine)
			}
			continue
		}
		indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " \t"))
		end := closingFence(lines, i+1, f[1])
		if end < 0 {
			return nil, fmt.Errorf("%w: %s:%d: fence never closed", ErrMark, file, i+1)
		}
		if shellInfo[f[2]] {
			if pending == nil {
				return nil, fmt.Errorf("%w: %s:%d: shell block without a doccheck mark (docs/commands.md)", ErrMark, file, i+1)
			}
			b := *pending
			b.File, b.Line = file, i+1
			var text strings.Builder
			for _, l := range lines[i+1 : end] {
				text.WriteString(strings.TrimPrefix(l, lines[i][:indent]))
				text.WriteByte('\n')
			}
			b.Text = text.String()
			blocks = append(blocks, b)
		} else if pending != nil {
			return nil, fmt.Errorf("%w: %s:%d: a mark on a block that is not a shell block", ErrMark, file, pendingLine)
		}
		pending = nil
		i = end
	}
	if pending != nil {
		return nil, fmt.Errorf("%w: %s:%d: a mark not followed by a shell block", ErrMark, file, pendingLine)
	}
	return blocks, nil
}

// parseMark reads what follows "doccheck:" in a mark.
func parseMark(s string) (Block, error) {
	switch {
	case s == "run":
		return Block{Kind: Run}, nil
	case runNodeRE.MatchString(s):
		return Block{Kind: Run, Node: runNodeRE.FindStringSubmatch(s)[1]}, nil
	case skipRE.MatchString(s):
		return Block{Kind: Skip, Reason: skipRE.FindStringSubmatch(s)[1]}, nil
	}
	return Block{}, fmt.Errorf("unknown mark %q: want run, run node=\"FLAGS\" or skip CATEGORY: REASON", s)
}

// closingFence returns the index of the line that closes a block opened
// with fence, searching from line from, or -1.
func closingFence(lines []string, from int, fence string) int {
	for j := from; j < len(lines); j++ {
		t := strings.TrimSpace(lines[j])
		if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
			return j
		}
	}
	return -1
}

// Checklist is the Markdown table of the blocks marked skip, in the order
// given: page, first line, reason. docs/commands.md holds it between
// ChecklistBegin and ChecklistEnd.
func Checklist(blocks []Block) string {
	var b strings.Builder
	b.WriteString("| page | block (first line) | why it is not run |\n|---|---|---|\n")
	for _, bl := range blocks {
		if bl.Kind == Skip {
			fmt.Fprintf(&b, "| [%s](%s) | `%s` | %s |\n", bl.File, pageLink(bl.File), strings.ReplaceAll(bl.FirstLine(), "|", `\|`), bl.Reason)
		}
	}
	return b.String()
}

// The lines around the generated checklist in docs/commands.md.
const (
	ChecklistBegin = "<!-- skip checklist begin -->"
	ChecklistEnd   = "<!-- skip checklist end -->"
)

// pageLink is file's path relative to docs/, where the checklist is.
func pageLink(file string) string {
	if rest, ok := strings.CutPrefix(file, "docs/"); ok {
		return rest
	}
	return "../" + file
}

var (
	courierCmdRE = regexp.MustCompile(`(^|[\s(])(\./courier|courier|wakunode2|localhost/courier|go run \./cmd/courier)(\s|$)`)
	flagRE       = regexp.MustCompile(`(?:^|\s)--([a-z][a-z0-9-]*)`)
	listOpRE     = regexp.MustCompile(`\|\||&&|[|;&]`)
)

// CourierFlags returns the names (without dashes) of the flags given to
// courier in a shell block: continued lines are joined, and on each line
// that runs courier (courier, ./courier, wakunode2, go run ./cmd/courier, an
// image localhost/courier) the --flags after it, up to a pipe, a list
// operator or a comment.
func CourierFlags(text string) []string {
	var names []string
	for _, line := range strings.Split(strings.ReplaceAll(text, "\\\n", " "), "\n") {
		if i := strings.Index(line, "#"); i >= 0 && (i == 0 || line[i-1] == ' ') {
			line = line[:i]
		}
		for _, cmd := range listOpRE.Split(line, -1) {
			loc := courierCmdRE.FindStringIndex(cmd)
			if loc == nil {
				continue
			}
			for _, m := range flagRE.FindAllStringSubmatch(cmd[loc[1]-1:], -1) {
				names = append(names, m[1])
			}
		}
	}
	return names
}
