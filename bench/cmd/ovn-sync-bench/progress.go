package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress draws a one-line progress bar on a terminal. On anything else
// (a pipe, a file, a test) it draws nothing: logs stay free of carriage
// returns. It is not safe for concurrent use.
type progress struct {
	w     io.Writer // nil when disabled
	label string
	total int
	start time.Time
	drawn time.Time
}

// isTerminal reports whether f is a character device, as a terminal is.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// newProgress returns a bar for total units of work, drawn on stderr if
// stderr is a terminal.
func newProgress(label string, total int) *progress {
	p := &progress{label: label, total: total, start: time.Now()}
	if isTerminal(os.Stderr) {
		p.w = os.Stderr
	}
	return p
}

// set reports that done units are complete, redrawing at most ten times a second.
func (p *progress) set(done int) {
	if p.w == nil {
		return
	}
	now := time.Now()
	if now.Sub(p.drawn) < 100*time.Millisecond && done < p.total {
		return
	}
	p.drawn = now
	p.draw(done, now.Sub(p.start))
}

func (p *progress) draw(done int, elapsed time.Duration) {
	const width = 30
	frac := 0.0
	if p.total > 0 {
		frac = min(float64(done)/float64(p.total), 1)
	}
	bar := strings.Repeat("#", int(frac*width)) + strings.Repeat(".", width-int(frac*width))
	eta := "?"
	if done > 0 {
		eta = (time.Duration(float64(elapsed) / float64(done) * float64(p.total-done))).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r\033[K%s [%s] %3.0f%% %d/%d %s eta %s", p.label, bar, 100*frac, done, p.total,
		elapsed.Round(100*time.Millisecond), eta)
}

// finish clears the bar's line.
func (p *progress) finish() {
	if p.w != nil {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
