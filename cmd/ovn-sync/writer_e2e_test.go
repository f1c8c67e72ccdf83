package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/state"
)

// TestRunConcurrentWriter runs run mode's loop (fake Kubernetes clients, a
// real ovsdb-server) while another client hammers the NB with ovn-nbctl:
// it deletes our ports, rewrites their addresses, port_security, options
// and ovn-sync external_ids (the owner's value included), adds keys of its
// own to our rows, and adds ports of its own, without ovn-sync/owner, with
// addresses inside our subnet. Pods come and go meanwhile. Once the writer
// stops, the NB must converge (a pass over it plans nothing) with every
// pod's port repaired; ports the writer left alone must have kept their
// row and addresses; rows that are not ours must be exactly as the writer
// left them, and keys of its own on our rows kept; and no port of ours may
// hold an address a foreign port holds, in particular pods created after a
// foreign port took the lowest free address.
func TestRunConcurrentWriter(t *testing.T) {
	s := nbtest.Start(t)
	tr := looptest.Start(t, looptest.Options{NBAddr: s.Addr()})
	const stable, tampered = 5, 5 // p0..p4 are tampered with, p5..p9 are not
	tr.Pods(t, 0, stable+tampered)
	tr.WaitPorts(t, "a port per pod", stable+tampered)

	// What the writer never touches but may decorate: their rows, kept.
	orig := map[string]string{}
	for i := stable; i < stable+tampered; i++ {
		name := fmt.Sprintf("p%d.ns", i)
		orig[name] = s.NBCtl("--bare", "--columns=_uuid,addresses,port_security", "list", "Logical_Switch_Port", name)
		s.NBCtl("set", "Logical_Switch_Port", name, "options:foo=bar", "external_ids:other-tool=x")
	}

	// Foreign rows, as their writer left them; byte-compared at the end.
	foreign := map[string]string{}
	addForeign := func(sw, name, addrs string) {
		t.Helper()
		s.NBCtl("--may-exist", "ls-add", sw)
		s.NBCtl("lsp-add", sw, name, "--", "lsp-set-addresses", name, addrs,
			"--", "set", "Logical_Switch_Port", name, "external_ids:other-tool=x", "options:foo=bar")
		foreign[name] = foreignRow(t, s, name)
	}
	addForeign("ovn-default", "foreign-router", "router")
	addForeign("ovn-default", "foreign-high", "0a:00:00:00:01:01 10.16.200.1")
	addForeign("other-tool-ls", "foreign-elsewhere", "0a:00:00:00:01:02 10.16.200.2")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nextPod := stable + tampered
	for round := range 3 {
		// The writer hammers while pods are created and deleted.
		var wg sync.WaitGroup
		var edits int
		hctx, stop := context.WithTimeout(ctx, 1500*time.Millisecond)
		wg.Add(1)
		go func() {
			defer wg.Done()
			edits = hammer(hctx, s, round, tampered, stable)
		}()
		for range 3 {
			tr.Pods(t, nextPod, nextPod+1)
			nextPod++
			time.Sleep(200 * time.Millisecond)
		}
		victim := fmt.Sprintf("p%d", nextPod-2)
		if err := tr.Kube.CoreV1().Pods("ns").Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		stop()
		t.Logf("round %d: %d edits by the other writer", round, edits)
		caughtUp(t, s, tr, fmt.Sprintf("hammer-done-%d", round))
		tr.WaitConverged(t)

		// A foreign port takes the lowest free address; pods created once
		// ovn-sync has seen it must not get that address.
		ip := lowestFree(tr.NB.State())
		name := fmt.Sprintf("foreign-low-%d", round)
		addForeign("ovn-default", name, "0a:00:00:00:02:0"+fmt.Sprint(round)+" "+ip.String())
		looptest.WaitFor(t, 30*time.Second, "the foreign port in ovn-sync's cache", func() error {
			if tr.NB.State().Ports.Get(name) == nil {
				return fmt.Errorf("not yet")
			}
			return nil
		})
		tr.Pods(t, nextPod, nextPod+2)
		nextPod += 2
		tr.WaitConverged(t)
		for i := nextPod - 2; i < nextPod; i++ {
			p := tr.NB.State().Ports.Get(fmt.Sprintf("p%d.ns", i))
			if p == nil || slices.ContainsFunc(p.Addresses, func(a string) bool { return slices.Contains(strings.Fields(a), ip.String()) }) {
				t.Errorf("round %d: new pod p%d has port %+v: %s is held by the foreign port %s", round, i, p, ip, name)
			}
		}
	}

	if n := tr.Metric("ovn_sync_drift_repairs_total"); n == 0 {
		t.Errorf("no drift repairs counted: the writer's edits were not seen")
	}
	have := tr.NB.State()
	pods, err := tr.Kube.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		name := pod.Name + ".ns"
		p := have.Ports.Get(name)
		switch {
		case p == nil:
			t.Errorf("pod %s has no port", pod.Name)
		case p.Owner != "Pod/ns/"+pod.Name || p.Network != state.DefaultNetwork || p.Switch != "ovn-default" ||
			p.RequestedChassis != "n1" || p.ActivationStrategy() != "" || len(p.Addresses) != 1 || !slices.Equal(p.Addresses, p.PortSecurity):
			t.Errorf("pod %s: port not repaired: %+v", pod.Name, p)
		}
		if lsw := s.NBCtl("lsp-get-ls", name); !strings.Contains(lsw, "(ovn-default)") {
			t.Errorf("port %s is on %s, want ovn-default", name, lsw)
		}
	}
	if n, want := have.OwnedPorts(), len(pods.Items); n != want {
		t.Errorf("%d ports of ours, want one per pod (%d)", n, want)
	}
	for name, row := range orig {
		if got := s.NBCtl("--bare", "--columns=_uuid,addresses,port_security", "list", "Logical_Switch_Port", name); got != row {
			t.Errorf("port %s, which the writer left alone, changed:\nbefore %s\nafter  %s", name, row, got)
		}
		if v := s.Get("Logical_Switch_Port", name, "options:foo"); v != "bar" {
			t.Errorf("port %s lost the writer's options:foo (%q)", name, v)
		}
		if v := s.Get("Logical_Switch_Port", name, "external_ids:other-tool"); v != "x" {
			t.Errorf("port %s lost the writer's external_ids:other-tool (%q)", name, v)
		}
	}
	for name, row := range foreign {
		if got := foreignRow(t, s, name); got != row {
			t.Errorf("foreign port %s changed:\nbefore %s\nafter  %s", name, row, got)
		}
	}
	// No address is held twice, by ours and theirs alike.
	holders := map[string]string{}
	for _, name := range slices.Sorted(have.Ports.Names()) {
		for _, a := range have.Ports.Get(name).Addresses {
			for _, w := range strings.Fields(a) {
				if _, err := netip.ParseAddr(w); err != nil {
					continue
				}
				if other, ok := holders[w]; ok {
					t.Errorf("%s is held by both %s and %s", w, other, name)
				}
				holders[w] = name
			}
		}
	}
}

// hammer edits the NB as another tool would until ctx is done: on our
// ports p0..p<tampered-1> it deletes rows and rewrites our columns and
// keys; on p<stable>... it adds keys of its own; and it adds foreign ports
// high in our subnet. Errors (a row deleted meanwhile) are ignored. It
// returns how many edits it made.
func hammer(ctx context.Context, s *nbtest.Server, round, tampered, stable int) int {
	r := rand.New(rand.NewPCG(uint64(round), 42))
	i := 0
	for ; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("p%d.ns", r.IntN(tampered))
		var args []string
		switch r.IntN(11) {
		case 0:
			args = []string{"lsp-del", name}
		case 1:
			args = []string{"lsp-set-addresses", name, "dynamic"}
		case 2:
			args = []string{"lsp-set-addresses", name, "0a:00:00:00:00:01 192.0.2.1"}
		case 3:
			args = []string{"clear", "Logical_Switch_Port", name, "addresses"}
		case 4:
			args = []string{"lsp-set-port-security", name, "00:00:00:00:00:66 10.16.0.66"}
		case 5:
			args = []string{"set", "Logical_Switch_Port", name, "options:requested-chassis=evil", "options:activation-strategy=rarp"}
		case 6:
			args = []string{"set", "Logical_Switch_Port", name, "external_ids:ovn-sync/owner=Pod/ns/someone-else"}
		case 7:
			args = []string{"set", "Logical_Switch_Port", name, "external_ids:ovn-sync/network=ns/bogus"}
		case 8:
			args = []string{"set", "Logical_Switch_Port", name, "external_ids:ovn-sync/switch=elsewhere"}
		case 9:
			other := fmt.Sprintf("p%d.ns", stable+r.IntN(tampered))
			args = []string{"set", "Logical_Switch_Port", other, "options:foo=bar", "external_ids:other-tool=x"}
		case 10:
			f := fmt.Sprintf("foreign-hammer-%d-%d", round, i)
			args = []string{"lsp-add", "ovn-default", f, "--", "lsp-set-addresses", f,
				fmt.Sprintf("0a:00:00:01:%02x:%02x 10.16.%d.%d", round, i%256, 201+round, 1+i%250)}
		}
		_, _ = s.TryNBCtl(args...)
	}
	return i
}

// foreignRow is a port row as ovn-nbctl lists it, but for the UUID and
// every column that names other rows.
func foreignRow(t *testing.T, s *nbtest.Server, name string) string {
	t.Helper()
	return s.NBCtl("--columns=_uuid,name,type,addresses,port_security,dynamic_addresses,options,external_ids,enabled,tag",
		"list", "Logical_Switch_Port", name)
}

// caughtUp waits until ovn-sync's NB cache holds every transaction the
// server committed before the call. ovn-nbctl returns once the server has
// committed, but the monitor update to ovn-sync's client may still be on
// its way: the cache could show a row as it was before the writer's last
// edit, and a check of it pass. A switch named name, added now, comes
// after them on the client's connection, so once the cache has it, it
// has them.
func caughtUp(t *testing.T, s *nbtest.Server, tr *looptest.Runner, name string) {
	t.Helper()
	s.NBCtl("ls-add", name)
	looptest.WaitFor(t, 30*time.Second, "the NB cache caught up with the server", func() error {
		if tr.NB.State().Switches[name] == nil {
			return fmt.Errorf("switch %s not in the cache yet", name)
		}
		return nil
	})
}

// lowestFree returns the lowest IPv4 address of the test runner's default
// network (10.16.0.0/12, 10.16.0.1 excluded) that no port holds.
func lowestFree(s state.State) netip.Addr {
	held := map[netip.Addr]bool{}
	for _, p := range s.Ports.All() {
		for _, a := range append(slices.Clone(p.Addresses), p.DynamicAddresses()) {
			for _, w := range strings.Fields(a) {
				if ip, err := netip.ParseAddr(w); err == nil {
					held[ip] = true
				}
			}
		}
	}
	ip := netip.MustParseAddr("10.16.0.2")
	for held[ip] {
		ip = ip.Next()
	}
	return ip
}
