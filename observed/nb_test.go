package observed

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/state"
)

func TestParseEndpoints(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "unix:/var/run/ovn/ovnnb_db.sock", want: []string{"unix:/var/run/ovn/ovnnb_db.sock"}},
		{in: "tcp:10.0.0.1:6641, tcp:10.0.0.2:6641,", want: []string{"tcp:10.0.0.1:6641", "tcp:10.0.0.2:6641"}},
		{in: "ssl:nb:6641", want: []string{"ssl:nb:6641"}},
		{in: "", wantErr: true},
		{in: "http://x", wantErr: true},
		{in: "unix:", wantErr: true},
	} {
		got, err := ParseEndpoints(tc.in)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("ParseEndpoints(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func dial(t *testing.T, endpoint string, leaderOnly bool) *NB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nb, err := Dial(ctx, Options{Endpoints: []string{endpoint}, LeaderOnly: leaderOnly})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Close)
	return nb
}

// waitFor polls State until cond holds, since the cache follows the server asynchronously.
func waitFor(t *testing.T, nb *NB, what string, cond func(state.State) bool) state.State {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := nb.State()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; state has %d switches, %d ports", what, len(s.Switches), s.Ports.Len())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStateFromRealNB writes rows with ovn-nbctl into a real ovsdb-server and
// checks that the snapshot carries exactly our keys and the columns IPAM needs.
func TestStateFromRealNB(t *testing.T) {
	srv := nbtest.Start(t)
	srv.NBCtl("ls-add", "ovn-default", "--", "set", "Logical_Switch", "ovn-default",
		"other_config:subnet=10.16.0.0/16", "external_ids:ovn-sync/owner=ovn-sync", "external_ids:ovn-sync/network=default")
	srv.NBCtl("lsp-add", "ovn-default", "a.default", "--", "lsp-set-addresses", "a.default", "0a:58:0a:10:00:02 10.16.0.2",
		"--", "lsp-set-port-security", "a.default", "0a:58:0a:10:00:02 10.16.0.2",
		"--", "set", "Logical_Switch_Port", "a.default",
		"external_ids:ovn-sync/owner=Pod/default/a", "external_ids:ovn-sync/network=default", "external_ids:ovn-sync/switch=ovn-default",
		"external_ids:someone=else", "options:requested-chassis=node-a", "options:foo=bar")
	// ovn-northd fills dynamic_addresses; there is none here, so set it as it would.
	srv.NBCtl("lsp-add", "ovn-default", "foreign", "--", "lsp-set-addresses", "foreign", "dynamic",
		"--", "set", "Logical_Switch_Port", "foreign", `dynamic_addresses="0a:00:00:00:00:09 10.16.0.9"`)
	// A port as kube-ovn writes it: its vendor and switch are read, for adoption.
	srv.NBCtl("lsp-add", "ovn-default", "k.default", "--", "lsp-set-addresses", "k.default", "00:00:00:4f:7a:01 10.16.0.5",
		"--", "set", "Logical_Switch_Port", "k.default",
		"external_ids:vendor=kube-ovn", "external_ids:ls=ovn-default", "external_ids:pod=default/k")

	nb := dial(t, srv.Addr(), true)
	s := waitFor(t, nb, "three ports", func(s state.State) bool { return s.Ports.Len() == 3 })
	if k := s.Ports.Get("k.default"); k == nil || k.Owned() || k.Vendor() != "kube-ovn" || k.VendorSwitch() != "ovn-default" {
		t.Fatalf("State().Ports[k.default] = %+v, want kube-ovn's port on ovn-default, not ours", k)
	}
	if a := s.Ports.Get("a.default"); a == nil || a.Vendor() != "" || a.VendorSwitch() != "" {
		t.Fatalf("State().Ports[a.default] = %+v, want no vendor", a)
	}

	if s.Index.Len() != s.Ports.Len() {
		t.Fatalf("State().Index has %d entries for %d ports", s.Index.Len(), s.Ports.Len())
	}
	for _, e := range s.Index.Entries() {
		if s.Ports.Get(e.Port.Name) != e.Port || e != state.EntryOf(e.Port) {
			t.Errorf("State().Index entry %+v does not describe Ports", e)
		}
	}
	a := s.Ports.Get("a.default")
	want := &state.Port{Name: "a.default", Switch: "ovn-default",
		Addresses: []string{"0a:58:0a:10:00:02 10.16.0.2"}, PortSecurity: []string{"0a:58:0a:10:00:02 10.16.0.2"},
		Owner: "Pod/default/a", Network: "default", RequestedChassis: "node-a"}
	if a == nil || !a.Equal(want) || a.UUID == "" {
		t.Fatalf("State().Ports[a.default] = %+v, want %+v with a UUID", a, want)
	}
	f := s.Ports.Get("foreign")
	if f == nil || f.Owned() || f.DynamicAddresses() != "0a:00:00:00:00:09 10.16.0.9" {
		t.Fatalf("State().Ports[foreign] = %+v, want a foreign port with OVN's dynamic_addresses", f)
	}
	sw := s.Switches["ovn-default"]
	if sw == nil || !sw.Owned() || sw.Subnet != "10.16.0.0/16" || sw.Network != "default" {
		t.Fatalf("State().Switches[ovn-default] = %+v", sw)
	}

	// An unchanged row is not converted again; a changed one is.
	srv.NBCtl("set", "Logical_Switch_Port", "foreign", "external_ids:x=y")
	s2 := waitFor(t, nb, "foreign port change", func(s state.State) bool { return s.Ports.Get("foreign") != f })
	if s2.Ports.Get("a.default") != a {
		t.Errorf("State() converted an unchanged row again")
	}
	// With no change in between, State hands out the same snapshot, and
	// StateVersion the same version with it.
	s3, v3 := nb.StateVersion()
	if s3.Ports != s2.Ports {
		t.Errorf("State() rebuilt its snapshot with nothing changed")
	}
	if _, v := nb.StateVersion(); v != v3 {
		t.Errorf("StateVersion() = %d, then %d with nothing changed", v3, v)
	}
	srv.NBCtl("lsp-del", "foreign")
	waitFor(t, nb, "foreign port deleted", func(s state.State) bool { return s.Ports.Get("foreign") == nil && s.Index.Len() == 2 })
	if _, v := nb.StateVersion(); v == v3 {
		t.Errorf("StateVersion() = %d before and after a port was deleted", v)
	}
}

func TestEmbedded(t *testing.T) {
	e, err := StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	nb := dial(t, e.Endpoint, false)
	if s := nb.State(); s.Ports.Len() != 0 || len(s.Switches) != 0 {
		t.Fatalf("embedded NB not empty: %+v", s)
	}
}
