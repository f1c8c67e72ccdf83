package observed

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-sync/ovn-sync/nbdb"
	"github.com/ovn-sync/ovn-sync/state"
)

// portDriftRows is portDrift on a change of one LSP row (old and cur nil
// for an insert and a delete), the rows' references named by name.
func portDriftRows(want state.State, old, cur *nbdb.LogicalSwitchPort, name func(uuid string) string) bool {
	var o, c *state.Port
	if old != nil {
		o = portFromRowNamed(old, name)
	}
	if cur != nil {
		c = portFromRowNamed(cur, name)
	}
	return portDrift(want, o, c)
}

// uuidsOnly names no row: references stay UUIDs.
func uuidsOnly(string) string { return "" }

func TestPortDrift(t *testing.T) {
	want := state.New(1)
	want.Ports.Set("a.ns", &state.Port{Name: "a.ns", Owner: "Pod/ns/a", Network: "default", Switch: "ovn-default",
		Addresses: []string{"0a:58:0a:10:00:05 10.16.0.5"}, PortSecurity: []string{"0a:58:0a:10:00:05 10.16.0.5"}, RequestedChassis: "n1"})
	ours := func(mut func(*nbdb.LogicalSwitchPort)) *nbdb.LogicalSwitchPort {
		r := &nbdb.LogicalSwitchPort{Name: "a.ns", Addresses: []string{"0a:58:0a:10:00:05 10.16.0.5"}, PortSecurity: []string{"0a:58:0a:10:00:05 10.16.0.5"},
			ExternalIDs: map[string]string{state.KeyOwner: "Pod/ns/a", state.KeyNetwork: "default", state.KeySwitch: "ovn-default"},
			Options:     map[string]string{state.OptRequestedChassis: "n1", "foreign": "x"}}
		if mut != nil {
			mut(r)
		}
		return r
	}
	foreign := &nbdb.LogicalSwitchPort{Name: "x", ExternalIDs: map[string]string{}}
	for _, tc := range []struct {
		name     string
		old, cur *nbdb.LogicalSwitchPort
		want     bool
	}{
		{"our insert as planned", nil, ours(nil), false},
		{"our update as planned", ours(func(r *nbdb.LogicalSwitchPort) { r.Options[state.OptRequestedChassis] = "n0" }), ours(nil), false},
		{"someone else's key changed", ours(nil), ours(func(r *nbdb.LogicalSwitchPort) { r.Options["foreign"] = "y" }), false},
		{"chassis edited", ours(nil), ours(func(r *nbdb.LogicalSwitchPort) { r.Options[state.OptRequestedChassis] = "n9" }), true},
		{"addresses edited", ours(nil), ours(func(r *nbdb.LogicalSwitchPort) { r.Addresses = []string{"dynamic"} }), true},
		{"owner key removed", ours(nil), ours(func(r *nbdb.LogicalSwitchPort) { delete(r.ExternalIDs, state.KeyOwner) }), true},
		{"wanted port deleted", ours(nil), nil, true},
		{"unwanted port deleted", ours(func(r *nbdb.LogicalSwitchPort) { r.Name = "gone.ns" }), nil, false},
		{"foreign port", nil, foreign, false},
		{"foreign port deleted", foreign, nil, false},
	} {
		if got := portDriftRows(want, tc.old, tc.cur, uuidsOnly); got != tc.want {
			t.Errorf("portDriftRows(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDHCPDrift: a port's reference to one of our DHCP_Options rows is
// drift only when it names another row than want's, by that row's name;
// our rows drift when edited or deleted, and rows that are not ours never.
func TestDHCPDrift(t *testing.T) {
	want := state.New(1)
	want.Ports.Set("vm.ns", (&state.Port{Name: "vm.ns", Owner: "VirtualMachine/ns/vm"}).SetRare(&state.Rare{DHCPv4: "ovn-default/ipv4"}))
	want.DHCP["ovn-default/ipv4"] = &state.DHCPOptions{Name: "ovn-default/ipv4", Owner: "ovn-sync", CIDR: "10.16.0.0/16",
		Options: map[string]string{"lease_time": "3600"}}
	names := map[string]string{"d-1": "ovn-default/ipv4"}
	name := func(uuid string) string { return names[uuid] }
	port := func(ref string) *nbdb.LogicalSwitchPort {
		return &nbdb.LogicalSwitchPort{Name: "vm.ns", ExternalIDs: map[string]string{state.KeyOwner: "VirtualMachine/ns/vm"}, Dhcpv4Options: &ref}
	}
	if portDriftRows(want, nil, port("d-1"), name) {
		t.Errorf("portDriftRows(reference to our row as wanted) = true, want false")
	}
	if !portDriftRows(want, nil, port("d-2"), name) {
		t.Errorf("portDriftRows(reference to another row) = false, want true")
	}
	row := func(mut func(*nbdb.DHCPOptions)) *nbdb.DHCPOptions {
		r := &nbdb.DHCPOptions{UUID: "d-1", Cidr: "10.16.0.0/16", Options: map[string]string{"lease_time": "3600"},
			ExternalIDs: map[string]string{state.KeyOwner: "ovn-sync", state.KeyDHCP: "ovn-default/ipv4"}}
		if mut != nil {
			mut(r)
		}
		return r
	}
	theirs := &nbdb.DHCPOptions{UUID: "d-9", Cidr: "10.99.0.0/24", ExternalIDs: map[string]string{state.KeyDHCP: "ovn-default/ipv4"}}
	for _, tc := range []struct {
		name     string
		old, cur *nbdb.DHCPOptions
		want     bool
	}{
		{"our insert as planned", nil, row(nil), false},
		{"an option edited", row(nil), row(func(r *nbdb.DHCPOptions) { r.Options = map[string]string{"lease_time": "1"} }), true},
		{"cidr edited", row(nil), row(func(r *nbdb.DHCPOptions) { r.Cidr = "10.0.0.0/8" }), true},
		{"a row of ours no pass wants", nil, row(func(r *nbdb.DHCPOptions) { r.ExternalIDs[state.KeyDHCP] = "gone/ipv4" }), true},
		{"wanted row deleted", row(nil), nil, true},
		{"someone else's row", nil, theirs, false},
		{"someone else's row deleted", theirs, nil, false},
	} {
		if got := DHCPDrift(want, tc.old, tc.cur); got != tc.want {
			t.Errorf("DHCPDrift(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestWatchDriftPreviousWant: the cache's events of one pass's
// transaction (a Logical_Switch row) reach the handler after Transact
// returned, and may come once the next pass has stored a new want. A
// switch left as the previous want has it is not drift (it is that pass's
// own write); left as neither has it, it is. A port is judged by the last
// want alone: Transact returns once the port view showed it, so a port
// left as only the previous want has it is someone else's write.
func TestWatchDriftPreviousWant(t *testing.T) {
	e, err := StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	nb := dial(t, e.Endpoint, false)
	port := func(chassis string) *state.Port {
		a := []string{"0a:58:0a:10:00:05 10.16.0.5"}
		return &state.Port{Name: "a.ns", Owner: "Pod/ns/a", Network: "default", Switch: "ovn-default",
			Addresses: a, PortSecurity: a, RequestedChassis: chassis}
	}
	wantWith := func(chassis, exclude string) *state.State {
		s := state.New(1)
		s.Ports.Set("a.ns", port(chassis))
		s.Switches["ovn-default"] = &state.Switch{Name: "ovn-default", Owner: "ovn-sync", Network: "default",
			Subnet: "10.16.0.0/16", ExcludeIPs: exclude}
		return &s
	}
	var mu sync.Mutex
	var cur, prev *state.State
	var drifts int
	nb.WatchDrift(func() (*state.State, *state.State) {
		mu.Lock()
		defer mu.Unlock()
		return cur, prev
	}, func(string) {
		mu.Lock()
		drifts++
		mu.Unlock()
	})
	// Handlers are called in the order they were added, one event at a
	// time: once this one has seen a table's nth event, WatchDrift has
	// judged it.
	seen := map[string]int{}
	nb.WatchRows(func(table string) {
		mu.Lock()
		seen[table]++
		mu.Unlock()
	})
	ctx := context.Background()
	row := &nbdb.LogicalSwitchPort{UUID: "lsp", Name: "a.ns", Addresses: port("").Addresses, PortSecurity: port("").PortSecurity,
		ExternalIDs: map[string]string{state.KeyOwner: "Pod/ns/a", state.KeyNetwork: "default", state.KeySwitch: "ovn-default"},
		Options:     map[string]string{state.OptRequestedChassis: "n1"}}
	// A port is not a root row: the switch that holds it is created with it.
	ops, err := nb.Client().Create(row, &nbdb.LogicalSwitch{UUID: "ls", Name: "ovn-default", Ports: []string{"lsp"},
		ExternalIDs: map[string]string{state.KeyOwner: "ovn-sync", state.KeyNetwork: "default"},
		OtherConfig: map[string]string{state.SwitchSubnet: "10.16.0.0/16", state.SwitchExcludeIPs: "10.16.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	cur = wantWith("n1", "10.16.0.1")
	mu.Unlock()
	if _, err := nb.Transact(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	transact := func(ops []ovsdb.Operation, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nb.Transact(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	setChassis := func(chassis string) {
		t.Helper()
		r := &nbdb.LogicalSwitchPort{Name: "a.ns", Options: map[string]string{state.OptRequestedChassis: chassis}}
		transact(nb.Client().Where(r).Update(r, &r.Options))
	}
	setExclude := func(exclude string) {
		t.Helper()
		r := &nbdb.LogicalSwitch{OtherConfig: map[string]string{state.SwitchSubnet: "10.16.0.0/16", state.SwitchExcludeIPs: exclude}}
		named := func(ls *nbdb.LogicalSwitch) bool { return ls.Name == "ovn-default" }
		transact(nb.Client().WhereCache(named).Update(r, &r.OtherConfig))
	}
	// wait returns once WatchDrift has judged the switches' and ports'
	// events so far, and checks the drift it reported.
	wait := func(what string, switches, ports, wantDrifts int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			s, p, d := seen[nbdb.LogicalSwitchTable], seen[nbdb.LogicalSwitchPortTable], drifts
			mu.Unlock()
			if s >= switches && p >= ports {
				if d != wantDrifts {
					t.Fatalf("%s: %d drift events, want %d", what, d, wantDrifts)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d switch and %d port events seen, want %d and %d", what, s, p, switches, ports)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait("our insert", 1, 1, 0)
	// The pass that writes 10.16.0.2 has stored its want (10.16.0.3 next)
	// when the cache's event of its write comes: the previous want has it.
	mu.Lock()
	cur, prev = wantWith("n1", "10.16.0.3"), wantWith("n2", "10.16.0.2")
	mu.Unlock()
	setExclude("10.16.0.2")
	wait("a switch as the previous want has it", 2, 1, 0)
	// Someone sets 10.16.0.9: neither want has it.
	setExclude("10.16.0.9")
	wait("an outside edit of a switch", 3, 1, 1)
	// A port left as the previous want has it and not as the last: the
	// view showed that pass's writes before its Transact returned.
	setChassis("n2")
	wait("a port as only the previous want has it", 3, 2, 2)
	// Without a previous want, a switch left other than want has it is
	// drift.
	mu.Lock()
	prev = nil
	mu.Unlock()
	setExclude("10.16.0.2")
	wait("a switch as an older want has it, none kept", 4, 2, 3)
}
