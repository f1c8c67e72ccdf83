package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWriteKeepsText: a full run rewrites its own sections of RESULTS.md
// and keeps every other line: the text written around them by hand, and
// the sections of (g) and (h) when the run did not measure them.
func TestWriteKeepsText(t *testing.T) {
	dir := t.TempDir()
	opts := options{results: filepath.Join(dir, "RESULTS.md")}
	const (
		title = "# ovn-sync benchmarks\n\nWhat the figures show, written by hand.\n\n"
		after = "\nMore prose after the generated sections.\n"
	)
	oldH := oneShotMarks.begin + "\n## (h) an older one-shot run\n" + oneShotMarks.end + "\n"
	old := title + fullMarks.begin + "\nold figures\n" + fullMarks.end + "\n\n" + oldH + after
	if err := os.WriteFile(opts.results, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := report{Command: "go run ./bench/cmd/ovn-sync-bench -oneshot 0", Date: time.Now(), Results: []sizeResult{
		{Size: 200, Ports: 200, Owners: 180, Switches: 2,
			Cold:      coldResult{pass: pass{Wall: 30 * time.Millisecond}},
			Noop:      noopResult{Passes: []pass{{Wall: time.Millisecond}, {Wall: time.Millisecond}}},
			PerObject: perObjectResult{Estimate: time.Second}},
	}}
	if err := rep.write(opts); err != nil {
		t.Fatalf("write: %v", err)
	}
	b, err := os.ReadFile(opts.results)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{title, oldH, after, "| (a) ovn-sync cold start, wall |", rep.Command} {
		if !strings.Contains(got, want) {
			t.Errorf("write over a file with text outside its sections: result lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "old figures") {
		t.Errorf("write: the old (a)-(f) section is still there:\n%s", got)
	}
	if n := strings.Count(got, fullMarks.begin); n != 1 {
		t.Errorf("write: %d (a)-(f) sections, want 1:\n%s", n, got)
	}
	if err := rep.write(opts); err != nil {
		t.Fatalf("write again: %v", err)
	}
	if b, _ := os.ReadFile(opts.results); string(b) != got {
		t.Errorf("write again over its own result:\n%s\nwant it unchanged:\n%s", b, got)
	}

	// Without a file, the run writes one of its own, titled.
	opts.results = filepath.Join(dir, "NEW.md")
	if err := rep.write(opts); err != nil {
		t.Fatalf("write to a new file: %v", err)
	}
	b, _ = os.ReadFile(opts.results)
	if !strings.HasPrefix(string(b), "# ") || !strings.Contains(string(b), fullMarks.begin) {
		t.Errorf("write to a new file:\n%s", b)
	}
}
