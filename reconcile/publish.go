package reconcile

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/state"
)

// Kinds of objects publications go to.
const (
	KindPod            = state.KindPod
	KindVirtualMachine = state.KindVirtualMachine
)

// Publication is the annotations one object needs changed so that it
// carries its ports' addresses.
type Publication struct {
	Kind            string // KindPod or KindVirtualMachine
	Namespace, Name string
	// UID is the precondition of the patch: it must not land on a new
	// object of the same name.
	UID types.UID
	// ResourceVersion is the version of the object the publication was
	// computed from.
	ResourceVersion string
	Set             map[string]string
}

// Publications computes, purely from Build's facts, the annotation changes
// that make every live pod and every VirtualMachine carry its ports'
// addresses: a plain pod its own, a virt-launcher pod and a VM the VM's
// (during a migration both launcher pods carry the same ones: the port is
// the VM's). A VM's annotations are the durable record of its addresses,
// read back by every pass (see desired.SourceRecord). A port without IPs (a
// network without IPAM) publishes its MAC alone. Scheduled pods also get
// desired.AnnRoutedSuffix, as kube-ovn marks a pod once it is scheduled
// (a VirtualMachine has no interface to plumb, its virt-launcher pods do):
// the caller publishes only after a pass that committed, so the port is in
// the NB. Only keys whose value differs are set; objects that need nothing
// are left out. Keys of ports no longer wanted are not removed: a node
// agent may still be tearing the interface down. The result is sorted by
// kind, namespace and name.
func Publications(r desired.Result) []Publication {
	type target struct {
		kind, ns, name string
	}
	byTarget := map[target]*Publication{}
	var order []target
	add := func(kind, ns, name string, uid types.UID, rv string, cur map[string]string, f *desired.PortFacts, routed bool) {
		t := target{kind, ns, name}
		p := byTarget[t]
		if p == nil {
			p = &Publication{Kind: kind, Namespace: ns, Name: name, UID: uid, ResourceVersion: rv, Set: map[string]string{}}
			byTarget[t] = p
			order = append(order, t)
		}
		set := func(k, v string) {
			if c, ok := cur[k]; !ok || c != v {
				p.Set[k] = v
			}
		}
		for k, v := range annotations(f) {
			set(k, v)
		}
		if routed {
			set(f.Provider+desired.AnnRoutedSuffix, "true")
		}
	}
	for _, f := range r.Ports() {
		if f.Provider == "" || len(f.Port.Addresses) == 0 || strings.TrimSpace(f.Port.Addresses[0]) == "" {
			continue
		}
		for _, pod := range f.Pods {
			if pod.Live {
				add(KindPod, pod.Namespace, pod.Name, types.UID(pod.UID), pod.ResourceVersion, pod.Annotations, &f, pod.Node != "")
			}
		}
		if vm := f.VM; vm != nil && vm.Live {
			add(KindVirtualMachine, vm.Namespace, vm.Name, types.UID(vm.UID), vm.ResourceVersion, vm.Annotations, &f, false)
		}
	}
	var out []Publication
	for _, t := range order {
		if p := byTarget[t]; len(p.Set) > 0 {
			out = append(out, *p)
		}
	}
	slices.SortFunc(out, func(a, b Publication) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

// annotations renders the kube-ovn annotations of one port: the IP key only
// when it holds an IP.
func annotations(f *desired.PortFacts) map[string]string {
	words := strings.Fields(f.Port.Addresses[0])
	k := f.Provider // each key is the provider and a suffix
	out := map[string]string{
		k + desired.AnnAllocatedSuffix:     "true",
		k + desired.AnnMACSuffix:           words[0],
		k + desired.AnnLogicalSwitchSuffix: f.Port.Switch,
	}
	if len(words) > 1 {
		out[k+desired.AnnIPSuffix] = strings.Join(words[1:], ",")
	}
	if f.CIDR != "" {
		out[k+desired.AnnCIDRSuffix] = f.CIDR
	}
	if f.Gateway != "" {
		out[k+desired.AnnGatewaySuffix] = f.Gateway
	}
	return out
}
