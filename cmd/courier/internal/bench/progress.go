package bench

import (
	"bytes"
	"io"
	"time"
)

// ProgressLineInterval is how often, at most, a progress bar is written as
// a plain line when Config.Progress is not a terminal.
const ProgressLineInterval = 10 * time.Second

// lineProgress turns the progress bar's in-place redraws ("\r" and the
// bar, one Write each) into plain lines for a Progress that is not a
// terminal: the first redraw of a bar, then one at most every interval, and
// the bar's last state when it ends (a redraw that ends its line, or the
// lone "\n" that ends an unfinished bar). Other writes pass through. So a
// run piped to a file gets a few readable lines, not thousands of redraws
// on one line.
type lineProgress struct {
	w        io.Writer
	interval time.Duration
	now      func() time.Time

	last    time.Time // when a line was last written; zero: none for this bar
	pending []byte    // the last redraw not written, without its "\r"
}

func (l *lineProgress) Write(p []byte) (int, error) {
	frame, redraw := bytes.CutPrefix(p, []byte{'\r'})
	switch {
	case redraw && bytes.HasSuffix(frame, []byte{'\n'}):
		// The bar's final state, its line ended.
		l.last, l.pending = time.Time{}, l.pending[:0]
		return len(p), l.write(frame)
	case redraw:
		if t := l.now(); l.last.IsZero() || t.Sub(l.last) >= l.interval {
			l.last, l.pending = t, l.pending[:0]
			return len(p), l.write(append(frame[:len(frame):len(frame)], '\n'))
		}
		l.pending = append(l.pending[:0], frame...)
		return len(p), nil
	case len(p) == 1 && p[0] == '\n' && !l.last.IsZero():
		// An unfinished bar ends: its last state, if not written yet.
		out := append(l.pending, '\n')
		l.last, l.pending = time.Time{}, l.pending[:0]
		if len(out) == 1 {
			return len(p), nil
		}
		return len(p), l.write(out)
	}
	return l.w.Write(p)
}

func (l *lineProgress) write(b []byte) error {
	_, err := l.w.Write(b)
	return err
}
