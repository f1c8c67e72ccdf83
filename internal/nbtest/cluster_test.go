package nbtest

import (
	"testing"
	"time"
)

func TestClusterKillLeaderRestart(t *testing.T) {
	c := StartCluster(t)
	c.NBCtl("ls-add", "sw0")
	start := time.Now()
	old := c.KillLeader()
	if c.Running(old) {
		t.Fatalf("KillLeader() = %d, but it still runs", old)
	}
	// A write needs the new leader.
	c.NBCtl("ls-add", "sw1")
	if l := c.Leader(); l == old {
		t.Fatalf("Leader() after KillLeader = %d, the killed member", l)
	}
	t.Logf("new leader committed a write %s after the kill", time.Since(start).Round(time.Millisecond))
	c.Restart(old)
	// The restarted member catches up: its own copy, read without the
	// leader, has both switches.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := c.Members[old].TryNBCtl("--no-leader-only", "--bare", "--columns=name", "find", "Logical_Switch", "name=sw1")
		if err == nil && got == "sw1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted member %d lacks sw1: %q, %v", old, got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := c.NBCtl("--bare", "--columns=name", "find", "Logical_Switch", "name=sw0"); got != "sw0" {
		t.Errorf("after a leader kill, sw0 = %q, want it kept", got)
	}
}
