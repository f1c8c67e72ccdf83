package desired

import (
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// keepStatefulSetPorts keeps, as kube-ovn does, the ports of a
// StatefulSet's pod that is gone — deleted, about to be created again
// under the same name — while the StatefulSet exists, is not being deleted
// and the pod's ordinal is within its replicas (from spec.ordinals.start).
// The pod that comes back is the same owner (Pod/<ns>/<name>) and finds its
// ports as they were: same IP, same MAC. Scaled down below the ordinal, or
// with the StatefulSet gone, the ports go and their addresses are free.
func (b *builder) keepStatefulSetPorts(in Inputs) {
	type nsName struct{ ns, name string }
	sets := map[nsName]*appsv1.StatefulSet{}
	for _, s := range in.StatefulSets {
		if s != nil && s.DeletionTimestamp == nil {
			sets[nsName{s.Namespace, s.Name}] = s
		}
	}
	if len(sets) == 0 || len(b.have.Ports) == 0 {
		return
	}
	present := map[nsName]bool{}
	for _, p := range in.Pods {
		if p != nil && !p.Spec.HostNetwork && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			present[nsName{p.Namespace, p.Name}] = true
		}
	}
	b.indexHaveOwners()
	ids := make([]string, 0, len(b.haveByOwner))
	for id := range b.haveByOwner {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		kind, rest, _ := strings.Cut(id, "/")
		ns, name, _ := strings.Cut(rest, "/")
		if kind != kindPod || present[nsName{ns, name}] {
			continue
		}
		i := strings.LastIndexByte(name, '-')
		if i <= 0 {
			continue
		}
		ord, ok := parseOrdinal(name[i+1:])
		set := sets[nsName{ns, name[:i]}]
		if !ok || set == nil {
			continue
		}
		start, replicas := 0, 1
		if set.Spec.Ordinals != nil {
			start = int(set.Spec.Ordinals.Start)
		}
		if set.Spec.Replicas != nil {
			replicas = int(*set.Spec.Replicas)
		}
		if ord < start || ord >= start+replicas {
			continue
		}
		b.keepOwnerPorts(b.newOwner(kindPod, ns, name, time.Time{}), nil)
	}
}
