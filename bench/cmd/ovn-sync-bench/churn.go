package main

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ovn-sync/ovn-sync/desired"
)

// churnCounts says how the inputs were changed.
type churnCounts struct {
	Deleted  int `json:"deleted"`   // pods removed
	Added    int `json:"added"`     // pods created
	Moved    int `json:"moved"`     // pods rescheduled to another node
	StaticIP int `json:"static_ip"` // pods given a new static IP
}

// churnInputs returns a copy of in with about 1% of size ports disturbed
// through the objects that own them, as a busy cluster changes between two
// passes: a quarter of a percent of plain pods deleted, as many new pods
// created, and half a percent changed, alternately moved to another node
// and given a static IP. Disturbed pods are spread evenly over the plain
// pods (virt-launcher pods belong to VMs and are left alone); in and its
// objects are not modified.
func churnInputs(in desired.Inputs, size int) (desired.Inputs, churnCounts) {
	var plain []int // indexes of plain pods in in.Pods
	for i, p := range in.Pods {
		if p.Labels["kubevirt.io"] != "virt-launcher" {
			plain = append(plain, i)
		}
	}
	n := max(min(size/400, len(plain)/3), 1) // a quarter of a percent
	picked := spread(plain, 3*n)
	out := in
	out.Pods = make([]*corev1.Pod, 0, len(in.Pods))
	deleted := map[int]bool{}
	for _, i := range picked[:n] {
		deleted[i] = true
	}
	changed := map[int]int{} // pod index -> ordinal among the changed
	for k, i := range picked[n:] {
		changed[i] = k
	}
	subnetOf := map[string]netip.Prefix{} // a namespace's Subnet
	for _, sub := range in.Subnets {
		for _, ns := range sub.Spec.Namespaces {
			subnetOf[ns] = netip.MustParsePrefix(sub.Spec.CIDRBlock)
		}
	}
	var c churnCounts
	for i, p := range in.Pods {
		switch k, ok := changed[i]; {
		case deleted[i]:
			c.Deleted++
		case ok && k%2 == 0:
			q := p.DeepCopy()
			q.Spec.NodeName = p.Spec.NodeName + "-moved"
			out.Pods = append(out.Pods, q)
			c.Moved++
		case ok:
			q := p.DeepCopy()
			if q.Annotations == nil {
				q.Annotations = map[string]string{}
			}
			// 10.250.0.0/16 is far above what sequential allocation reaches
			// at 1M ports, so the address is free; on a Subnet (a /16 of at
			// most bench.SwitchPorts ports), its x.y.200.0/21 is.
			q.Annotations[desired.DefaultIPAnnotation] = fmt.Sprintf("10.250.%d.%d", k/250, k%250+1)
			if p, ok := subnetOf[q.Namespace]; ok {
				b := p.Addr().As4()
				q.Annotations[desired.DefaultIPAnnotation] = fmt.Sprintf("%d.%d.%d.%d", b[0], b[1], 200+k/250, k%250+1)
			}
			out.Pods = append(out.Pods, q)
			c.StaticIP++
		default:
			out.Pods = append(out.Pods, p)
		}
	}
	for k := range n {
		q := in.Pods[plain[k%len(plain)]].DeepCopy()
		q.Name = fmt.Sprintf("churn-pod-%d", k)
		q.UID = types.UID(q.Namespace + "/" + q.Name)
		out.Pods = append(out.Pods, q)
		c.Added++
	}
	return out, c
}

// spread returns n elements of xs spaced evenly from its start (all of
// them if xs has no more than n).
func spread(xs []int, n int) []int {
	if len(xs) <= n {
		return xs
	}
	out := make([]int, n)
	for k := range n {
		out[k] = xs[k*len(xs)/n]
	}
	return out
}
