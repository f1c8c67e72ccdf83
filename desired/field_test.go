package desired

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ovn-sync/ovn-sync/state"
)

// TestFieldManifests builds the upstream-shaped objects under
// testdata/field — KubeVirt, Multus, ovn-kubernetes and kube-ovn manifests
// as their projects publish them, each file naming its source — alone and
// all together, over an empty NB and again over the applied result, and
// checks what must hold for any input: no panic, no address held twice,
// addresses equal to port_security, every IP within its switch's subnets,
// every Problem naming an object and a field, and a second pass that
// changes nothing; and every VM, stopped, keeps its ports' addresses.
func TestFieldManifests(t *testing.T) {
	files, err := filepath.Glob("testdata/field/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata/field: %v (%d files)", err, len(files))
	}
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	var all Inputs
	for _, f := range files {
		in := readField(t, f)
		t.Run(filepath.Base(f), func(t *testing.T) { checkField(t, in, cfg) })
		appendInputs(&all, in)
	}
	t.Run("all", func(t *testing.T) { checkField(t, all, cfg) })
}

func readField(t *testing.T, path string) Inputs {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var in Inputs
	for i, doc := range splitDocs(string(b)) {
		if onlyComments(doc) {
			continue // a file's header
		}
		if err := decodeObjects(doc, &in); err != nil {
			t.Fatalf("%s: document %d: %v", path, i, err)
		}
	}
	// As the manifest reader does: a namespaced object without a namespace
	// is in "default".
	for _, p := range in.Pods {
		p.Namespace = orDefault(p.Namespace)
	}
	for _, o := range in.VirtualMachines {
		o.Namespace = orDefault(o.Namespace)
	}
	for _, o := range in.VirtualMachineInstances {
		o.Namespace = orDefault(o.Namespace)
	}
	for _, o := range in.Migrations {
		o.Namespace = orDefault(o.Namespace)
	}
	for _, o := range in.NetworkAttachmentDefinitions {
		o.Namespace = orDefault(o.Namespace)
	}
	return in
}

func onlyComments(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

func orDefault(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

func appendInputs(dst *Inputs, in Inputs) {
	dst.Pods = append(dst.Pods, in.Pods...)
	dst.VirtualMachines = append(dst.VirtualMachines, in.VirtualMachines...)
	dst.VirtualMachineInstances = append(dst.VirtualMachineInstances, in.VirtualMachineInstances...)
	dst.Migrations = append(dst.Migrations, in.Migrations...)
	dst.NetworkAttachmentDefinitions = append(dst.NetworkAttachmentDefinitions, in.NetworkAttachmentDefinitions...)
	dst.Subnets = append(dst.Subnets, in.Subnets...)
	dst.Namespaces = append(dst.Namespaces, in.Namespaces...)
	dst.StatefulSets = append(dst.StatefulSets, in.StatefulSets...)
	dst.IPs = append(dst.IPs, in.IPs...)
	dst.IPAMClaims = append(dst.IPAMClaims, in.IPAMClaims...)
}

func checkField(t *testing.T, in Inputs, cfg Config) {
	t.Helper()
	have := state.New(0)
	r := Build(in, cfg, have)
	if r.Want.Ports.Len() == 0 {
		t.Errorf("Build gives no ports")
	}
	for _, err := range invariants(have, r) {
		t.Error(err)
	}
	for _, err := range withinSubnets(r.Want) {
		t.Error(err)
	}
	for _, p := range r.Problems {
		if err := namesObjectAndField(p); err != nil {
			t.Error(err)
		}
	}
	next := applied(have, r.Want)
	again := Build(in, cfg, next)
	if d := diffStates(r.Want, again.Want); d != "" {
		t.Errorf("a second pass changes:\n%s", d)
	}
	for _, err := range invariants(next, again) {
		t.Errorf("second pass: %v", err)
	}

	// Every VM stopped (its VMIs, launcher pods and migrations gone), then
	// started again on another node: its ports keep their addresses.
	stopped := in
	stopped.VirtualMachineInstances, stopped.Migrations, stopped.Pods = nil, nil, nil
	for _, p := range in.Pods {
		if !isLauncher(p) {
			stopped.Pods = append(stopped.Pods, p)
		}
	}
	off := Build(stopped, cfg, next)
	for _, err := range invariants(next, off) {
		t.Errorf("stopped: %v", err)
	}
	for _, name := range slices.Sorted(r.Want.Ports.Names()) {
		p := r.Want.Ports.Get(name)
		if !strings.HasPrefix(p.Owner, kindVirtualMachine+"/") {
			continue
		}
		if q := off.Want.Ports.Get(name); q == nil || !slices.Equal(q.Addresses, p.Addresses) {
			t.Errorf("VM port %q: %q while running, %v once stopped", name, p.Addresses, q)
		}
	}
}

// withinSubnets returns an error for every IP of a port that is not within
// the subnets its switch records.
func withinSubnets(want state.State) []error {
	var errs []error
	for _, name := range slices.Sorted(want.Ports.Names()) {
		p := want.Ports.Get(name)
		sw := want.Switches[p.Switch]
		if sw == nil {
			continue // invariants reports it
		}
		var subnets []netip.Prefix
		for _, s := range []string{sw.Subnet, sw.IPv6Prefix} {
			for _, f := range strings.Fields(s) {
				if !strings.Contains(f, "/") {
					f += "/64" // other_config:ipv6_prefix is the prefix alone
				}
				if pfx, err := netip.ParsePrefix(f); err == nil {
					subnets = append(subnets, pfx)
				}
			}
		}
		for _, e := range p.Addresses {
			for _, w := range strings.Fields(e) {
				a, err := netip.ParseAddr(w)
				if err != nil {
					continue // the MAC
				}
				// A switch without subnets has no IPAM: its ports hold
				// the static addresses asked for them, any unicast.
				in := len(subnets) == 0 && a.IsGlobalUnicast()
				for _, pfx := range subnets {
					in = in || pfx.Contains(a)
				}
				if !in {
					errs = append(errs, fmt.Errorf("port %q holds %s, outside switch %q's subnets %v", name, a, sw.Name, subnets))
				}
			}
		}
	}
	return errs
}

// fieldMarks are the ways a Problem's message names the field at fault: an
// object path, an annotation key, or the network or port it concerns.
var fieldMarks = []string{"spec.", "metadata.", "status.", ".kubernetes.io/", "k8s.v1.cni.cncf.io/", "v1.multus-cni.io/", `network "`, `port "`}

func namesObjectAndField(p Problem) error {
	if p.Kind == "" || p.Name == "" || p.Reason == "" {
		return fmt.Errorf("problem %+v does not name its object and reason", p)
	}
	for _, m := range fieldMarks {
		if strings.Contains(p.Message, m) {
			return nil
		}
	}
	return fmt.Errorf("problem %s %s: %s: names no field", p.Object(), p.Reason, p.Message)
}
