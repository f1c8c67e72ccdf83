package bench

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/desired/netconf"
	"github.com/ovn-sync/ovn-sync/state"
)

// Seed is the fixed seed of every generated cluster.
const Seed = 20261202

// NADs are the secondary networks of generated clusters, large enough for 1M ports.
var nadNames = []string{"blue", "green", "red"}

// Config is the default network of generated clusters: a /8, so a million
// ports fit.
func Config() desired.Config {
	return desired.Config{
		DefaultSwitch:  "ovn-default",
		DefaultSubnets: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		DefaultExclude: []netconf.IPRange{{From: netip.MustParseAddr("10.0.0.1"), To: netip.MustParseAddr("10.0.0.1")}},
	}
}

// Cluster generates a cluster with about the given number of ports: 70% of
// ports belong to plain pods, the rest to VMs (two thirds running, one third
// stopped) with one to three networks; one running VM in a thousand is in a
// live migration. Every running VM has a VMI and a virt-launcher pod.
//
// OVN binds at most desired.MaxSwitchPorts ports on one switch: past that,
// the cluster is spread as big clusters are. The 97 namespaces are bound to
// kube-ovn Subnets (100.64.0.0/10 cut in /16s) of at most SwitchPorts
// default-network ports each, and each secondary network is cut in as many
// NADs as its ports need (blue-0, blue-1, ..., each namespace's VMs on one).
func Cluster(ports int) desired.Inputs {
	r := rand.New(rand.NewPCG(Seed, uint64(ports)))
	var in desired.Inputs
	// A VM with two or three networks has a port on blue, one with three
	// on green too: about 16% of all ports are on blue, the most used.
	cuts := max(1, (ports*16/100+SwitchPorts-1)/SwitchPorts)
	for i, n := range nadNames {
		for c := range cuts {
			name, cidr := n, fmt.Sprintf("172.%d.0.0/12", 16+16*i)
			if cuts > 1 {
				name, cidr = fmt.Sprintf("%s-%d", n, c), fmt.Sprintf("172.%d.0.0/16", 16+16*i+c)
			}
			in.NetworkAttachmentDefinitions = append(in.NetworkAttachmentDefinitions, &nadv1.NetworkAttachmentDefinition{
				TypeMeta:   metav1.TypeMeta{APIVersion: "k8s.cni.cncf.io/v1", Kind: "NetworkAttachmentDefinition"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"},
				Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: fmt.Sprintf(
					`{"cniVersion":"0.3.1","name":"%s","type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"%s","netAttachDefName":"tenant/%s"}`,
					name, cidr, name)},
			})
		}
	}
	nodes := max(ports/100, 3)
	node := func() string { return fmt.Sprintf("node-%d", r.IntN(nodes)) }
	perNS := make([]int, namespaces) // default-network ports of each namespace
	made := 0
	for i := 0; made < ports; i++ {
		nsi := i % namespaces
		ns := fmt.Sprintf("ns-%d", nsi)
		perNS[nsi]++
		if r.IntN(10) < 7 {
			in.Pods = append(in.Pods, pod(fmt.Sprintf("pod-%d", i), ns, node()))
			made++
			continue
		}
		nets := 1 + r.IntN(3)
		name := fmt.Sprintf("vm-%d", i)
		running := r.IntN(3) < 2
		cut := nsi % cuts
		in.VirtualMachines = append(in.VirtualMachines, vm(name, ns, nets, cut, cuts, running))
		made += nets
		if !running {
			continue
		}
		src := node()
		vmi := vmiFor(name, ns, nets, cut, cuts, src)
		in.VirtualMachineInstances = append(in.VirtualMachineInstances, vmi)
		in.Pods = append(in.Pods, launcher(name, ns, vmi.UID, src, 0))
		if r.IntN(1000) == 0 {
			dst := node()
			vmi.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{SourceNode: src, TargetNode: dst}
			in.Pods = append(in.Pods, launcher(name, ns, vmi.UID, dst, 1))
		}
	}
	in.Subnets = subnets(perNS)
	return in
}

// SwitchPorts is the most ports a generated cluster puts on one switch once
// it needs more than one.
const SwitchPorts = 20_000

// namespaces is how many namespaces a generated cluster's owners are in.
const namespaces = 97

// subnets binds namespaces to kube-ovn Subnets, in order, each taking
// namespaces while it holds at most SwitchPorts default-network ports;
// none when every port fits on the default network's switch.
func subnets(perNS []int) []*kubeovnv1.Subnet {
	total := 0
	for _, n := range perNS {
		total += n
	}
	if total <= desired.MaxSwitchPorts {
		return nil
	}
	var subs []*kubeovnv1.Subnet
	held := 0
	for i, n := range perNS {
		if len(subs) == 0 || held+n > SwitchPorts {
			j := len(subs)
			subs = append(subs, &kubeovnv1.Subnet{
				TypeMeta:   metav1.TypeMeta{APIVersion: kubeovnv1.GroupVersion.String(), Kind: "Subnet"},
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", j)},
				Spec: kubeovnv1.SubnetSpec{Protocol: "IPv4", CIDRBlock: fmt.Sprintf("100.%d.0.0/16", 64+j),
					Gateway: fmt.Sprintf("100.%d.0.1", 64+j), ExcludeIps: []string{fmt.Sprintf("100.%d.0.1", 64+j)}},
			})
			held = 0
		}
		subs[len(subs)-1].Spec.Namespaces = append(subs[len(subs)-1].Spec.Namespaces, fmt.Sprintf("ns-%d", i))
		held += n
	}
	return subs
}

func pod(name, ns, node string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(ns + "/" + name)},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// networks are a VM's networks: the pod network and nets-1 secondary
// ones, on cut c of each when they are cut in cuts NADs.
func networks(nets, c, cuts int) ([]kubevirtv1.Network, []kubevirtv1.Interface) {
	ns := []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}}
	ifs := []kubevirtv1.Interface{{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}}}
	for i := 1; i < nets; i++ {
		n := nadNames[i-1]
		if cuts > 1 {
			n = fmt.Sprintf("%s-%d", n, c)
		}
		ns = append(ns, kubevirtv1.Network{Name: n, NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "tenant/" + n}}})
		ifs = append(ifs, kubevirtv1.Interface{Name: n, InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}})
	}
	return ns, ifs
}

func vm(name, ns string, nets, c, cuts int, running bool) *kubevirtv1.VirtualMachine {
	strategy := kubevirtv1.RunStrategyHalted
	if running {
		strategy = kubevirtv1.RunStrategyAlways
	}
	n, ifs := networks(nets, c, cuts)
	return &kubevirtv1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("vm-" + ns + "/" + name)},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: &strategy,
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Networks: n,
				Domain:   kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Interfaces: ifs}},
			}},
		},
	}
}

func vmiFor(name, ns string, nets, c, cuts int, node string) *kubevirtv1.VirtualMachineInstance {
	n, ifs := networks(nets, c, cuts)
	t := true
	return &kubevirtv1.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("vmi-" + ns + "/" + name),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: name, UID: types.UID("vm-" + ns + "/" + name), Controller: &t}}},
		Spec:   kubevirtv1.VirtualMachineInstanceSpec{Networks: n, Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Interfaces: ifs}}},
		Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: node},
	}
}

func launcher(vm, ns string, vmiUID types.UID, node string, n int) *corev1.Pod {
	t := true
	p := pod(fmt.Sprintf("virt-launcher-%s-%d", vm, n), ns, node)
	p.Labels = map[string]string{"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": string(vmiUID), "vm.kubevirt.io/name": vm}
	p.Annotations = map[string]string{"kubevirt.io/domain": vm}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: vm, UID: vmiUID, Controller: &t}}
	return p
}

// Observe returns want as observed would read it back from the NB: the same
// values with UUIDs, indexed.
func Observe(want state.State) state.State {
	have := state.State{Switches: make(map[string]*state.Switch, len(want.Switches)), Ports: state.NewPorts(want.Ports.Len())}
	i := 0
	for name, sw := range want.Switches {
		c := *sw
		c.UUID = fmt.Sprintf("00000000-0000-4000-8000-%012x", i)
		i++
		have.Switches[name] = &c
	}
	for name, p := range want.Ports.All() {
		c := *p
		c.UUID = fmt.Sprintf("00000000-0000-4000-9000-%012x", i)
		i++
		have.Ports.Set(name, &c)
	}
	have.Index = state.IndexPorts(have.Ports) // as observed.NB.State does
	return have
}

// Churn returns a copy of have with about 1% of its ports disturbed, as a
// busy cluster would see between two passes: a quarter deleted from NB, a
// quarter changed addresses, a quarter moved chassis, and a quarter of extra
// ports of ours whose owners are gone.
func Churn(have state.State) state.State {
	c := have.Clone()
	names := make([]string, 0, have.Ports.Len())
	for name := range have.Ports.All() {
		names = append(names, name)
	}
	slices.Sort(names) // deterministic: every 100th port by name
	for k, i := 0, 0; i < len(names); k, i = k+1, i+100 {
		p := have.Ports.Get(names[i])
		switch k % 4 {
		case 0:
			c.Ports.Delete(p.Name)
		case 1:
			q := *p
			q.Addresses = []string{"0a:58:ff:ff:ff:ff 10.255.255.254"}
			q.PortSecurity = q.Addresses
			c.Ports.Set(p.Name, &q)
		case 2:
			q := *p
			q.RequestedChassis = "node-elsewhere"
			c.Ports.Set(p.Name, &q)
		case 3:
			q := *p
			q.Name = "gone-" + p.Name
			q.UUID = "gone-" + p.UUID
			c.Ports.Set(q.Name, &q)
		}
	}
	c.Index = state.IndexPorts(c.Ports)
	return c
}
