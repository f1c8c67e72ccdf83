package desired

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	kubeovnv1 "github.com/ovn-sync/ovn-sync/apis/kubeovn/v1"
	"github.com/ovn-sync/ovn-sync/desired/addr"
	"github.com/ovn-sync/ovn-sync/state"
)

// keepStatefulSetPorts keeps, as kube-ovn does, the ports of a
// StatefulSet's pod that is gone — deleted, about to be created again
// under the same name — while the StatefulSet exists, is not being deleted
// and the pod's ordinal is within its replicas (from spec.ordinals.start).
// The pod that comes back is the same owner (Pod/<ns>/<name>) and finds its
// ports as they were: same IP, same MAC. Scaled down below the ordinal, or
// with the StatefulSet gone, the ports go and their addresses are free.
//
// Where such a pod has no port (the NB was lost, or restored from an older
// backup) but kube-ovn's IP object for it remains, the addresses the IP
// object names are reserved on its switch (reserveIPObject): never handed
// out to another port, so the pod that comes back claims them from that
// record.
//
// It looks up what it asks (scope.objs): the pods asked about (a Build of
// every owner notes them as it reads every pod, notePresent), and the IP
// objects of each StatefulSet's pods (Objects.StatefulSetIPs).
func (b *builder) keepStatefulSetPorts() {
	sc := b.scope
	if len(b.sets) == 0 {
		return
	}
	present := func(ns, name string) bool {
		if sc.all {
			return b.setPods[nsName{ns, name}]
		}
		return live(sc.objs.Pod(ns, name))
	}
	// kept reports whether ns/name is a gone pod of a StatefulSet, at an
	// ordinal within its replicas.
	kept := func(ns, name string) bool {
		set, ord := b.setOf(ns, name)
		if set == nil || present(ns, name) {
			return false
		}
		start, replicas := 0, 1
		if set.Spec.Ordinals != nil {
			start = int(set.Spec.Ordinals.Start)
		}
		if set.Spec.Replicas != nil {
			replicas = int(*set.Spec.Replicas)
		}
		return ord >= start && ord < start+replicas
	}
	for _, id := range b.rebuiltSetPods() {
		_, ns, name := splitOwnerID(id)
		if kept(ns, name) {
			b.keepOwnerPorts(b.newOwner(kindPod, ns, name, time.Time{}), nil)
		}
	}
	// The IP objects of gone pods whose ports are not in the NB.
	var ips []*kubeovnv1.IP
	for k := range b.sets {
		ips = append(ips, sc.objs.StatefulSetIPs(k.ns, k.name)...)
	}
	names := make([]string, 0, len(ips))
	for _, ip := range ips {
		if b.have.Ports.Get(ip.Name) == nil && ip.Spec.Namespace != "" && kept(ip.Spec.Namespace, ip.Spec.PodName) {
			names = append(names, ip.Name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		b.reserveIPObject(b.ipObject(name))
	}
}

// rebuiltSetPods lists, sorted, the ids of the pod owners this Build
// rebuilds that are named like a pod of one of b.sets and may have ports
// in have: for a Build of every owner, each such owner of a port of ours
// there.
func (b *builder) rebuiltSetPods() []string {
	var ids []string
	add := func(id string) {
		kind, ns, name := splitOwnerID(id)
		if set, _ := b.setOf(ns, name); kind == kindPod && set != nil {
			ids = append(ids, id)
		}
	}
	if b.scope.all {
		for _, p := range b.have.Ports.All() {
			if p != nil && p.Owned() {
				add(p.Owner)
			}
		}
	} else {
		for id := range b.scope.owners {
			add(id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// indexStatefulSets indexes the StatefulSets of in that are not being
// deleted (b.sets).
func (b *builder) indexStatefulSets(in Inputs) {
	for _, s := range in.StatefulSets {
		if s != nil && s.DeletionTimestamp == nil {
			if b.sets == nil {
				b.sets = map[nsName]*appsv1.StatefulSet{}
			}
			b.sets[nsName{s.Namespace, s.Name}] = s
		}
	}
}

// setOf returns the StatefulSet of b.sets that the pod ns/name is named
// like a pod of (<set>-<ordinal>), and its ordinal; nil when none.
func (b *builder) setOf(ns, name string) (*appsv1.StatefulSet, int) {
	setName, ord, ok := StatefulSetPod(name)
	if !ok {
		return nil, 0
	}
	return b.sets[nsName{ns, setName}], ord
}

// notePresent notes, in a Build of every owner, whether p, a pod named
// like a pod of one of b.sets, may have a port (live):
// keepStatefulSetPorts asks that of such pods. The pods addPods reads are
// every pod the scope's lookups would find, and the first of a name is the
// one they find.
func (b *builder) notePresent(p *corev1.Pod) {
	if !b.scope.all || len(b.sets) == 0 {
		return
	}
	if set, _ := b.setOf(p.Namespace, p.Name); set == nil {
		return
	}
	k := nsName{p.Namespace, p.Name}
	if _, seen := b.setPods[k]; !seen {
		if b.setPods == nil {
			b.setPods = map[nsName]bool{}
		}
		b.setPods[k] = live(p)
	}
}

// live reports whether p is a pod that may have a port: it exists, is not
// on the host's network and has not ended.
func live(p *corev1.Pod) bool {
	return p != nil && !p.Spec.HostNetwork && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// reserveIPObject reserves, on the switch spec.subnet names, the addresses
// kube-ovn's IP object ip records for a gone StatefulSet pod whose port is
// not in the NB. They are held by no port: IPAM counts them as held
// (ipam.reserve) but only while no port holds them, so a reservation never
// takes an address from a port. An IP object that cannot be read reserves
// nothing; the pod that comes back reports it (readIPRecord).
func (b *builder) reserveIPObject(ip *kubeovnv1.IP) {
	sp := &ip.Spec
	if sp.Subnet == "" {
		return
	}
	words := nonEmpty(sp.V4IPAddress, sp.V6IPAddress)
	if len(words) == 0 {
		words = nonEmpty(strings.Split(sp.IPAddress, ",")...)
	}
	if m := strings.TrimSpace(sp.MacAddress); m != "" {
		words = append(words, m)
	}
	var addrs []string
	for _, w := range words {
		if _, err := netip.ParseAddr(w); err == nil {
			addrs = append(addrs, w)
		} else if x, err := addr.ParseMAC(w); err == nil {
			addrs = append(addrs, x.String())
		}
	}
	if len(addrs) == 0 {
		return
	}
	b.reserved = append(b.reserved, reservation{
		sw: sp.Subnet,
		port: &state.Port{
			Name:      fmt.Sprintf("%s (kube-ovn IP object of StatefulSet pod %s/%s, gone)", ip.Name, sp.Namespace, sp.PodName),
			Addresses: []string{strings.Join(addrs, " ")},
		},
	})
}

// reservation is addresses held on switch sw by no port: port lists them,
// and names them in Problems.
type reservation struct {
	sw   string
	port *state.Port
}
