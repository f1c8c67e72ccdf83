package desired

import (
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"pgregory.net/rapid"

	ipamclaimsv1alpha1 "github.com/ovn-sync/ovn-sync/apis/ipamclaims/v1alpha1"
	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/state"
)

// cluster is a small cluster that events change one object at a time:
// subnets small enough to run out, requests that collide, VMs that start,
// stop, migrate and lose their VM object.
type cluster struct {
	cfg     Config
	objects map[state.ObjectRef]any
	serial  int
	// awaited are the pods and VMs kube-ovn made a port for (kubeOVNPort)
	// that are not created yet; events 0 and 4 create one at times.
	awaited map[string][]nsName
}

func newCluster(t *rapid.T) *cluster {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/28"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatalf("NewConfig: %v", err)
	}
	c := &cluster{cfg: cfg, objects: map[state.ObjectRef]any{}}
	config := `{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.100.0/29"}`
	if rapid.Bool().Draw(t, "persistent IPs") {
		// VMs on blue keep their addresses in IPAMClaims (event 14).
		config = `{"name":"blue","type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.100.0/29","allowPersistentIPs":true}`
	}
	c.put(&nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "blue"},
		Spec:       nadv1.NetworkAttachmentDefinitionSpec{Config: config},
	})
	if rapid.Bool().Draw(t, "red") {
		// red, whose switch blue may take (event 12).
		c.put(&nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "red"},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.200.0/29"}`}})
	}
	if rapid.Bool().Draw(t, "statefulset") {
		// kube-ovn's StatefulSet pods keep their ports while gone; an IP
		// object records db-1's addresses, held for it after the NB lost them.
		c.put(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "db"},
			Spec: appsv1.StatefulSetSpec{Replicas: new(int32(2))}})
		c.put(&kubeovnv1.IP{ObjectMeta: metav1.ObjectMeta{Name: "db-1.tenant"},
			Spec: kubeovnv1.IPSpec{PodName: "db-1", Namespace: "tenant", Subnet: "ovn-default",
				IPAddress: "10.16.0.9", V4IPAddress: "10.16.0.9", MacAddress: "00:00:00:53:1f:09"}})
	}
	if rapid.Bool().Draw(t, "subnet") {
		// A kube-ovn Subnet of the default network that Namespaces may
		// name (ovn.kubernetes.io/logical_switch).
		c.put(subnet1(nil))
	}
	for _, ns := range []string{"default", "tenant"} {
		c.put(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	if rapid.Bool().Draw(t, "adopt") {
		// Ports kube-ovn made are taken over in place (step kind 1 of
		// TestIncrementalMatchesBuild makes them).
		c.cfg.Adopt = state.VendorKubeOVN
	}
	return c
}

// kubeOVNPort is the port kube-ovn makes for a pod, or (with keep-vm-ip) a
// VM, it is about to see (events 0 and 4 create it at times), as kube-ovn
// writes one: its vendor and switch in external_ids, one "<mac> <ip>"
// entry in addresses and port_security. The address is any of the
// default network's, so it may be held already, excluded, or the gateway.
func (c *cluster) kubeOVNPort(t *rapid.T) *state.Port {
	kind, o := kindPod, nsName{rapid.SampledFrom([]string{"default", "tenant"}).Draw(t, "kube-ovn ns"), c.newName("pod")}
	if rapid.IntRange(0, 2).Draw(t, "kube-ovn vm") == 0 {
		kind, o = kindVirtualMachine, nsName{"tenant", c.newName("vm")}
	}
	if _, ok := c.objects[state.ObjectRef{Kind: kind, Namespace: o.ns, Name: o.name}]; !ok {
		if c.awaited == nil {
			c.awaited = map[string][]nsName{}
		}
		c.awaited[kind] = append(c.awaited[kind], o)
	}
	i := rapid.IntRange(1, 15).Draw(t, "kube-ovn ip")
	e := fmt.Sprintf("00:00:00:6b:0e:%02x 10.16.0.%d", i, i)
	return (&state.Port{Name: o.name + "." + o.ns, Addresses: []string{e}, PortSecurity: []string{e}}).
		SetRare(&state.Rare{Vendor: state.VendorKubeOVN, VendorSwitch: c.cfg.DefaultSwitch})
}

// awaitedName returns, at times, the name of an object of kind whose port
// kube-ovn made, taking it off the list, and true; else false.
func (c *cluster) awaitedName(t *rapid.T, kind string) (nsName, bool) {
	if len(c.awaited[kind]) == 0 || !rapid.Bool().Draw(t, "kube-ovn's "+kind) {
		return nsName{}, false
	}
	o := c.awaited[kind][0]
	c.awaited[kind] = c.awaited[kind][1:]
	return o, true
}

// subnet1 is a kube-ovn Subnet of the default network, sub1, bound to
// namespaces.
func subnet1(namespaces []string) *kubeovnv1.Subnet {
	return &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: "sub1"},
		Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.17.0.0/28", Gateway: "10.17.0.1", Namespaces: namespaces}}
}

func refOf(o any) state.ObjectRef {
	switch v := o.(type) {
	case *corev1.Pod:
		return state.ObjectRef{Kind: kindPod, Namespace: v.Namespace, Name: v.Name}
	case *kubevirtv1.VirtualMachine:
		return state.ObjectRef{Kind: kindVirtualMachine, Namespace: v.Namespace, Name: v.Name}
	case *kubevirtv1.VirtualMachineInstance:
		return state.ObjectRef{Kind: kindVirtualMachineInst, Namespace: v.Namespace, Name: v.Name}
	case *kubevirtv1.VirtualMachineInstanceMigration:
		return state.ObjectRef{Kind: state.KindVirtualMachineInstanceMigration, Namespace: v.Namespace, Name: v.Name}
	case *nadv1.NetworkAttachmentDefinition:
		return state.ObjectRef{Kind: kindNAD, Namespace: v.Namespace, Name: v.Name}
	case *appsv1.StatefulSet:
		return state.ObjectRef{Kind: kindStatefulSet, Namespace: v.Namespace, Name: v.Name}
	case *kubeovnv1.IP:
		return state.ObjectRef{Kind: state.KindIP, Namespace: "", Name: v.Name}
	case *corev1.Namespace:
		return state.ObjectRef{Kind: kindNamespace, Namespace: "", Name: v.Name}
	case *kubeovnv1.Subnet:
		return state.ObjectRef{Kind: kindSubnet, Namespace: "", Name: v.Name}
	case *ipamclaimsv1alpha1.IPAMClaim:
		return state.ObjectRef{Kind: state.KindIPAMClaim, Namespace: v.Namespace, Name: v.Name}
	}
	panic(fmt.Sprintf("%T", o))
}

func (c *cluster) put(o any) state.ObjectRef {
	r := refOf(o)
	c.objects[r] = o
	return r
}

func (c *cluster) del(r state.ObjectRef) state.ObjectRef {
	delete(c.objects, r)
	return r
}

func (c *cluster) inputs() Inputs { return inputsOf(c.objects) }

// inputsOf lists objects as Inputs, in the order of their refs.
func inputsOf(objects map[state.ObjectRef]any) Inputs {
	var in Inputs
	refs := slices.SortedFunc(maps.Keys(objects), func(a, b state.ObjectRef) int { return strings.Compare(a.String(), b.String()) })
	for _, r := range refs {
		switch v := objects[r].(type) {
		case *corev1.Pod:
			in.Pods = append(in.Pods, v)
		case *kubevirtv1.VirtualMachine:
			in.VirtualMachines = append(in.VirtualMachines, v)
		case *kubevirtv1.VirtualMachineInstance:
			in.VirtualMachineInstances = append(in.VirtualMachineInstances, v)
		case *kubevirtv1.VirtualMachineInstanceMigration:
			in.Migrations = append(in.Migrations, v)
		case *nadv1.NetworkAttachmentDefinition:
			in.NetworkAttachmentDefinitions = append(in.NetworkAttachmentDefinitions, v)
		case *appsv1.StatefulSet:
			in.StatefulSets = append(in.StatefulSets, v)
		case *kubeovnv1.IP:
			in.IPs = append(in.IPs, v)
		case *corev1.Namespace:
			in.Namespaces = append(in.Namespaces, v)
		case *kubeovnv1.Subnet:
			in.Subnets = append(in.Subnets, v)
		case *ipamclaimsv1alpha1.IPAMClaim:
			in.IPAMClaims = append(in.IPAMClaims, v)
		}
	}
	return in
}

// pick draws one existing object of kind, or nil.
func (c *cluster) pick(t *rapid.T, kind string) any {
	var refs []state.ObjectRef
	for r := range c.objects {
		if r.Kind == kind {
			refs = append(refs, r)
		}
	}
	if len(refs) == 0 {
		return nil
	}
	slices.SortFunc(refs, func(a, b state.ObjectRef) int { return strings.Compare(a.String(), b.String()) })
	return c.objects[rapid.SampledFrom(refs).Draw(t, "pick "+kind)]
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *cluster) created(t *rapid.T) metav1.Time {
	return metav1.NewTime(epoch.Add(time.Duration(rapid.IntRange(0, 3).Draw(t, "created")) * time.Second))
}

// requests draws kube-ovn and Multus annotations: none, a fixed address
// (often one another owner holds), a MAC, a secondary network, or a typo.
func requests(t *rapid.T) map[string]string {
	ann := map[string]string{}
	switch rapid.IntRange(0, 6).Draw(t, "ip") {
	case 1, 2:
		ann[DefaultIPAnnotation] = fmt.Sprintf("10.16.0.%d", rapid.IntRange(2, 16).Draw(t, "ipv"))
	case 3:
		ann[DefaultIPAnnotation] = rapid.SampledFrom([]string{"999.1.1.1", "10.16.1.5", "10.16.0.1"}).Draw(t, "bad ip")
	}
	if rapid.IntRange(0, 5).Draw(t, "mac") == 1 {
		ann[DefaultMACAnnotation] = rapid.SampledFrom([]string{"02:00:00:00:00:01", "02:00:00:00:00:02", "zz"}).Draw(t, "macv")
	}
	switch rapid.IntRange(0, 5).Draw(t, "nets") {
	case 1:
		ann[annNetworks] = "tenant/blue"
	case 2:
		ann[annNetworks] = `[{"name":"blue","namespace":"tenant","ips":["192.168.100.` + fmt.Sprint(rapid.IntRange(1, 7).Draw(t, "blueip")) + `"]}]`
	case 3:
		ann[annNetworks] = rapid.SampledFrom([]string{"missing", "[{", "tenant/blue,tenant/blue"}).Draw(t, "bad nets")
	case 4:
		ann[annNetworks] = rapid.SampledFrom([]string{"tenant/red", "tenant/blue,tenant/red"}).Draw(t, "red nets")
	}
	return ann
}

func (c *cluster) newName(prefix string) string {
	c.serial++
	return fmt.Sprintf("%s%d", prefix, c.serial%12) // names come back after a delete
}

func (c *cluster) launcher(vmi, suffix, node string, created metav1.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "tenant", Name: "virt-launcher-" + vmi + "-" + suffix, CreationTimestamp: created,
			Labels:      map[string]string{kubevirtv1.AppLabel: "virt-launcher", "vm.kubevirt.io/name": vmi},
			Annotations: map[string]string{kubevirtv1.DomainAnnotation: vmi},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: kindVirtualMachineInst, Name: vmi,
				Controller: new(true)}},
		},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// event changes the cluster as an informer would see it and returns the
// objects it changed.
func (c *cluster) event(t *rapid.T) []state.ObjectRef {
	return c.eventOf(t, rapid.IntRange(0, 18).Draw(t, "event"))
}

// eventOf makes an event of kind k (a case of event).
func (c *cluster) eventOf(t *rapid.T, k int) []state.ObjectRef {
	nodes := []string{"node-1", "node-2", "node-3"}
	switch k {
	case 0, 1: // a pod is created, sometimes a StatefulSet's
		ns, name := rapid.SampledFrom([]string{"default", "tenant"}).Draw(t, "ns"), c.newName("pod")
		if rapid.IntRange(0, 3).Draw(t, "sts") == 0 {
			ns, name = "tenant", fmt.Sprintf("db-%d", rapid.IntRange(0, 2).Draw(t, "ordinal"))
		} else if o, ok := c.awaitedName(t, kindPod); ok {
			ns, name = o.ns, o.name
		}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: c.created(t), Annotations: requests(t)},
			Spec:       corev1.PodSpec{NodeName: rapid.SampledFrom(append(nodes, "")).Draw(t, "node")},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		}
		return []state.ObjectRef{c.put(p)}
	case 2: // a pod's annotations or phase change
		if p, ok := c.pick(t, kindPod).(*corev1.Pod); ok && !isLauncher(p) {
			q := p.DeepCopy()
			if rapid.Bool().Draw(t, "phase") {
				q.Status.Phase = corev1.PodSucceeded
			} else {
				q.Annotations = requests(t)
			}
			return []state.ObjectRef{c.put(q)}
		}
	case 3: // a pod is deleted
		if p, ok := c.pick(t, kindPod).(*corev1.Pod); ok {
			return []state.ObjectRef{c.del(refOf(p))}
		}
	case 4: // a VM is created, stopped
		nets := []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}}
		ifaces := []kubevirtv1.Interface{{Name: "default"}}
		if rapid.Bool().Draw(t, "blue") {
			nets = append(nets, kubevirtv1.Network{Name: "blue", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "tenant/blue"}}})
			ifaces = append(ifaces, kubevirtv1.Interface{Name: "blue"})
		}
		ann := requests(t)
		delete(ann, annNetworks)
		name := c.newName("vm")
		if o, ok := c.awaitedName(t, kindVirtualMachine); ok {
			name = o.name
		}
		vm := &kubevirtv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name, CreationTimestamp: c.created(t)},
			Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: ann},
				Spec: kubevirtv1.VirtualMachineInstanceSpec{
					Networks: nets, Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Interfaces: ifaces}},
				},
			}},
		}
		return []state.ObjectRef{c.put(vm)}
	case 5: // a VM starts: its VMI and launcher pod
		if vm, ok := c.pick(t, kindVirtualMachine).(*kubevirtv1.VirtualMachine); ok {
			if _, running := c.objects[state.ObjectRef{Kind: kindVirtualMachineInst, Namespace: vm.Namespace, Name: vm.Name}]; running || vm.Spec.Template == nil {
				return nil
			}
			node := rapid.SampledFrom(nodes).Draw(t, "node")
			vmi := &kubevirtv1.VirtualMachineInstance{
				ObjectMeta: metav1.ObjectMeta{Namespace: vm.Namespace, Name: vm.Name, CreationTimestamp: c.created(t),
					Annotations: vm.Spec.Template.ObjectMeta.Annotations,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: kindVirtualMachine, Name: vm.Name,
						Controller: new(true)}}},
				Spec:   *vm.Spec.Template.Spec.DeepCopy(),
				Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: node},
			}
			return []state.ObjectRef{c.put(vmi), c.put(c.launcher(vm.Name, c.newName("x"), node, vmi.CreationTimestamp))}
		}
	case 6: // a VM stops: its VMI and launcher pods go
		if vmi, ok := c.pick(t, kindVirtualMachineInst).(*kubevirtv1.VirtualMachineInstance); ok {
			refs := []state.ObjectRef{c.del(refOf(vmi))}
			for r, o := range c.objects {
				if p, ok := o.(*corev1.Pod); ok && isLauncher(p) && launcherVMI(p) == vmi.Name {
					refs = append(refs, c.del(r))
				}
			}
			return refs
		}
	case 7: // a migration starts: the migration and a target launcher
		if vmi, ok := c.pick(t, kindVirtualMachineInst).(*kubevirtv1.VirtualMachineInstance); ok {
			m := &kubevirtv1.VirtualMachineInstanceMigration{
				ObjectMeta: metav1.ObjectMeta{Namespace: vmi.Namespace, Name: c.newName("mig")},
				Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi.Name},
				Status:     kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: kubevirtv1.MigrationRunning},
			}
			target := rapid.SampledFrom(nodes).Draw(t, "target")
			q := vmi.DeepCopy()
			q.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{
				SourceNode: vmi.Status.NodeName, TargetNode: target, MigrationUID: types.UID("u" + m.Name),
			}
			return []state.ObjectRef{c.put(m), c.put(q), c.put(c.launcher(vmi.Name, c.newName("t"), target, c.created(t)))}
		}
	case 8: // a migration object goes
		if m, ok := c.pick(t, state.KindVirtualMachineInstanceMigration).(*kubevirtv1.VirtualMachineInstanceMigration); ok {
			return []state.ObjectRef{c.del(refOf(m))}
		}
	case 9: // a VM's template asks for something else while it runs
		if vm, ok := c.pick(t, kindVirtualMachine).(*kubevirtv1.VirtualMachine); ok {
			q := vm.DeepCopy()
			ann := requests(t)
			delete(ann, annNetworks)
			q.Spec.Template.ObjectMeta.Annotations = ann
			return []state.ObjectRef{c.put(q)}
		}
	case 10: // a VM object is deleted (its VMI may run on)
		if vm, ok := c.pick(t, kindVirtualMachine).(*kubevirtv1.VirtualMachine); ok {
			return []state.ObjectRef{c.del(refOf(vm))}
		}
	case 11: // a VMI without a VM
		node := rapid.SampledFrom(nodes).Draw(t, "node")
		vmi := &kubevirtv1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: c.newName("vmi"), CreationTimestamp: c.created(t), Annotations: requests(t)},
			Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Networks: []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}},
				Domain:   kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Interfaces: []kubevirtv1.Interface{{Name: "default"}}}},
			},
			Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: node},
		}
		return []state.ObjectRef{c.put(vmi), c.put(c.launcher(vmi.Name, c.newName("x"), node, vmi.CreationTimestamp))}
	case 12: // a NAD changes, is created or goes: not an owner's change
		if rapid.IntRange(0, 2).Draw(t, "red") == 0 {
			// red, which blue may take its switch from (the first NAD by
			// name to claim a switch has it).
			r := state.ObjectRef{Kind: kindNAD, Namespace: "tenant", Name: "red"}
			config := rapid.SampledFrom([]string{"",
				`{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.200.0/29"}`,
				`{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.200.0/28","logical_switch":"blue.tenant"}`,
			}).Draw(t, "red config")
			if config == "" {
				delete(c.objects, r)
				return []state.ObjectRef{r}
			}
			return []state.ObjectRef{c.put(&nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "red"},
				Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config}})}
		}
		nad := c.objects[state.ObjectRef{Kind: kindNAD, Namespace: "tenant", Name: "blue"}].(*nadv1.NetworkAttachmentDefinition).DeepCopy()
		nad.Spec.Config = rapid.SampledFrom([]string{
			`{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.100.0/29"}`,
			`{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.100.0/28"}`,
			`{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.100.0/28","logical_switch":"red.tenant"}`,
			`{"type":"ovn-k8s-cni-overlay","topology":"layer2"`,
		}).Draw(t, "nad config")
		return []state.ObjectRef{c.put(nad)}
	case 13: // a migration's target pod (and object), before the VMI's status names the target
		if vmi, ok := c.pick(t, kindVirtualMachineInst).(*kubevirtv1.VirtualMachineInstance); ok {
			target := rapid.SampledFrom(nodes).Draw(t, "target")
			refs := []state.ObjectRef{c.put(c.launcher(vmi.Name, c.newName("t"), target, c.created(t)))}
			if rapid.Bool().Draw(t, "migration object") {
				refs = append(refs, c.put(&kubevirtv1.VirtualMachineInstanceMigration{
					ObjectMeta: metav1.ObjectMeta{Namespace: vmi.Namespace, Name: c.newName("mig")},
					Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi.Name},
					Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: kubevirtv1.MigrationRunning,
						MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{SourceNode: vmi.Status.NodeName, TargetNode: target}},
				}))
			}
			return refs
		}
	case 14: // a Namespace names a switch, or another, or none; or only its labels change
		ns := rapid.SampledFrom([]string{"default", "tenant"}).Draw(t, "namespace")
		n := c.objects[state.ObjectRef{Kind: kindNamespace, Namespace: "", Name: ns}].(*corev1.Namespace).DeepCopy()
		if rapid.IntRange(0, 3).Draw(t, "labels only") == 0 {
			n.Labels = map[string]string{"serial": fmt.Sprint(c.serial)}
			c.serial++
		} else {
			n.Annotations = nil
			if sw := rapid.SampledFrom([]string{"", "sub1", "missing", "ovn-default", "sub1,ovn-default", " sub1 "}).Draw(t, "ns switch"); sw != "" {
				n.Annotations = map[string]string{NamespaceSwitchAnnotation: sw}
			}
		}
		return []state.ObjectRef{c.put(n)}
	case 15: // the StatefulSet is created, scaled, renumbered, being deleted or deleted
		ref := state.ObjectRef{Kind: kindStatefulSet, Namespace: "tenant", Name: "db"}
		set, ok := c.objects[ref].(*appsv1.StatefulSet)
		if !ok || rapid.IntRange(0, 4).Draw(t, "new set") == 0 {
			set = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "db"}}
		} else {
			set = set.DeepCopy()
		}
		switch rapid.IntRange(0, 4).Draw(t, "set change") {
		case 0:
			return []state.ObjectRef{c.del(ref)}
		case 1:
			set.DeletionTimestamp = new(metav1.NewTime(epoch))
		case 2:
			set.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: int32(rapid.IntRange(0, 1).Draw(t, "start"))}
		default:
			set.Spec.Replicas = new(int32(rapid.IntRange(0, 3).Draw(t, "replicas")))
		}
		return []state.ObjectRef{c.put(set)}
	case 16: // an IP object is written, naming its pod or another, or goes
		pod := rapid.SampledFrom([]string{"db-0", "db-1", "db-2", "pod1", "pod2", "vm3"}).Draw(t, "ip of")
		ns := rapid.SampledFrom([]string{"tenant", "default"}).Draw(t, "ip ns")
		name := pod + "." + ns
		if _, ok := c.objects[state.ObjectRef{Kind: state.KindIP, Namespace: "", Name: name}]; ok && rapid.Bool().Draw(t, "ip gone") {
			return []state.ObjectRef{c.del(state.ObjectRef{Kind: state.KindIP, Namespace: "", Name: name})}
		}
		names := pod
		if rapid.IntRange(0, 3).Draw(t, "ip names another") == 0 {
			names = rapid.SampledFrom([]string{"db-0", "pod1", "vm3"}).Draw(t, "ip names")
		}
		a := fmt.Sprintf("10.16.0.%d", rapid.IntRange(2, 16).Draw(t, "ip address"))
		return []state.ObjectRef{c.put(&kubeovnv1.IP{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: kubeovnv1.IPSpec{PodName: names, Namespace: ns, Subnet: rapid.SampledFrom([]string{"ovn-default", "sub1", ""}).Draw(t, "ip subnet"),
				IPAddress: a, V4IPAddress: a, MacAddress: fmt.Sprintf("00:00:00:53:1f:%02x", rapid.IntRange(0, 16).Draw(t, "ip mac"))}})}
	case 17: // the Subnet's spec changes (its namespaces, its exclude_ips, its CIDR), or it goes
		if rapid.IntRange(0, 3).Draw(t, "subnet gone") == 0 {
			return []state.ObjectRef{c.del(state.ObjectRef{Kind: kindSubnet, Namespace: "", Name: "sub1"})}
		}
		var nss []string
		if rapid.Bool().Draw(t, "bound") {
			nss = []string{"tenant"}
		}
		sub := subnet1(nss)
		switch rapid.IntRange(0, 3).Draw(t, "subnet spec") {
		case 1:
			sub.Spec.ExcludeIps = []string{"10.17.0.2..10.17.0.4"}
		case 2:
			sub.Spec.CIDRBlock = "10.17.0.0/27"
		case 3:
			sub.Spec.CIDRBlock = "10.16.0.0/27" // overlaps the default network: invalid
		}
		return []state.ObjectRef{c.put(sub)}
	case 18: // the IPAMClaim of a VM's blue network, which may be gone, is created, filled or deleted
		vm := fmt.Sprintf("vm%d", rapid.IntRange(0, 11).Draw(t, "claim vm"))
		r := state.ObjectRef{Kind: state.KindIPAMClaim, Namespace: "tenant", Name: ClaimName(vm, "blue")}
		if _, ok := c.objects[r]; ok && rapid.Bool().Draw(t, "delete claim") {
			return []state.ObjectRef{c.del(r)}
		}
		var ips []string
		if n := rapid.IntRange(0, 7).Draw(t, "claim ip"); n > 0 {
			ips = []string{fmt.Sprintf("192.168.100.%d/29", n)}
		}
		return []state.ObjectRef{c.put(&ipamclaimsv1alpha1.IPAMClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: r.Name,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: kindVirtualMachine, Name: vm, Controller: new(true)}}},
			Spec:   ipamclaimsv1alpha1.IPAMClaimSpec{Network: "blue"},
			Status: ipamclaimsv1alpha1.IPAMClaimStatus{IPs: ips},
		})}
	}
	return nil
}

// settled makes each port of ours in have that is no row yet (no UUID: a
// Build made it) a row of its own, as the NB's port view reads what a pass
// wrote, and settles x's result on have's rows, as run mode does once a
// pass applied its plan (Engine.Settle). It returns have.
func settled(x *Engine, have state.State) state.State {
	var names []string
	for name, p := range have.Ports.All() {
		if p.Owned() && p.UUID == "" {
			row := *p
			row.UUID = "uuid-" + name
			have.Ports.Set(name, &row)
			names = append(names, name)
		}
	}
	// An NB snapshot has its index (which Settle shares shards of).
	have.Index = state.IndexPorts(have.Ports)
	x.Settle(have, names)
	return have
}

// TestIncrementalMatchesBuild drives random event sequences and checks,
// after every event, that Engine.Update gives what a full Build of the
// same inputs and NB gives. Between events the NB is what the last result
// wanted (a pass applied it), except when an outside edit changes it or a
// pass fails; both make the next pass a full one, as run mode does.
func TestIncrementalMatchesBuild(t *testing.T) {
	var updates, fulls, behind, behindOnly, adoptions int
	whys := map[string]int{}
	rapid.Check(t, func(t *rapid.T) {
		c := newCluster(t)
		foreign := state.New(0)
		var x Engine
		r := x.Full(stored(t, c.inputs()), c.cfg, foreign)
		have := applied(foreign, r.Want)
		full := false // the next pass is a full one
		var unnamed, owed, late []state.ObjectRef
		for step := range rapid.IntRange(1, 40).Draw(t, "steps") {
			var changed []state.ObjectRef
			switch rapid.IntRange(0, 19).Draw(t, "what") {
			case 0: // an outside edit: a port of ours deleted, or an address taken
				if p := pickPort(t, have); p != nil && rapid.Bool().Draw(t, "delete") {
					have = have.Clone()
					have.Ports.Delete(p.Name)
				} else {
					i := rapid.IntRange(2, 16).Draw(t, "foreign ip")
					have = have.Clone()
					have.Ports.Set(fmt.Sprintf("foreign%d", i), &state.Port{Name: fmt.Sprintf("foreign%d", i),
						Addresses: []string{fmt.Sprintf("0a:00:00:00:00:%02x 10.16.0.%d", i, i)}})
				}
				full = true
			case 1: // kube-ovn makes the port of a pod about to be created (or, at
				// times, the pass fails: nothing applied, changes not kept)
				if rapid.Bool().Draw(t, "kube-ovn port") {
					if p := c.kubeOVNPort(t); have.Ports.Get(p.Name) == nil {
						have = have.Clone()
						have.Ports.Set(p.Name, p)
						full = true
						break
					}
				}
				c.event(t)
				x.Reset()
				continue
			case 2: // a deletion found by a relist: told of one pass late
				if p, ok := c.pick(t, kindPod).(*corev1.Pod); ok {
					unnamed = append(unnamed, c.del(refOf(p)))
				}
			default:
				changed = c.event(t)
				// A store may show a change before its handler ran and a
				// lookup may find it, named only by the next pass's take:
				// one change of several is told a pass late.
				if len(changed) > 1 && rapid.IntRange(0, 3).Draw(t, "told late") == 0 {
					i := rapid.IntRange(0, len(changed)-1).Draw(t, "late")
					late = append(late, changed[i])
					changed = slices.Delete(changed, i, i+1)
				}
			}
			// Last step's unnamed deletions and late changes are told now;
			// this step's next.
			changed = append(changed, owed...)
			behindOK := len(unnamed) > 0
			lateOK := len(late) > 0
			owed, unnamed = append(unnamed, late...), nil
			late = nil
			// The engine reads some pods, VMs and VMIs, at random, from
			// stores, as run mode's does; the Build it must match reads
			// them all from their lists.
			want := Build(c.inputs(), c.cfg, have)
			in := stored(t, c.inputs())
			if full {
				r = x.Full(in, c.cfg, have)
				full = false
			} else {
				var why Why
				last, _ := x.Want()
				note := Note{Version: uint64(step), Ports: []string{"noted"}}
				x.Note(note)
				r, why = x.Update(ObjectsOf(in), changed, c.cfg, have)
				if !why.Gave() {
					checkSpliced(t, step, last, r, note)
				}
				if why.Gave() {
					whys[why.Reason]++
					fulls++
					r = x.Full(in, c.cfg, have)
				} else {
					updates++
					for _, p := range r.Want.Ports.All() {
						if p.Adopt() != "" {
							adoptions++
						}
					}
				}
			}
			// Not told of a deletion, Update is behind until it is (the
			// next step checks it).
			if d := Mismatch(r, want); d != "" && !behindOK && !lateOK {
				t.Fatalf("step %d, after %v: incremental and full Build differ: %s", step, changed, d)
			}
			if behindOK && Mismatch(r, want) != "" {
				behind++
				if Behind(r, want) {
					behindOnly++
				}
			}
			for _, err := range invariants(have, r) {
				t.Fatalf("step %d, after %v: %v", step, changed, err)
			}
			if !behindOK && !lateOK {
				if d := carriedDiff(r, want); d != "" {
					t.Fatalf("step %d, after %v: what publishing reads differs from a full Build's: %s", step, changed, d)
				}
			}
			// The pass applied r, and the NB shows it to the next (the
			// port view's barrier), in rows of its own that the pass
			// settles on.
			have = settled(&x, applied(have, r.Want))
			if r.Again {
				// The pass computes again over what it applied.
				r = x.Full(in, c.cfg, have)
				have = settled(&x, applied(have, r.Want))
			}
		}
	})
	t.Logf("%d updates (%d ports adopted in them), %d full Builds instead: %v; %d behind an unnamed deletion, %d of them only by its ports",
		updates, adoptions, fulls, whys, behind, behindOnly)
	if updates == 0 {
		t.Fatal("no event was handled incrementally")
	}
}

// carriedDiff says how what publishing reads of the ports r has facts of
// (for an Update, those of the owners it rebuilt) — each port's carriers,
// in any order, and the kube-ovn annotations they carry — differs from
// what full, a full Build's result, says of them; "" when it does not.
func carriedDiff(r, full Result) string {
	carried := func(f PortFacts) string {
		carriers := slices.Clone(f.Pods)
		if f.VM != nil {
			carriers = append(carriers, *f.VM)
		}
		var out []string
		for _, c := range carriers {
			m := c.Annotations.Map()
			maps.DeleteFunc(m, func(k, _ string) bool { return KubeOVNSuffix(k) == "" })
			out = append(out, fmt.Sprintf("%s/%s %v %v", c.Namespace, c.Name, c.Live, m))
		}
		slices.Sort(out) // launchers come in no order
		return strings.Join(out, ", ")
	}
	want := map[string]string{}
	for f := range full.Published() {
		want[f.Port.Name] = carried(f)
	}
	for f := range r.Published() {
		if got := carried(f); got != want[f.Port.Name] {
			return fmt.Sprintf("port %s: carried by %s, want %s", f.Port.Name, got, want[f.Port.Name])
		}
	}
	return ""
}

// stored is in with the pods, VMs and VMIs past a random index of each
// in a store that makes a copy at each read (PodCopies, Copies).
func stored(t *rapid.T, in Inputs) Inputs {
	n := rapid.IntRange(0, len(in.Pods)).Draw(t, "pods not stored")
	in.Pods, in.StoredPods = in.Pods[:n], PodCopies(in.Pods[n:])
	n = rapid.IntRange(0, len(in.VirtualMachines)).Draw(t, "VMs not stored")
	in.VirtualMachines, in.StoredVMs = in.VirtualMachines[:n], Copies(in.VirtualMachines[n:])
	n = rapid.IntRange(0, len(in.VirtualMachineInstances)).Draw(t, "VMIs not stored")
	in.VirtualMachineInstances, in.StoredVMIs = in.VirtualMachineInstances[:n], Copies(in.VirtualMachineInstances[n:])
	return in
}

func pickPort(t *rapid.T, have state.State) *state.Port {
	var names []string
	for name, p := range have.Ports.All() {
		if p.Owned() {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return have.Ports.Get(rapid.SampledFrom(names).Draw(t, "port"))
}

// checkSpliced fails t unless r, an incremental result spliced from last,
// hands back note and names every port it does not share with last.
func checkSpliced(t *rapid.T, step int, last state.State, r Result, note Note) {
	sp, ok := r.Spliced()
	if !ok || sp.Noted.Version != note.Version || !slices.Equal(sp.Noted.Ports, note.Ports) {
		t.Fatalf("step %d: Spliced() = %+v, %v; want the note %+v", step, sp, ok, note)
	}
	named := map[string]bool{}
	for _, name := range sp.Ports {
		named[name] = true
	}
	for _, name := range unionKeys(last.Ports.Map(), r.Want.Ports.Map()) {
		if !named[name] && last.Ports.Get(name) != r.Want.Ports.Get(name) {
			t.Fatalf("step %d: port %s differs from the last result's, and Spliced().Ports does not name it", step, name)
		}
	}
}

// runningVM is a VM of namespace tenant on the pod network.
func runningVM(name string, created metav1.Time) *kubevirtv1.VirtualMachine {
	nets := []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}}
	ifaces := []kubevirtv1.Interface{{Name: "default"}}
	return &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name, CreationTimestamp: created},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Networks: nets, Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Interfaces: ifaces}}}}}}
}

// runningVMI is the VMI of runningVM(name), running on node.
func runningVMI(name, node string, created metav1.Time) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name, CreationTimestamp: created,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: kindVirtualMachine, Name: name, Controller: new(true)}}},
		Spec:   *runningVM(name, created).Spec.Template.Spec.DeepCopy(),
		Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: node},
	}
}

// vmOnNode1 returns a cluster in which VM tenant/vm1 runs on node-1 (its
// VM, VMI and launcher pod, created at created), an Engine holding
// its full result, and the NB that shows it applied.
func vmOnNode1(t *testing.T) (c *cluster, x *Engine, have state.State, created metav1.Time) {
	t.Helper()
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/24"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	c = &cluster{cfg: cfg, objects: map[state.ObjectRef]any{}}
	created = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c.put(runningVM("vm1", created))
	c.put(runningVMI("vm1", "node-1", created))
	c.put(c.launcher("vm1", "src", "node-1", created))
	x = &Engine{}
	have = applied(state.New(0), x.Full(c.inputs(), cfg, state.New(0)).Want)
	return c, x, have, created
}

// TestIncrementalLauncherSeenBeforeNamed: a migration's target launcher
// pod that a lookup found before any take named it (its handler had not
// run) and that is deleted before one does is still known as the VM's: the
// pass told of its deletion rebuilds the VM, whose port goes back to the
// source node alone.
func TestIncrementalLauncherSeenBeforeNamed(t *testing.T) {
	c, x, have, created := vmOnNode1(t)
	cfg := c.cfg
	step := func(what string, changed ...state.ObjectRef) string {
		t.Helper()
		in := c.inputs()
		r, why := x.Update(ObjectsOf(in), changed, cfg, have)
		if why.Gave() {
			t.Fatalf("%s: Update gave up: %s", what, why)
		}
		if d := Mismatch(r, Build(in, cfg, have)); d != "" {
			t.Fatalf("%s: incremental and full Build differ: %s", what, d)
		}
		have = applied(have, r.Want)
		return r.Want.Ports.Get("vm1.tenant").RequestedChassis
	}
	m := &kubevirtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "mig"},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: "vm1"},
		Status:     kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: kubevirtv1.MigrationRunning},
	}
	target := c.launcher("vm1", "tgt", "node-2", created)
	// The migration is told; its target pod is in the store, not told yet.
	c.put(target)
	if got := step("migration created", c.put(m)); got != "node-1,node-2" {
		t.Fatalf("migrating: requested-chassis %q, want node-1,node-2", got)
	}
	step("migration deleted", c.del(refOf(m)))
	// The target pod is deleted; the take names it (created, deleted) now.
	if got := step("target deleted", c.del(refOf(target))); got != "node-1" {
		t.Fatalf("after the target went: requested-chassis %q, want node-1", got)
	}
}

// TestIncrementalNameReusedForAnotherVM: an object is deleted and one of
// the same name created for another VM (a migration, a launcher pod, a
// VMI's owner), and a pass finds the new one through an index, under the
// other VM, before a take names it. When a take names it, the VM it was of
// is rebuilt too: its port drops the node the old object put there. (The
// index lookup recorded the object as the other VM's alone, and the port
// kept requested-chassis "node-1,node-2" until the next full pass.)
func TestIncrementalNameReusedForAnotherVM(t *testing.T) {
	for _, kind := range []string{"migration", "launcher"} {
		t.Run(kind, func(t *testing.T) {
			c, x, have, created := vmOnNode1(t)
			cfg := c.cfg
			c.put(runningVM("vm2", created))
			c.put(runningVMI("vm2", "node-3", created))
			c.put(c.launcher("vm2", "src", "node-3", created))
			update := func(what string, late bool, changed ...state.ObjectRef) string {
				t.Helper()
				in := c.inputs()
				r, why := x.Update(ObjectsOf(in), changed, cfg, have)
				if why.Gave() {
					t.Fatalf("%s: Update gave up: %s", what, why)
				}
				if d := Mismatch(r, Build(in, cfg, have)); d != "" && !late {
					t.Fatalf("%s: incremental and full Build differ: %s", what, d)
				}
				have = applied(have, r.Want)
				return r.Want.Ports.Get("vm1.tenant").RequestedChassis
			}
			update("vm2 started", false, refOf(c.objects[state.ObjectRef{Kind: kindVirtualMachine, Namespace: "tenant", Name: "vm2"}]),
				state.ObjectRef{Kind: kindVirtualMachineInst, Namespace: "tenant", Name: "vm2"}, state.ObjectRef{Kind: kindPod, Namespace: "tenant", Name: "virt-launcher-vm2-src"})
			// vm1 migrates to node-2: a migration object and the target pod.
			mig := func(vmi, target string) *kubevirtv1.VirtualMachineInstanceMigration {
				return &kubevirtv1.VirtualMachineInstanceMigration{
					ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "mig"},
					Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi},
					Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: kubevirtv1.MigrationRunning,
						MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{TargetNode: target}},
				}
			}
			var reused state.ObjectRef
			switch kind {
			case "migration":
				reused = c.put(mig("vm1", "node-2"))
			case "launcher":
				reused = c.put(c.launcher("vm1", "tgt", "node-2", created))
			}
			if got := update("vm1 migrating", false, reused); got != "node-1,node-2" {
				t.Fatalf("vm1 migrating: requested-chassis %q, want node-1,node-2", got)
			}
			// The object goes and one of its name comes for vm2; vm2's VMI
			// changes, and the pass told of it finds the new object, not
			// told yet, through vm2's index.
			switch kind {
			case "migration":
				c.put(mig("vm2", "node-1"))
			case "launcher":
				p := c.launcher("vm2", "x", "node-1", created)
				p.Name = reused.Name
				c.put(p)
			}
			vmi2 := c.objects[state.ObjectRef{Kind: kindVirtualMachineInst, Namespace: "tenant", Name: "vm2"}].(*kubevirtv1.VirtualMachineInstance).DeepCopy()
			vmi2.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{SourceNode: "node-3", TargetNode: "node-1"}
			update("vm2's VMI told", true, c.put(vmi2))
			// The take names the reused object: vm1 is rebuilt too.
			if got := update(kind+" told", false, reused); got != "node-1" {
				t.Errorf("after vm1's %s went: requested-chassis %q, want node-1", kind, got)
			}
		})
	}
}

// TestIncrementalLauncherStoredMidUpdate: a migration is deleted, and its
// target launcher pod created and deleted, while one Update runs: the
// pod's store takes it between two of the Update's lookups. Whatever that
// Update built from, the pod it may have seen is known as the VM's: the
// pass told of the pod's deletion rebuilds the VM, whose port goes back to
// the source node alone. (The Update looked a changed pod up twice; the
// second lookup found it, Build used it, and nothing remembered whose it
// was: the port kept both nodes until the next full pass.)
func TestIncrementalLauncherStoredMidUpdate(t *testing.T) {
	c, x, have, created := vmOnNode1(t)
	cfg := c.cfg
	update := func(objs Objects, changed ...state.ObjectRef) Result {
		t.Helper()
		r, why := x.Update(objs, changed, cfg, have)
		if why.Gave() {
			t.Fatalf("Update gave up: %s", why)
		}
		have = applied(have, r.Want)
		return r
	}
	m := &kubevirtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "mig"},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: "vm1"},
		Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{Phase: kubevirtv1.MigrationRunning,
			MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{SourceNode: "node-1", TargetNode: "node-2"}},
	}
	c.put(m)
	if got := update(ObjectsOf(c.inputs()), refOf(m)).Want.Ports.Get("vm1.tenant").RequestedChassis; got != "node-1,node-2" {
		t.Fatalf("migrating: requested-chassis %q, want node-1,node-2", got)
	}
	// The take names the migration and the target pod, both in flight. The
	// pod's first lookup misses it, the next ones find it; the index no
	// longer holds it (deleted by then), nor the migration.
	target := c.launcher("vm1", "tgt", "node-2", created)
	c.del(refOf(m))
	update(&storing{Objects: ObjectsOf(c.inputs()), pod: target}, refOf(m), refOf(target))
	// The pod's deletion is told.
	r := update(ObjectsOf(c.inputs()), refOf(target))
	if got := r.Want.Ports.Get("vm1.tenant").RequestedChassis; got != "node-1" {
		t.Errorf("after the target went: requested-chassis %q, want node-1", got)
	}
	if d := Mismatch(r, Build(c.inputs(), cfg, have)); d != "" {
		t.Errorf("incremental and full Build differ: %s", d)
	}
}

// storing is Objects over a store that takes pod between the first
// lookup of it and the next.
type storing struct {
	Objects
	pod    *corev1.Pod
	looked bool
}

func (s *storing) Pod(ns, name string) *corev1.Pod {
	if ns != s.pod.Namespace || name != s.pod.Name {
		return s.Objects.Pod(ns, name)
	}
	if !s.looked {
		s.looked = true
		return nil
	}
	return s.pod
}

// An incremental pass keeps, for the ports it builds, about what a full
// Build keeps for them, not chunks sized for a full Build: a run that adds
// and updates pods one pass at a time holds about the memory a full Build
// of the same inputs holds. (Each pass once kept 64-entry chunks of port
// specs and owners for its one port: 43 KB a pod until the next full
// pass, 15 times the full state after the 400 passes here.)
func TestIncrementalKeepsWhatFullKeeps(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	var in Inputs
	for i := range 500 {
		in.Pods = append(in.Pods, pod("default", fmt.Sprintf("base-%d", i), nil))
	}
	var x Engine
	last := x.Full(in, cfg, state.State{})
	have := nbOf(state.State{}, last.Want)
	const passes = 400
	for i := range passes {
		p := pod("default", fmt.Sprintf("new-%d", i), nil)
		changed := []state.ObjectRef{{Kind: kindPod, Namespace: p.Namespace, Name: p.Name}}
		if i%4 == 3 { // an update: the pod scheduled again
			q := *in.Pods[len(in.Pods)-1]
			q.Spec.NodeName = "node-2"
			in.Pods[len(in.Pods)-1] = &q
			changed = []state.ObjectRef{{Kind: kindPod, Namespace: q.Namespace, Name: q.Name}}
		} else {
			in.Pods = append(in.Pods, p)
		}
		var why Why
		if last, why = x.Update(ObjectsOf(in), changed, cfg, have); why.Gave() {
			t.Fatalf("pass %d gave up: %s", i, why)
		}
		have = nbOf(have, last.Want)
	}
	if m := Mismatch(last, Build(in, cfg, have)); m != "" {
		t.Fatalf("incremental and full results differ: %s", m)
	}
	// All against the same NB, which stays. The ports the passes built
	// are copies of its rows (nbOf copies), as the NB's are, and a full
	// Build makes a port that is the same as its row that row itself
	// (write): the incremental state is held to a full Build's without
	// that, and a full Build's with it is measured beside both.
	incremental := freedBy(func() { x.Reset(); last = Result{} })
	fullOf := func(share bool) int64 {
		shareRows = share
		defer func() { shareRows = true }()
		var full Engine
		full.Full(in, cfg, have)
		return freedBy(full.Reset)
	}
	whole, shared := fullOf(false), fullOf(true)
	runtime.KeepAlive(have.Ports)
	t.Logf("%d ports: incremental state %d KB, full %d KB, full sharing the NB's rows %d KB", len(in.Pods), incremental/1024, whole/1024, shared/1024)
	if incremental > whole*3/2 {
		t.Errorf("the incremental state holds %d KB after %d passes, a full Build of the same inputs %d KB", incremental/1024, passes, whole/1024)
	}
	if shared > whole*3/4 {
		t.Errorf("a full Build sharing the NB's rows holds %d KB, without %d KB: want at most 3/4", shared/1024, whole/1024)
	}
}

// nbOf is want as an NB that held have and applied want holds it: rows of
// its own, those that did not change kept from have, as the NB's
// snapshots share the rows no transaction changed.
func nbOf(have, want state.State) state.State {
	nb := want.Clone()
	for name, p := range want.Ports.All() {
		if h := have.Ports.Get(name); h != nil && h.Equal(p) {
			nb.Ports.Set(name, h)
			continue
		}
		c := *p
		nb.Ports.Set(name, &c)
	}
	nb.Index = state.IndexPorts(nb.Ports)
	return nb
}

// freedBy is the live heap that drop lets go of.
func freedBy(drop func()) int64 {
	live := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := live()
	drop()
	return before - live()
}

// TestIncrementalNoAddressFromRowLastPassDeletes: a pending pod asks for
// 10.16.0.5; a port that is not ours takes that address, so the pass
// removes the pod's port until the conflict ends. The pod is then
// scheduled. A port whose owner runs keeps its address beside a port that
// is not ours — but this one is no longer the pod's: the last pass deleted
// it. The pass must not create it again with the address the other port
// holds: the request fails with a Problem, as a full Build of the NB after
// the removal has it.
func TestIncrementalNoAddressFromRowLastPassDeletes(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/24"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{cfg: cfg, objects: map[state.ObjectRef]any{}}
	db := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "db-0",
		Annotations: map[string]string{DefaultIPAnnotation: "10.16.0.5"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	ref := c.put(db)
	var x Engine
	r := x.Full(c.inputs(), cfg, state.New(0))
	have := applied(state.New(0), r.Want)
	if p := have.Ports.Get("db-0.tenant"); p == nil || !strings.Contains(p.Addresses[0], "10.16.0.5") {
		t.Fatalf("db-0.tenant before: %v", p)
	}
	// Someone else's port takes the address: a full pass removes ours (the
	// pod does not run).
	have = have.Clone()
	have.Ports.Set("foreign", &state.Port{Name: "foreign", Addresses: []string{"0a:00:00:00:00:05 10.16.0.5"}})
	r = x.Full(c.inputs(), cfg, have)
	if r.Want.Ports.Get("db-0.tenant") != nil {
		t.Fatalf("a pending pod's port kept an address held by a port that is not ours: %v", r.Want.Ports.Get("db-0.tenant"))
	}
	removed := r.Want
	// The pod is scheduled.
	db = db.DeepCopy()
	db.Spec.NodeName = "node-1"
	c.put(db)
	nb := applied(have, removed)
	r, why := x.Update(ObjectsOf(c.inputs()), []state.ObjectRef{ref}, cfg, nb)
	if why.Gave() {
		t.Fatalf("Update gave up: %s", why)
	}
	for _, err := range invariants(nb, r) {
		t.Error(err)
	}
	if p := r.Want.Ports.Get("db-0.tenant"); p != nil {
		t.Errorf("db-0.tenant wanted with %q, which port \"foreign\" holds", p.Addresses)
	}
	if !slices.ContainsFunc(r.Problems, func(p Problem) bool { return p.Name == "db-0" && p.Reason == "AddressConflict" }) {
		t.Errorf("no AddressConflict on db-0: %v", r.Problems)
	}
	if d := Mismatch(r, Build(c.inputs(), cfg, nb)); d != "" {
		t.Error(d)
	}
}

// TestSubnetWriteOfNothingReadRebuildsNobody: kube-ovn writes a Subnet's
// status at every allocation; such a write still in flight when changes
// are taken is named as changed. Named with a spec that reads as the last
// result's (its namespaces and default aside, which place only new ports),
// the Subnet rebuilds no owner; its CIDR's exclusions changed, it rebuilds
// those on its switch.
func TestSubnetWriteOfNothingReadRebuildsNobody(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	in := Inputs{Subnets: []*kubeovnv1.Subnet{{ObjectMeta: metav1.ObjectMeta{Name: "sub1"},
		Spec: kubeovnv1.SubnetSpec{Protocol: "IPv4", CIDRBlock: "10.20.0.0/16", Namespaces: []string{"tenant"}}}}}
	for i := range 100 {
		in.Pods = append(in.Pods, pod("tenant", fmt.Sprintf("p%d", i), nil))
	}
	for i := range 400 { // on the default network: the Subnet's are a fifth of the owners
		in.Pods = append(in.Pods, pod("default", fmt.Sprintf("q%d", i), nil))
	}
	var x Engine
	r := x.Full(in, cfg, state.New(0))
	have := applied(state.New(0), r.Want)
	if len(r.Problems) > 0 || r.Want.Ports.Get("p0.tenant").Switch != "sub1" {
		t.Fatalf("setup: problems %v, p0.tenant %v", r.Problems, r.Want.Ports.Get("p0.tenant"))
	}
	changed := []state.ObjectRef{{Kind: kindSubnet, Name: "sub1"}}
	for _, c := range []struct {
		what    string
		edit    func(*kubeovnv1.SubnetSpec)
		rebuilt int
	}{
		{"nothing read (a status write)", func(*kubeovnv1.SubnetSpec) {}, 0},
		{"spec.namespaces", func(sp *kubeovnv1.SubnetSpec) { sp.Namespaces = append(sp.Namespaces, "other") }, 0},
		{"spec.excludeIps", func(sp *kubeovnv1.SubnetSpec) { sp.ExcludeIps = []string{"10.20.200.1"} }, 100},
	} {
		s := *in.Subnets[0]
		c.edit(&s.Spec)
		in.Subnets = []*kubeovnv1.Subnet{&s}
		r, why := x.Update(ObjectsOf(in), changed, cfg, have)
		if why.Gave() {
			t.Fatalf("%s: Update gave up: %s", c.what, why)
		}
		if len(r.rebuilt) != c.rebuilt {
			t.Errorf("%s: %d owners rebuilt, want %d", c.what, len(r.rebuilt), c.rebuilt)
		}
		if d := Mismatch(r, Build(in, cfg, have)); d != "" {
			t.Errorf("%s: %s", c.what, d)
		}
		have = applied(have, r.Want)
	}
}

// TestIncrementalAdoptsInPlace: with --adopt kube-ovn, a pod created after
// the last full pass finds kube-ovn's port of its name and takes it over
// in place, in an Update as in a full Build: same addresses.
func TestIncrementalAdoptsInPlace(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Adopt = state.VendorKubeOVN
	in := Inputs{Pods: []*corev1.Pod{pod("default", "a", nil)}}
	var x Engine
	r := x.Full(in, cfg, state.New(0))
	have := applied(state.New(0), r.Want)
	have.Switches["ovn-default"] = &state.Switch{Name: "ovn-default", UUID: "s1", Owner: "ovn-sync", Network: "default", Subnet: "10.16.0.0/16"}
	have.Ports.Set("web.default", (&state.Port{Name: "web.default", UUID: "k1",
		Addresses: []string{"0a:58:0a:10:00:63 10.16.0.99"}, PortSecurity: []string{"0a:58:0a:10:00:63 10.16.0.99"}}).
		SetRare(&state.Rare{Vendor: state.VendorKubeOVN, VendorSwitch: "ovn-default"}))
	r = x.Full(in, cfg, have)
	in.Pods = append(in.Pods, pod("default", "web", nil))
	r, why := x.Update(ObjectsOf(in), []state.ObjectRef{{Kind: kindPod, Namespace: "default", Name: "web"}}, cfg, have)
	if why.Gave() {
		t.Fatalf("Update gave up: %s", why)
	}
	full := Build(in, cfg, have)
	p := r.Want.Ports.Get("web.default")
	if p == nil || p.Adopt() != state.VendorKubeOVN || !slices.Equal(p.Addresses, []string{"0a:58:0a:10:00:63 10.16.0.99"}) {
		t.Errorf("web.default after the update: %+v; want kube-ovn's adopted with its addresses (full Build: %+v)", p, full.Want.Ports.Get("web.default"))
	}
	if d := Mismatch(r, full); d != "" {
		t.Error(d)
	}
}

// TestIncrementalNeedsTheNBToShowItsResult: the engine takes the NB to show
// its last result (the port view's barrier shows a pass its own writes).
// A pass that withholds a delete breaks that: the NB keeps a row of ours
// the result deletes. Pod a holds 10.16.0.5 and is deleted while a source
// has not synced (its port's delete withheld); pod b then asks for
// 10.16.0.5. A full Build of that NB defers b until a's row is gone
// (Again); an Update, which does not rebuild a, takes a's row as kept and
// refuses b's request. They differ: run mode therefore builds in full
// after a pass that withheld deletes (reconcile's TestLoopWithholdsDeletes).
func TestIncrementalNeedsTheNBToShowItsResult(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/24"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	a := pod("default", "a", map[string]string{DefaultIPAnnotation: "10.16.0.5"})
	b := pod("default", "b", map[string]string{DefaultIPAnnotation: "10.16.0.5"})
	var x Engine
	r := x.Full(Inputs{Pods: []*corev1.Pod{a}}, cfg, state.New(0))
	have := applied(state.New(0), r.Want)
	// a is deleted: the pass wants its port gone, and withholds the delete.
	r, why := x.Update(ObjectsOf(Inputs{}), []state.ObjectRef{refOf(a)}, cfg, have)
	if why.Gave() || r.Want.Ports.Get("a.default") != nil {
		t.Fatalf("a deleted: Update gave up (%s) or kept a's port", why)
	}
	in := Inputs{Pods: []*corev1.Pod{b}}
	r, why = x.Update(ObjectsOf(in), []state.ObjectRef{refOf(b)}, cfg, have)
	if why.Gave() {
		t.Fatalf("b created: Update gave up: %s", why)
	}
	full := Build(in, cfg, have)
	if !full.Again {
		t.Errorf("a full Build over the NB that kept a's row: Again %v, want b to wait for the row to go", full.Again)
	}
	if Mismatch(r, full) == "" {
		t.Errorf("an Update over an NB that does not show its last result agrees with a full Build: the rule that resets the engine after a pass withholding deletes is not needed")
	}
}

// TestEngineKeepsNoPodItRead: the engine and its result keep, of a plain
// pod or a VirtualMachine they read, a Carrier (what publishing reads), of
// a virt-launcher pod a launcher (its Carrier and what chassis reads), and
// of a VMI nothing: not the API object. A pass reads objects made from the
// informers' compact stores, and keeping them would hold a Pod's size for
// every owner from pass to pass. Every pod, VM, VMI and launcher the pass
// read is collected once the inputs are dropped, while the engine and the
// result live on and still say what to publish where.
func TestEngineKeepsNoPodItRead(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	var freed atomic.Int64
	in := Inputs{}
	for i := range n {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: fmt.Sprintf("web-%d", i), UID: types.UID(fmt.Sprint("uid-", i)),
			Annotations: map[string]string{"team": "a", "ovn.kubernetes.io/routed": "true"}},
			Spec: corev1.PodSpec{NodeName: "node-1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		runtime.SetFinalizer(p, func(*corev1.Pod) { freed.Add(1) })
		in.Pods = append(in.Pods, p)
		vm := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: fmt.Sprintf("vm-%d", i)},
			Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}}}
		runtime.SetFinalizer(vm, func(*kubevirtv1.VirtualMachine) { freed.Add(1) })
		in.VirtualMachines = append(in.VirtualMachines, vm)
		if i%2 == 0 {
			vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: vm.Name, UID: types.UID("vmi-" + vm.Name)},
				Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: "node-2"}}
			runtime.SetFinalizer(vmi, func(*kubevirtv1.VirtualMachineInstance) { freed.Add(1) })
			in.VirtualMachineInstances = append(in.VirtualMachineInstances, vmi)
			l := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "virt-launcher-" + vm.Name + "-abcde", UID: types.UID("uid-l-" + vm.Name),
				Labels:      map[string]string{"kubevirt.io": "virt-launcher", "vm.kubevirt.io/name": vm.Name},
				Annotations: map[string]string{"kubevirt.io/domain": vm.Name, "ovn.kubernetes.io/routed": "true"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: vm.Name,
					UID: vmi.UID, Controller: new(true)}}},
				Spec: corev1.PodSpec{NodeName: "node-2"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
			runtime.SetFinalizer(l, func(*corev1.Pod) { freed.Add(1) })
			in.Pods = append(in.Pods, l)
		}
	}
	objects := 2*n + 2*(n/2) // pods and VMs, VMIs and launchers
	var x Engine
	full := x.Full(in, cfg, state.New(0))
	changed := []state.ObjectRef{{Kind: state.KindPod, Namespace: "tenant", Name: "web-0"}}
	update, why := x.Update(ObjectsOf(in), changed, cfg, applied(state.New(0), full.Want))
	if why.Gave() {
		t.Fatalf("Update gave up: %s", why)
	}
	in = Inputs{}
	// Finalizers run on a goroutine of their own, after a collection.
	for deadline := time.Now().Add(10 * time.Second); freed.Load() < int64(objects) && time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := freed.Load(); got != int64(objects) {
		t.Errorf("%d of the %d pods, VMs, VMIs and launchers the passes read were collected; the engine or its result keeps the rest", got, objects)
	}
	// Published is Ports without what says why.
	facts, published := full.Ports(), slices.Collect(full.Published())
	for i := range facts {
		facts[i].Chassis, facts[i].Addresses = "", nil
	}
	if !reflect.DeepEqual(facts, published) {
		t.Errorf("Published() differs from Ports() without Chassis and Addresses")
	}
	pods, vms, bound := 0, 0, 0
	for _, f := range full.Ports() {
		pods += len(f.Pods)
		if f.VM != nil && f.VM.Live {
			vms++
		}
		if f.Port.RequestedChassis == "node-2" && len(f.Pods) == 1 && f.Pods[0].Node == "node-2" && f.Pods[0].Live {
			bound++
		}
	}
	if pods != n+n/2 || vms != n || bound != n/2 {
		t.Errorf("the full result names %d pods and %d VMs to publish to, %d VMs bound where their launcher runs; want %d, %d and %d",
			pods, vms, bound, n+n/2, n, n/2)
	}
	if f := update.Ports(); len(f) != 1 || len(f[0].Pods) != 1 || f[0].Pods[0].Name != "web-0" || !reflect.DeepEqual(f[0].Pods[0].Annotations.Map(), map[string]string{"ovn.kubernetes.io/routed": "true"}) {
		t.Errorf("the update's facts = %+v, want web-0's port carried by web-0 as read, with its kube-ovn annotations", f)
	}
	runtime.KeepAlive(&x)
}

// TestUpdateGivesUpOnDrift: pod a holds 10.16.0.2 (its annotations say
// so); another writer deletes a's row; pod b is created and a pass for b
// alone starts before the drift's own pass. The Update must not hand b
// the address a's row held: it gives up (ReasonDrift), and the full Build
// gives a its address back from its annotations and b the next one.
func TestUpdateGivesUpOnDrift(t *testing.T) {
	cfg, err := NewConfig("ovn-default", []string{"10.16.0.0/24"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name string, ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "churn", Name: name, UID: types.UID("uid-" + name), Annotations: ann},
			Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	in := Inputs{Pods: []*corev1.Pod{pod("a", nil)}}
	var x Engine
	r := x.Full(in, cfg, state.New(0))
	nb := applied(state.New(0), r.Want)
	a := nb.Ports.Get("a.churn")
	if a == nil || !strings.Contains(a.Addresses[0], "10.16.0.2") {
		t.Fatalf("a's port = %v, want 10.16.0.2", a)
	}
	// Its address published, as run mode does after the pass.
	in.Pods[0] = pod("a", map[string]string{DefaultIPAnnotation: "10.16.0.2", "ovn.kubernetes.io/allocated": "true"})
	r, why := x.Update(ObjectsOf(in), []state.ObjectRef{{Kind: state.KindPod, Namespace: "churn", Name: "a"}}, cfg, nb)
	if why.Gave() {
		t.Fatalf("Update after the publication gave up: %s", why)
	}
	nb = applied(nb, r.Want)
	// Another writer deletes a's row; b is created.
	lost := nb.Clone()
	lost.Ports.Delete("a.churn")
	lost.Index = state.IndexPorts(lost.Ports)
	in.Pods = append(in.Pods, pod("b", nil))
	_, why = x.Update(ObjectsOf(in), []state.ObjectRef{{Kind: state.KindPod, Namespace: "churn", Name: "b"}}, cfg, lost)
	if why.Reason != ReasonDrift {
		t.Fatalf("Update after another writer deleted a's row: why %q, want %q", why, ReasonDrift)
	}
	r = x.Full(in, cfg, lost)
	if p := r.Want.Ports.Get("a.churn"); p == nil || !strings.Contains(p.Addresses[0], "10.16.0.2 ") && !strings.HasSuffix(p.Addresses[0], " 10.16.0.2") {
		t.Errorf("a's port after the full Build = %v, want 10.16.0.2 again", p)
	}
	if p := r.Want.Ports.Get("b.churn"); p == nil || strings.Contains(p.Addresses[0], " 10.16.0.2") {
		t.Errorf("b's port = %v, want an address other than a's", p)
	}
}

// links keep an object's groups as relations do: each once, in the order
// found, all of them given and forgotten by a take.
func TestLinks(t *testing.T) {
	l := newLinks()
	a, b := nsName{"shop", "virt-launcher-db-x7k2p"}, nsName{"shop", "virt-launcher-web-q8d4w"}
	l.add(a, "db")
	l.add(a, "db")
	l.add(b, "web")
	l.add(a, "db-new")
	l.add(a, "db")
	if got := l.take(a); !slices.Equal(got, []string{"db", "db-new"}) {
		t.Errorf("take(a) = %q, want [db db-new]", got)
	}
	if got := l.take(a); got != nil {
		t.Errorf("a second take(a) = %q, want none", got)
	}
	l.add(a, "db-new")
	if got := l.take(a); !slices.Equal(got, []string{"db-new"}) {
		t.Errorf("take(a) after a take = %q, want [db-new]", got)
	}
	if got := l.take(b); !slices.Equal(got, []string{"web"}) {
		t.Errorf("take(b) = %q, want [web]", got)
	}
	if len(l.first) != 0 || len(l.more) != 0 {
		t.Errorf("links hold %v and %v after every take", l.first, l.more)
	}
}
