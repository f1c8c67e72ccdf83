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

	"github.com/ovn-sync/ovn-sync/desired"
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
		DefaultExclude: []desired.IPRange{{From: netip.MustParseAddr("10.0.0.1"), To: netip.MustParseAddr("10.0.0.1")}},
	}
}

// Cluster generates a cluster with about the given number of ports: 70% of
// ports belong to plain pods, the rest to VMs (two thirds running, one third
// stopped) with one to three networks; one running VM in a thousand is in a
// live migration. Every running VM has a VMI and a virt-launcher pod.
func Cluster(ports int) desired.Inputs {
	r := rand.New(rand.NewPCG(Seed, uint64(ports)))
	var in desired.Inputs
	for i, n := range nadNames {
		in.NetworkAttachmentDefinitions = append(in.NetworkAttachmentDefinitions, &nadv1.NetworkAttachmentDefinition{
			TypeMeta:   metav1.TypeMeta{APIVersion: "k8s.cni.cncf.io/v1", Kind: "NetworkAttachmentDefinition"},
			ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "tenant"},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: fmt.Sprintf(
				`{"cniVersion":"0.3.1","name":"%s","type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"172.%d.0.0/12","netAttachDefName":"tenant/%s"}`,
				n, 16+16*i, n)},
		})
	}
	nodes := max(ports/100, 3)
	node := func() string { return fmt.Sprintf("node-%d", r.IntN(nodes)) }
	made := 0
	for i := 0; made < ports; i++ {
		ns := fmt.Sprintf("ns-%d", i%97)
		if r.IntN(10) < 7 {
			in.Pods = append(in.Pods, pod(fmt.Sprintf("pod-%d", i), ns, node()))
			made++
			continue
		}
		nets := 1 + r.IntN(3)
		name := fmt.Sprintf("vm-%d", i)
		running := r.IntN(3) < 2
		in.VirtualMachines = append(in.VirtualMachines, vm(name, ns, nets, running))
		made += nets
		if !running {
			continue
		}
		src := node()
		vmi := vmiFor(name, ns, nets, src)
		in.VirtualMachineInstances = append(in.VirtualMachineInstances, vmi)
		in.Pods = append(in.Pods, launcher(name, ns, vmi.UID, src, 0))
		if r.IntN(1000) == 0 {
			dst := node()
			vmi.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{SourceNode: src, TargetNode: dst}
			in.Pods = append(in.Pods, launcher(name, ns, vmi.UID, dst, 1))
		}
	}
	return in
}

func pod(name, ns, node string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(ns + "/" + name)},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func networks(nets int) ([]kubevirtv1.Network, []kubevirtv1.Interface) {
	ns := []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}}
	ifs := []kubevirtv1.Interface{{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}}}
	for i := 1; i < nets; i++ {
		n := nadNames[i-1]
		ns = append(ns, kubevirtv1.Network{Name: n, NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "tenant/" + n}}})
		ifs = append(ifs, kubevirtv1.Interface{Name: n, InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}})
	}
	return ns, ifs
}

func vm(name, ns string, nets int, running bool) *kubevirtv1.VirtualMachine {
	strategy := kubevirtv1.RunStrategyHalted
	if running {
		strategy = kubevirtv1.RunStrategyAlways
	}
	n, ifs := networks(nets)
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

func vmiFor(name, ns string, nets int, node string) *kubevirtv1.VirtualMachineInstance {
	n, ifs := networks(nets)
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
