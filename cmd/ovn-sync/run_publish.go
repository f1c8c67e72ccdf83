package main

import (
	"context"
	"encoding/json"
	"net/netip"
	"sort"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/state"
)

// Annotation keys published on pods, kube-ovn compatible: each is
// "<provider>.kubernetes.io/<key>", the provider being "ovn" for the
// default network and "<nad>.<nadns>.ovn" for an attachment.
const (
	annAllocated     = "allocated"
	annIPAddress     = "ip_address"
	annMACAddress    = "mac_address"
	annCIDR          = "cidr"
	annGateway       = "gateway"
	annLogicalSwitch = "logical_switch"
	annDomain        = ".kubernetes.io/"
	providerDefault  = "ovn"
)

// netInfo is what a network adds to its ports' annotations.
type netInfo struct {
	cidr    string
	gateway string
}

// publishNets returns the cidr and gateway of each network, keyed as
// state.Port.Network is: "default" or "<nadns>/<nad>". The NAD's gateway is
// its config's "gateway" key, when it has one.
func publishNets(cfg desired.Config, defaultGateway string, nads []*nadv1.NetworkAttachmentDefinition) map[string]netInfo {
	out := map[string]netInfo{}
	var cidrs []string
	for _, p := range cfg.DefaultSubnets {
		cidrs = append(cidrs, p.String())
	}
	out[state.DefaultNetwork] = netInfo{cidr: strings.Join(cidrs, ","), gateway: joinList(defaultGateway)}
	for _, n := range nads {
		if n == nil {
			continue
		}
		var c struct {
			Subnets string `json:"subnets"`
			Gateway string `json:"gateway"`
			Plugins []struct {
				Subnets string `json:"subnets"`
				Gateway string `json:"gateway"`
			} `json:"plugins"`
		}
		if json.Unmarshal([]byte(n.Spec.Config), &c) != nil {
			continue
		}
		for _, p := range c.Plugins {
			if c.Subnets == "" && p.Subnets != "" {
				c.Subnets, c.Gateway = p.Subnets, p.Gateway
			}
		}
		var parts []string
		for _, s := range splitList(c.Subnets) {
			if p, err := netip.ParsePrefix(s); err == nil {
				parts = append(parts, p.Masked().String())
			}
		}
		out[n.Namespace+"/"+n.Name] = netInfo{cidr: strings.Join(parts, ","), gateway: joinList(c.Gateway)}
	}
	return out
}

func joinList(s string) string { return strings.Join(splitList(s), ",") }

// portAnnotations renders the annotations of one port.
func portAnnotations(p *state.Port, provider string, nets map[string]netInfo, out map[string]string) {
	if len(p.Addresses) == 0 {
		return
	}
	f := strings.Fields(p.Addresses[0])
	if len(f) < 2 {
		return // a MAC without an IP: nothing a CNI could plumb
	}
	k := provider + annDomain
	out[k+annAllocated] = "true"
	out[k+annMACAddress] = f[0]
	out[k+annIPAddress] = strings.Join(f[1:], ",")
	out[k+annLogicalSwitch] = p.Switch
	n := nets[p.Network]
	if n.cidr != "" {
		out[k+annCIDR] = n.cidr
	}
	if n.gateway != "" {
		out[k+annGateway] = n.gateway
	}
}

// providerOf returns the provider of a port from its name and owner: the
// LSP name is "<name>.<namespace>" for the default network's provider "ovn",
// else "<name>.<namespace>.<provider>".
func providerOf(p *state.Port) (string, bool) {
	_, rest, ok := strings.Cut(p.Owner, "/")
	if !ok {
		return "", false
	}
	ns, name, ok := strings.Cut(rest, "/")
	if !ok {
		return "", false
	}
	base := name + "." + ns
	switch {
	case p.Name == base:
		return providerDefault, true
	case strings.HasPrefix(p.Name, base+"."):
		return p.Name[len(base)+1:], true
	}
	return "", false
}

// podOwner returns the port owner ("<Kind>/<namespace>/<name>") whose
// addresses a pod carries: its own for a plain pod, its VM's (or, without
// a VM, its VMI's) for a virt-launcher pod. It mirrors desired's rules.
func podOwner(p *corev1.Pod, vmOfVMI map[types.NamespacedName]string) string {
	vmi, launcher := launcherOf(p)
	if !launcher {
		return "Pod/" + p.Namespace + "/" + p.Name
	}
	if vm, ok := vmOfVMI[types.NamespacedName{Namespace: p.Namespace, Name: vmi}]; ok {
		return "VirtualMachine/" + p.Namespace + "/" + vm
	}
	return "VirtualMachineInstance/" + p.Namespace + "/" + vmi
}

// launcherOf reports whether p is a virt-launcher pod and names its VMI.
func launcherOf(p *corev1.Pod) (string, bool) {
	var ref string
	for _, r := range p.OwnerReferences {
		if r.Kind == "VirtualMachineInstance" && strings.HasPrefix(r.APIVersion, "kubevirt.io/") {
			ref = r.Name
			break
		}
	}
	if ref == "" && p.Labels[kubevirtv1.AppLabel] != "virt-launcher" {
		return "", false
	}
	switch {
	case ref != "":
		return ref, true
	case p.Annotations[kubevirtv1.DomainAnnotation] != "":
		return p.Annotations[kubevirtv1.DomainAnnotation], true
	}
	return p.Labels["vm.kubevirt.io/name"], true
}

// vmOfVMI maps each VMI to the VM whose ports it runs: the VM its owner
// reference names, else the VM of the same name, else (the VM being gone)
// still the owner reference's name, as desired keeps such a VMI on its VM's
// ports.
func vmOfVMI(in desired.Inputs) map[types.NamespacedName]string {
	vms := map[types.NamespacedName]bool{}
	for _, vm := range in.VirtualMachines {
		vms[types.NamespacedName{Namespace: vm.Namespace, Name: vm.Name}] = true
	}
	out := map[types.NamespacedName]string{}
	for _, vmi := range in.VirtualMachineInstances {
		k := types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name}
		for _, r := range vmi.OwnerReferences {
			if r.Kind == "VirtualMachine" && strings.HasPrefix(r.APIVersion, "kubevirt.io/") && r.Name != "" {
				out[k] = r.Name
			}
		}
		if _, ok := out[k]; !ok && vms[k] {
			out[k] = vmi.Name
		}
	}
	// A launcher pod of a stopped-and-restarted VM may outlive its VMI
	// object briefly; it still runs the VM of its name.
	for k := range vms {
		if _, ok := out[k]; !ok {
			out[k] = k.Name
		}
	}
	return out
}

// podPatch is the annotations one pod needs changed.
type podPatch struct {
	Namespace, Name string
	UID             types.UID
	// ResourceVersion is the version of the pod the patch was computed from.
	ResourceVersion string
	Set             map[string]string
}

// annotationPatches computes, purely, the annotation changes that make every
// live pod carry its ports' addresses. Only keys whose value differs are in
// a patch; pods that need nothing are left out. Keys of ports no longer
// wanted are not removed: a node agent may still be tearing the interface down.
func annotationPatches(want state.State, in desired.Inputs, nets map[string]netInfo) []podPatch {
	byOwner := map[string][]*state.Port{}
	for _, p := range want.Ports {
		if p.Owned() {
			byOwner[p.Owner] = append(byOwner[p.Owner], p)
		}
	}
	vms := vmOfVMI(in)
	var out []podPatch
	for _, pod := range in.Pods {
		if pod == nil || pod.Spec.HostNetwork || pod.DeletionTimestamp != nil ||
			pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		ports := byOwner[podOwner(pod, vms)]
		if len(ports) == 0 {
			continue
		}
		ann := map[string]string{}
		for _, p := range ports {
			if prov, ok := providerOf(p); ok {
				portAnnotations(p, prov, nets, ann)
			}
		}
		for k, v := range ann {
			if cur, ok := pod.Annotations[k]; ok && cur == v {
				delete(ann, k)
			}
		}
		if len(ann) > 0 {
			out = append(out, podPatch{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion, Set: ann})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// publisher patches pods. It remembers what it patched per pod so that a
// pass running before the informer has seen its own patch does not send it
// again: a patch is skipped while the pod the informer holds is still the
// version the same patch was computed from. Once the informer has a newer
// version (ours or anyone's), the annotations it shows decide.
type publisher struct {
	kube     kubernetes.Interface
	log      logr.Logger
	workers  int
	onResult func(result string)
	mu       sync.Mutex
	sent     map[types.UID]sentPatch
}

type sentPatch struct {
	from string // the pod's resourceVersion the patch was computed from
	set  map[string]string
}

func newPublisher(kube kubernetes.Interface, log logr.Logger, onResult func(string)) *publisher {
	return &publisher{kube: kube, log: log, workers: 8, onResult: onResult, sent: map[types.UID]sentPatch{}}
}

// publish sends patches, at most p.workers at a time. A pod that is gone is
// not an error; other failures are logged and retried by the next pass.
func (p *publisher) publish(ctx context.Context, patches []podPatch, live map[types.UID]bool) {
	p.mu.Lock()
	for uid := range p.sent {
		if !live[uid] {
			delete(p.sent, uid)
		}
	}
	todo := patches[:0:0]
	for _, pp := range patches {
		if sent, ok := p.sent[pp.UID]; ok && sent.from == pp.ResourceVersion && subset(pp.Set, sent.set) {
			continue
		}
		todo = append(todo, pp)
	}
	p.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	work := make(chan podPatch)
	var wg sync.WaitGroup
	for range min(p.workers, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pp := range work {
				p.patch(ctx, pp)
			}
		}()
	}
	for _, pp := range todo {
		select {
		case work <- pp:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
}

func (p *publisher) patch(ctx context.Context, pp podPatch) {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": pp.Set,
		// The UID precondition keeps a patch meant for one pod off a new
		// pod of the same name.
		"uid": pp.UID,
	}})
	if err != nil {
		return
	}
	_, err = p.kube.CoreV1().Pods(pp.Namespace).Patch(ctx, pp.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "ovn-sync"})
	switch {
	case err == nil:
		p.mu.Lock()
		p.sent[pp.UID] = sentPatch{from: pp.ResourceVersion, set: pp.Set}
		p.mu.Unlock()
		p.result("patched")
		p.log.V(1).Info("published addresses", "pod", pp.Namespace+"/"+pp.Name, "annotations", pp.Set)
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err):
		// Gone, or replaced by a pod of the same name (the UID differs):
		// the next pass publishes for the new pod.
		p.result("gone")
	case ctx.Err() != nil:
	default:
		p.result("error")
		p.log.Error(err, "publishing addresses failed; the next pass retries", "pod", pp.Namespace+"/"+pp.Name)
	}
}

func (p *publisher) result(r string) {
	if p.onResult != nil {
		p.onResult(r)
	}
}

func subset(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
