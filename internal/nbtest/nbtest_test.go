package nbtest

import "testing"

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
