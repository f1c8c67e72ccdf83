package desired

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/ovn-sync/ovn-sync/state"
)

// world is a random cluster small enough that subnets run out and requests
// collide: the cases IPAM has to get right.
type world struct {
	cfg     Config
	in      Inputs
	have    state.State // ports that are not ours only
	subnets map[string][]netip.Prefix
}

func genWorld(t *rapid.T) world {
	var w world
	v4 := netip.MustParsePrefix(fmt.Sprintf("10.16.0.0/%d", rapid.IntRange(26, 30).Draw(t, "v4bits")))
	subnets := []string{v4.String()}
	var v6 netip.Prefix
	if rapid.Bool().Draw(t, "dual") {
		v6 = netip.MustParsePrefix(fmt.Sprintf("fd00:10:16::/%d", rapid.IntRange(122, 126).Draw(t, "v6bits")))
		subnets = append(subnets, v6.String())
	}
	var exclude []string
	for i := range rapid.IntRange(0, 3).Draw(t, "nexcl") {
		exclude = append(exclude, fmt.Sprintf("10.16.0.%d", rapid.IntRange(0, 20).Draw(t, fmt.Sprintf("excl%d", i))))
	}
	cfg, err := NewConfig("ovn-default", subnets, exclude)
	if err != nil {
		t.Fatalf("NewConfig: %v", err)
	}
	w.cfg = cfg
	blue := netip.MustParsePrefix("192.168.100.0/29")
	w.subnets = map[string][]netip.Prefix{state.DefaultNetwork: cfg.DefaultSubnets, "tenant/blue": {blue}}

	nadConfig := rapid.SampledFrom([]string{
		`{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.100.0/29"}`,
		`{"type":"ovn-k8s-cni-overlay","topology":"layer2"`, // broken: unknown
		`{"type":"macvlan","master":"eth1"}`,                // not ours
	}).Draw(t, "nad")
	w.in.NetworkAttachmentDefinitions = []*nadv1.NetworkAttachmentDefinition{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "blue"},
		Spec:       nadv1.NetworkAttachmentDefinitionSpec{Config: nadConfig},
	}}

	anyIP := func(label string) string {
		if v6.IsValid() && rapid.Bool().Draw(t, label+"fam") {
			return fmt.Sprintf("fd00:10:16::%x", rapid.IntRange(0, 70).Draw(t, label))
		}
		return fmt.Sprintf("10.16.0.%d", rapid.IntRange(0, 70).Draw(t, label))
	}
	annotations := func(label string) map[string]string {
		ann := map[string]string{}
		switch rapid.IntRange(0, 5).Draw(t, label+"ip") {
		case 1:
			ann[DefaultIPAnnotation] = anyIP(label + "ipv")
		case 2:
			ann[DefaultIPAnnotation] = rapid.SampledFrom([]string{"999.1.1.1", ",", "10.16.0.2,10.16.0.3", "fd00::1"}).Draw(t, label+"bad")
		}
		if rapid.IntRange(0, 5).Draw(t, label+"mac") == 1 {
			ann[DefaultMACAnnotation] = rapid.SampledFrom([]string{"02:00:00:00:00:01", "02:00:00:00:00:02", "zz"}).Draw(t, label+"macv")
		}
		switch rapid.IntRange(0, 5).Draw(t, label+"nets") {
		case 1:
			ann[annNetworks] = "tenant/blue"
		case 2:
			ann[annNetworks] = "blue@a,blue@b"
		case 3:
			ann[annNetworks] = `[{"name":"blue","namespace":"tenant","ips":["192.168.100.` +
				fmt.Sprint(rapid.IntRange(0, 8).Draw(t, label+"blueip")) + `"]}]`
		case 4:
			ann[annNetworks] = rapid.SampledFrom([]string{"missing", "[{", "a/b/c"}).Draw(t, label+"badnet")
		}
		return ann
	}
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	created := func(label string) metav1.Time {
		return metav1.NewTime(epoch.Add(time.Duration(rapid.IntRange(0, 3).Draw(t, label+"t")) * time.Second))
	}
	nodes := []string{"", "node-1", "node-2"}

	for i := range rapid.IntRange(0, 25).Draw(t, "npods") {
		l := fmt.Sprintf("pod%d", i)
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: rapid.SampledFrom([]string{"default", "tenant"}).Draw(t, l+"ns"),
				Name:      l, CreationTimestamp: created(l), Annotations: annotations(l),
			},
			Spec: corev1.PodSpec{NodeName: rapid.SampledFrom(nodes).Draw(t, l+"node"), HostNetwork: rapid.IntRange(0, 9).Draw(t, l+"hn") == 0},
			Status: corev1.PodStatus{Phase: rapid.SampledFrom([]corev1.PodPhase{
				corev1.PodPending, corev1.PodRunning, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed,
			}).Draw(t, l+"phase")},
		}
		w.in.Pods = append(w.in.Pods, p)
	}
	for i := range rapid.IntRange(0, 8).Draw(t, "nvms") {
		l := fmt.Sprintf("vm%d", i)
		nets := []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}}
		ifaces := []kubevirtv1.Interface{{Name: "default"}}
		if rapid.Bool().Draw(t, l+"blue") {
			nets = append(nets, kubevirtv1.Network{Name: "blue", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "tenant/blue"}}})
			ifaces = append(ifaces, kubevirtv1.Interface{Name: "blue"})
		}
		vm := &kubevirtv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: l, CreationTimestamp: created(l)},
			Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: annotations(l)},
				Spec: kubevirtv1.VirtualMachineInstanceSpec{
					Networks: nets,
					Domain:   kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Interfaces: ifaces}},
				},
			}},
		}
		w.in.VirtualMachines = append(w.in.VirtualMachines, vm)
		if rapid.Bool().Draw(t, l+"running") {
			vmi := &kubevirtv1.VirtualMachineInstance{
				ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: l},
				Status:     kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: rapid.SampledFrom(nodes).Draw(t, l+"node")},
			}
			w.in.VirtualMachineInstances = append(w.in.VirtualMachineInstances, vmi)
			for j, n := range rapid.SliceOfNDistinct(rapid.SampledFrom(nodes[1:]), 0, 2, rapid.ID).Draw(t, l+"launchers") {
				w.in.Pods = append(w.in.Pods, &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{
						Namespace: "tenant", Name: fmt.Sprintf("virt-launcher-%s-%d", l, j),
						Labels:      map[string]string{"kubevirt.io": "virt-launcher"},
						Annotations: map[string]string{"kubevirt.io/domain": l},
					},
					Spec:   corev1.PodSpec{NodeName: n},
					Status: corev1.PodStatus{Phase: corev1.PodRunning},
				})
			}
		}
	}
	w.have = state.New(0)
	for i := range rapid.IntRange(0, 6).Draw(t, "nforeign") {
		l := fmt.Sprintf("foreign%d", i)
		ip := fmt.Sprintf("10.16.0.%d", rapid.IntRange(0, 40).Draw(t, l))
		if rapid.Bool().Draw(t, l+"dyn") {
			w.have.Ports.Set(l, (&state.Port{Name: l, Addresses: []string{"dynamic"}}).
				SetRare(&state.Rare{DynamicAddresses: "0a:00:00:00:00:0" + fmt.Sprint(i) + " " + ip}))
		} else {
			w.have.Ports.Set(l, &state.Port{Name: l, Addresses: []string{"02:00:00:00:00:0" + fmt.Sprint(i) + " " + ip}})
		}
	}
	return w
}

func shuffled(t *rapid.T, in Inputs) Inputs {
	return Inputs{
		Pods:                         rapid.Permutation(in.Pods).Draw(t, "pods order"),
		VirtualMachines:              rapid.Permutation(in.VirtualMachines).Draw(t, "vms order"),
		VirtualMachineInstances:      rapid.Permutation(in.VirtualMachineInstances).Draw(t, "vmis order"),
		Migrations:                   in.Migrations,
		NetworkAttachmentDefinitions: in.NetworkAttachmentDefinitions,
	}
}

// TestBuildProperties checks, over random clusters, that no two ports share
// an address, that every address is in its network's subnet, that the order
// of the inputs does not matter, and that a second pass over the applied
// result changes nothing.
func TestBuildProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := genWorld(t)
		r := Build(w.in, w.cfg, w.have)
		want, problems := r.Want, r.Problems
		for _, err := range invariants(w.have, r) {
			t.Fatal(err)
		}
		checkSubnets(t, want, w.subnets)

		want2, problems2 := wantProblems(Build(shuffled(t, w.in), w.cfg, w.have))
		if d := diffStates(want, want2); d != "" {
			t.Fatalf("Build over shuffled inputs differs:\n%s", d)
		}
		if !slices.Equal(problems, problems2) {
			t.Fatalf("Build over shuffled inputs: problems %v, want %v", problems2, problems)
		}

		again, _ := wantProblems(Build(w.in, w.cfg, applied(w.have, want)))
		if d := diffStates(want, again); d != "" {
			t.Fatalf("Build(in, cfg, Build(in, cfg, have)) differs:\n%s", d)
		}
	})
}

// TestBuildSticky removes random owners between passes: every port left
// keeps its addresses, and the invariants hold across passes.
func TestBuildSticky(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := genWorld(t)
		want, _ := wantProblems(Build(w.in, w.cfg, w.have))
		have := applied(w.have, want)

		keep := func(label string) bool { return rapid.IntRange(0, 3).Draw(t, label) > 0 }
		in := w.in
		in.Pods = slices.DeleteFunc(slices.Clone(in.Pods), func(p *corev1.Pod) bool { return !keep("keep " + p.Name) })
		in.VirtualMachines = slices.DeleteFunc(slices.Clone(in.VirtualMachines), func(v *kubevirtv1.VirtualMachine) bool { return !keep("keep " + v.Name) })

		nextR := Build(in, w.cfg, have)
		next := nextR.Want
		for _, err := range invariants(have, nextR) {
			t.Fatal(err)
		}
		for name, p := range next.Ports.All() {
			if old := want.Ports.Get(name); old != nil && old.Owner == p.Owner && !slices.Equal(old.Addresses, p.Addresses) {
				t.Fatalf("port %s moved from %q to %q", name, old.Addresses, p.Addresses)
			}
		}
		// The pass after may still change: addresses of deleted owners' ports
		// are held until those ports have left the NB. The one after that
		// must not.
		have = applied(have, next)
		againR := Build(in, w.cfg, have)
		again := againR.Want
		for _, err := range invariants(have, againR) {
			t.Fatal(err)
		}
		settled, _ := wantProblems(Build(in, w.cfg, applied(have, again)))
		if d := diffStates(again, settled); d != "" {
			t.Fatalf("third pass after deletions differs:\n%s", d)
		}
	})
}

func checkSubnets(t *rapid.T, want state.State, subnets map[string][]netip.Prefix) {
	for name, p := range want.Ports.All() {
		for _, e := range p.Addresses {
			for _, w := range strings.Fields(e) {
				a, err := netip.ParseAddr(w)
				if err != nil {
					continue
				}
				if !slices.ContainsFunc(subnets[p.Network], func(pf netip.Prefix) bool { return pf.Contains(a) }) {
					t.Fatalf("port %s: %s is not in the subnets of %s", name, a, p.Network)
				}
			}
		}
	}
}

// TestBuildGarbage feeds Build objects with every field empty or odd; it
// must not panic.
func TestBuildGarbage(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		str := rapid.SampledFrom([]string{"", "x", "a/b", "@", "[", "[{}]", `[{"name":"x","ips":["::ffff:10.16.0.9"]}]`, "10.16.0.1", "fd00::", ",", "0a:58:0a:10:00:02", "nope..", "1.1.1.1..0.0.0.0"})
		ann := func(l string) map[string]string {
			m := map[string]string{}
			for _, k := range []string{DefaultIPAnnotation, DefaultMACAnnotation, annNetworks, "x.y.ovn" + AnnIPSuffix} {
				if rapid.Bool().Draw(t, l+k) {
					m[k] = str.Draw(t, l+k+"v")
				}
			}
			return m
		}
		var in Inputs
		in.Pods = []*corev1.Pod{nil, {ObjectMeta: metav1.ObjectMeta{Annotations: ann("p"), Labels: map[string]string{"kubevirt.io": str.Draw(t, "lbl")}}}}
		in.VirtualMachines = []*kubevirtv1.VirtualMachine{nil, {ObjectMeta: metav1.ObjectMeta{Name: str.Draw(t, "vmname")}}, {Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: ann("vm")},
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Networks: []kubevirtv1.Network{
				{Name: str.Draw(t, "n1")},
				{Name: str.Draw(t, "n2"), NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: str.Draw(t, "nn"), Default: rapid.Bool().Draw(t, "def")}}},
			}},
		}}}}
		in.VirtualMachineInstances = []*kubevirtv1.VirtualMachineInstance{nil, {ObjectMeta: metav1.ObjectMeta{
			Name: str.Draw(t, "vminame"), Annotations: ann("vmi"),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: str.Draw(t, "ref")}},
		}, Status: kubevirtv1.VirtualMachineInstanceStatus{MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{Completed: rapid.Bool().Draw(t, "done")}}}}
		in.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{nil, {Spec: kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: str.Draw(t, "vmim")}, Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: kubevirtv1.MigrationRunning, MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{}}}}
		in.NetworkAttachmentDefinitions = []*nadv1.NetworkAttachmentDefinition{nil, {Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: str.Draw(t, "nadcfg")}}}
		have := state.State{Ports: state.PortsOf(map[string]*state.Port{
			"x": {Name: "x", Addresses: []string{str.Draw(t, "ha")}, Owner: str.Draw(t, "ho"), Switch: str.Draw(t, "hs")},
			"y": (&state.Port{Name: "y", Addresses: nil}).SetRare(&state.Rare{DynamicAddresses: str.Draw(t, "hd")}),
		})}
		cfg := Config{DefaultSwitch: str.Draw(t, "sw"), DefaultSubnets: rapid.SampledFrom([][]netip.Prefix{nil, {{}}, {netip.MustParsePrefix("10.16.0.0/30")}}).Draw(t, "subnets")}
		Build(in, cfg, have)
	})
}
