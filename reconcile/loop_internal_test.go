package reconcile

import (
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/ovn-sync/ovn-sync/state"
)

func TestTriggerKind(t *testing.T) {
	for tr, want := range map[trigger]string{
		trigStartup: "full", trigKube: "change", trigDrift: "change", trigKube | trigResync: "full", trigReconnect: "full",
	} {
		if got := tr.kind(); got != want {
			t.Errorf("(%s).kind() = %s, want %s", tr, got, want)
		}
	}
	if got := retryDelay(1, time.Minute); got != 200*time.Millisecond {
		t.Errorf("retryDelay(1) = %s", got)
	}
	if got := retryDelay(20, time.Minute); got != 30*time.Second {
		t.Errorf("retryDelay(20) = %s", got)
	}
	if got := retryDelay(20, 5*time.Second); got != 5*time.Second {
		t.Errorf("retryDelay(20, resync 5s) = %s", got)
	}
}

// TestSetWantKeepsNoPorts: the loop keeps the last want and, of the one
// before, the switches and DHCP_Options rows that the cache's late events
// are judged against; a port only the previous want held (after a full
// pass, every port of a port map and index of its own) is not kept alive.
func TestSetWantKeepsNoPorts(t *testing.T) {
	var l Loop
	// The first want and its port are reachable from nothing but l.
	gone := func() weak.Pointer[state.Port] {
		first := state.New(1)
		p := &state.Port{Name: "a.ns", Owner: "Pod/ns/a"}
		first.Ports.Set(p.Name, p)
		first.Switches["ovn-default"] = &state.Switch{Name: "ovn-default", Owner: "ovn-sync"}
		first.DHCP["ovn-default/ipv4"] = &state.DHCPOptions{Name: "ovn-default/ipv4"}
		l.setWant(&first)
		return weak.Make(p)
	}()
	second := state.New(0)
	l.setWant(&second)
	if l.want != &second {
		t.Fatalf("want is not the last one set")
	}
	if prev := l.prevWant; prev == nil || prev.Switches["ovn-default"] == nil || prev.DHCP["ovn-default/ipv4"] == nil {
		t.Fatalf("the previous want's switches and DHCP_Options rows are not kept: %+v", prev)
	}
	for range 3 {
		runtime.GC()
	}
	if gone.Value() != nil {
		t.Errorf("a port only the previous want held is still alive")
	}
	l.setWant(nil)
	if l.want != nil || l.prevWant != nil {
		t.Errorf("setWant(nil) kept %v, %v", l.want, l.prevWant)
	}
}
