package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
)

// podsFile is n pods of namespace ns, p00000 the oldest, from index from
// on, as one multi-document manifest.
func podsFile(ns string, from, n int) string {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i := from; i < n; i++ {
		b.WriteString("---\n")
		b.WriteString(pod(fmt.Sprintf("p%05d", i), ns, t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), ""))
	}
	return b.String()
}

func switchPortCount(t *testing.T, s *nbtest.Server, sw string) int {
	t.Helper()
	return len(strings.Fields(s.NBCtl("--bare", "--columns=name", "find", "Logical_Switch_Port", "external_ids:ovn-sync/switch="+sw)))
}

// TestSwitchFull: one network with more pods than OVN binds on one switch.
// ovn-sync writes as many ports as OVN binds, the oldest pods first; the
// others get none and a SwitchFull Problem; no port is ever removed to
// make room; and once pods go, the waiting ones get theirs in the same
// apply.
func TestSwitchFull(t *testing.T) {
	if testing.Short() {
		t.Skip("32,770 pods")
	}
	const limit = desired.MaxSwitchPorts
	total := limit + 3
	s := nbtest.Start(t)
	cfg := configFile(t)
	out := runOneShot(t, s, cfg, "apply", manifestDir(t, map[string]string{"pods.yaml": podsFile("ns", 0, total)}), 0)
	if n := switchPortCount(t, s, "ovn-default"); n != limit {
		t.Fatalf("ovn-default holds %d ports of ours, want %d", n, limit)
	}
	for i := limit; i < total; i++ {
		name := fmt.Sprintf("p%05d", i)
		if !strings.Contains(out, "Pod ns/"+name+`: port "`+name+`.ns" is not created`) {
			t.Errorf("no SwitchFull problem for pod %s in:\n%s", name, tail(out, 20))
		}
		if _, err := s.TryNBCtl("get", "Logical_Switch_Port", name+".ns", "name"); err == nil {
			t.Errorf("pod %s past the limit has a port", name)
		}
	}
	if want := fmt.Sprintf("(%d)", limit); !strings.Contains(out, want) || !strings.Contains(out, "the default network") {
		t.Errorf("the problems do not name the network and the limit %s:\n%s", want, tail(out, 20))
	}
	keep := s.Get("Logical_Switch_Port", "p00002.ns", "_uuid")

	// The plan shows how full the switch is, in text and in JSON.
	dir := manifestDir(t, map[string]string{"pods.yaml": podsFile("ns", 0, total)})
	if out := runOneShot(t, s, cfg, "plan", dir, 0); !strings.Contains(out, fmt.Sprintf("Switch ovn-default holds %d ports of the %d", limit, limit)) {
		t.Errorf("plan does not show the full switch:\n%s", tail(out, 20))
	}
	js, _, _ := ovnSync(t, "plan", "-f", dir, "--nb", s.Addr(), "--config", cfg, "-o", "json")
	var rep struct {
		Switches map[string]int `json:"switch_ports"`
		Limit    int            `json:"switch_port_limit"`
		Problems []struct{ Reason string }
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	full := 0
	for _, p := range rep.Problems {
		if p.Reason == "SwitchFull" {
			full++
		}
	}
	if rep.Switches["ovn-default"] != limit || rep.Limit != limit || full != 3 {
		t.Errorf("plan -o json: switch_ports %v, switch_port_limit %d, %d SwitchFull problems; want %d, %d, 3",
			rep.Switches, rep.Limit, full, limit, limit)
	}

	// The two oldest pods go: their ports make room for two waiting pods,
	// the youngest still waits, and no other port moved.
	out = runOneShot(t, s, cfg, "apply", manifestDir(t, map[string]string{"pods.yaml": podsFile("ns", 2, total)}), 0)
	if n := switchPortCount(t, s, "ovn-default"); n != limit {
		t.Errorf("after two pods went, ovn-default holds %d ports of ours, want %d", n, limit)
	}
	for _, name := range []string{"p32767", "p32768"} {
		if _, err := s.TryNBCtl("get", "Logical_Switch_Port", name+".ns", "name"); err != nil {
			t.Errorf("pod %s did not get the room two pods made: %v\n%s", name, err, tail(out, 20))
		}
	}
	if !strings.Contains(out, `Pod ns/p32769: port "p32769.ns" is not created`) {
		t.Errorf("the youngest pod is not reported waiting:\n%s", tail(out, 20))
	}
	if got := s.Get("Logical_Switch_Port", "p00002.ns", "_uuid"); got != keep {
		t.Errorf("port p00002.ns was rewritten: row %s, was %s", got, keep)
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
