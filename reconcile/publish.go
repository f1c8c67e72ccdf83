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
	// Set are the annotations to set, by key. A slice, not a map: a first
	// start on pods that carry none holds a publication a pod while the
	// patches wait, and a map of seven is half as big again.
	Set []Annotation
}

// Annotation is one annotation a publication sets.
type Annotation struct{ Key, Value string }

// Get returns the value the publication sets key to, if it sets it.
func (p *Publication) Get(key string) (string, bool) {
	for _, a := range p.Set {
		if a.Key == key {
			return a.Value, true
		}
	}
	return "", false
}

// Annotations returns the annotations the publication sets, as a map.
func (p *Publication) Annotations() map[string]string {
	m := make(map[string]string, len(p.Set))
	for _, a := range p.Set {
		m[a.Key] = a.Value
	}
	return m
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
	// at indexes, in out, the objects that need something set.
	at := map[target]int{}
	var out []Publication
	keys := map[string]*[numAnn]string{}
	add := func(kind, ns, name string, uid types.UID, rv string, cur desired.Annotations, keys *[numAnn]string, vals *portAnnotations, routed bool) {
		t := target{kind, ns, name}
		i, found := at[t]
		for a := range numAnn {
			v, ok := vals.v[a], vals.has[a]
			if a == annRouted {
				v, ok = "true", routed
			}
			if !ok {
				continue
			}
			if c, ok := cur.Get(keys[a]); ok && c == v {
				continue
			}
			if !found {
				i, found = len(out), true
				at[t] = i
				out = append(out, Publication{Kind: kind, Namespace: ns, Name: name, UID: uid, ResourceVersion: rv, Set: make([]Annotation, 0, numAnn)})
			}
			out[i].set(keys[a], v)
		}
	}
	for f := range r.Published() {
		if f.Provider == "" || len(f.Port.Addresses) == 0 || strings.TrimSpace(f.Port.Addresses[0]) == "" {
			continue
		}
		k := keys[f.Provider]
		if k == nil {
			k = annotationKeys(f.Provider)
			keys[f.Provider] = k
		}
		vals := annotations(&f)
		for _, pod := range f.Pods {
			if pod.Live {
				add(KindPod, pod.Namespace, pod.Name, types.UID(pod.UID), pod.ResourceVersion, pod.Annotations, k, &vals, pod.Node != "")
			}
		}
		if vm := f.VM; vm != nil && vm.Live {
			add(KindVirtualMachine, vm.Namespace, vm.Name, types.UID(vm.UID), vm.ResourceVersion, vm.Annotations, k, &vals, false)
		}
	}
	for i := range out {
		slices.SortFunc(out[i].Set, func(a, b Annotation) int { return strings.Compare(a.Key, b.Key) })
	}
	slices.SortFunc(out, func(a, b Publication) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

// set sets key to v, in place of the value it had.
func (p *Publication) set(key, v string) {
	for i := range p.Set {
		if p.Set[i].Key == key {
			p.Set[i].Value = v
			return
		}
	}
	p.Set = append(p.Set, Annotation{key, v})
}

// The kube-ovn annotations of a port, each a key suffix after the
// provider.
const (
	annAllocated = iota
	annMAC
	annSwitch
	annIP
	annCIDR
	annGateway
	annRouted
	numAnn
)

// annotationKeys returns the annotation keys of provider.
func annotationKeys(provider string) *[numAnn]string {
	return &[numAnn]string{
		annAllocated: provider + desired.AnnAllocatedSuffix,
		annMAC:       provider + desired.AnnMACSuffix,
		annSwitch:    provider + desired.AnnLogicalSwitchSuffix,
		annIP:        provider + desired.AnnIPSuffix,
		annCIDR:      provider + desired.AnnCIDRSuffix,
		annGateway:   provider + desired.AnnGatewaySuffix,
		annRouted:    provider + desired.AnnRoutedSuffix,
	}
}

// portAnnotations are the values of one port's annotations; has says
// which it publishes.
type portAnnotations struct {
	v   [numAnn]string
	has [numAnn]bool
}

// annotations renders the kube-ovn annotations of one port: the IP key only
// when it holds an IP; routed is the caller's (scheduled pods only).
func annotations(f *desired.PortFacts) portAnnotations {
	var buf [3]string // "<mac> <ipv4> <ipv6>"
	words := buf[:0]
	for w := range strings.FieldsSeq(f.Port.Addresses[0]) {
		words = append(words, w)
	}
	var a portAnnotations
	set := func(i int, v string) { a.v[i], a.has[i] = v, true }
	set(annAllocated, "true")
	set(annMAC, words[0])
	set(annSwitch, f.Port.Switch)
	switch {
	case len(words) == 2:
		set(annIP, words[1])
	case len(words) > 2:
		set(annIP, strings.Join(words[1:], ","))
	}
	if f.CIDR != "" {
		set(annCIDR, f.CIDR)
	}
	if f.Gateway != "" {
		set(annGateway, f.Gateway)
	}
	return a
}
