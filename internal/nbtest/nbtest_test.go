package nbtest

import (
	"os"
	"testing"
)

func TestStartCommitsRestart(t *testing.T) {
	s := Start(t)
	before := s.Commits()
	s.NBCtl("ls-add", "sw0")
	if got := s.Commits(); got != before+1 {
		t.Fatalf("Commits() after one ls-add = %d, want %d", got, before+1)
	}
	s.Restart()
	if got := s.NBCtl("--bare", "--columns=name", "list", "Logical_Switch"); got != "sw0" {
		t.Fatalf("after Restart, switches = %q, want sw0", got)
	}
}

// TestServeClose: a server from Serve, which has no test, answers at its
// address, counts its commits, and is gone, directory and all, once
// closed.
func TestServeClose(t *testing.T) {
	Require(t)
	s, err := Serve()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Pid() == 0 {
		t.Fatal("Pid() = 0 for a running server")
	}
	before, err := s.TryCommits()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TryNBCtl("ls-add", "sw0"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.TryCommits(); err != nil || got != before+1 {
		t.Fatalf("TryCommits() after one ls-add = %d, %v; want %d", got, err, before+1)
	}
	s.Close()
	if s.Pid() != 0 {
		t.Errorf("Pid() = %d after Close", s.Pid())
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Errorf("%s after Close: %v, want it gone", s.Dir, err)
	}
}
