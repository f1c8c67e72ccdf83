package reconcile

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/observed"
	"github.com/ovn-sync/ovn-sync/sources"
	"github.com/ovn-sync/ovn-sync/state"
)

// manifests decodes Kubernetes YAML as ovn-sync's -f does.
func manifests(t testing.TB, yaml string) desired.Inputs {
	t.Helper()
	in, _, err := sources.ReadManifestsFS(fstest.MapFS{"m.yaml": {Data: []byte(yaml)}}, []string{"m.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func config(t *testing.T) desired.Config {
	t.Helper()
	cfg, err := desired.NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err == nil {
		cfg, err = cfg.WithGateway([]string{"10.16.0.1"})
	}
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// embeddedNB is an in-memory NB and a client of it.
func embeddedNB(t *testing.T) *observed.NB {
	t.Helper()
	e, err := observed.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nb, err := observed.Dial(ctx, observed.Options{Endpoints: []string{e.Endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Close)
	return nb
}

const stoppedVM = `
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: db
  namespace: tenant
  uid: 0c6a4d6e-0000-4000-8000-000000000001
  creationTimestamp: "2026-03-01T00:00:00Z"
  annotations:
    ovn.kubernetes.io/allocated: "true"
    ovn.kubernetes.io/ip_address: 10.16.0.2
    ovn.kubernetes.io/mac_address: 0a:58:0a:10:00:02
spec:
  runStrategy: Halted
  template:
    spec:
      domain: {devices: {interfaces: [{name: default, masquerade: {}}]}}
      networks: [{name: default, pod: {}}]
`

const oldPod = `
apiVersion: v1
kind: Pod
metadata: {name: old, namespace: default, creationTimestamp: "2026-01-01T00:00:00Z"}
spec: {nodeName: node-1, containers: [{name: c, image: busybox}]}
status: {phase: Running}
`

// TestPassAgain: an NB restored from a backup in which a pod, since
// deleted, held the address a stopped VM has a record of. The first
// computation deletes the pod's port and leaves the VM waiting (Again);
// the pass computes again once that is applied, and the VM gets its
// recorded address, in one Pass.
func TestPassAgain(t *testing.T) {
	nb := embeddedNB(t)
	ctx := context.Background()
	opts := Options{Config: config(t), MaxDeleteFraction: 1}
	if _, err := Pass(ctx, nb, All(manifests(t, oldPod)), opts); err != nil {
		t.Fatal(err)
	}
	waitPort(t, nb, "old.default", "0a:58:0a:10:00:02 10.16.0.2")

	out, err := Pass(ctx, nb, All(manifests(t, stoppedVM)), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Earlier) != 1 || out.Attempts < 2 {
		t.Errorf("Pass: %d earlier plans in %d attempts, want 1 earlier plan", len(out.Earlier), out.Attempts)
	}
	waitPort(t, nb, "db.tenant", "0a:58:0a:10:00:02 10.16.0.2")
	if p := nb.State().Ports.Get("old.default"); p != nil {
		t.Errorf("old.default still in the NB: %+v", p)
	}
	if c := Compute(nb, All(manifests(t, stoppedVM)), opts); !c.Plan.Empty() || c.Result.Again {
		t.Errorf("after the pass: plan %s, again %v; want nothing to do", c.Plan, c.Result.Again)
	}
}

func waitPort(t *testing.T, nb *observed.NB, name, addresses string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p := nb.State().Ports.Get(name)
		if p != nil && len(p.Addresses) == 1 && p.Addresses[0] == addresses {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("port %s = %+v, want addresses %q", name, p, addresses)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPassGuardPerNetwork: a pass that would delete most ports of one
// network is refused, though they are few of all ports.
func TestPassGuardPerNetwork(t *testing.T) {
	nb := embeddedNB(t)
	ctx := context.Background()
	opts := Options{Config: config(t), MaxDeleteFraction: 0.5}
	var all strings.Builder
	all.WriteString(`apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: blue, namespace: tenant}
spec: {config: '{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.0.0/24"}'}
`)
	for i := range 30 {
		ann := ""
		if i < 25 {
			ann = "  annotations: {k8s.v1.cni.cncf.io/networks: tenant/blue}\n"
		}
		all.WriteString("---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p" + string(rune('a'+i/26)) + string(rune('a'+i%26)) +
			"\n  namespace: tenant\n" + ann + "spec: {nodeName: node-1, containers: [{name: c, image: busybox}]}\nstatus: {phase: Running}\n")
	}
	in := manifests(t, all.String())
	if _, err := Pass(ctx, nb, All(in), opts); err != nil {
		t.Fatal(err)
	}
	// The NAD loses its subnets' worth of users: all 25 attachments go.
	for _, p := range in.Pods {
		delete(p.Annotations, "k8s.v1.cni.cncf.io/networks")
	}
	waitOwned(t, nb, 55)
	_, err := Pass(ctx, nb, All(in), opts)
	if err == nil || !strings.Contains(err.Error(), `of network "tenant/blue"`) {
		t.Errorf("Pass deleting 25 of 25 ports of tenant/blue = %v, want refused", err)
	}
}

func waitOwned(t *testing.T, nb *observed.NB, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for nb.State().OwnedPorts() != n {
		if time.Now().After(deadline) {
			t.Fatalf("NB holds %d ports of ours, want %d", nb.State().OwnedPorts(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

const vmWithLauncher = `
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: db, namespace: tenant, uid: vm-uid, resourceVersion: "7", creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  runStrategy: Always
  template:
    spec:
      domain: {devices: {interfaces: [{name: default, masquerade: {}}, {name: blue, bridge: {}, macAddress: "02:00:00:00:00:01"}]}}
      networks: [{name: default, pod: {}}, {name: blue, multus: {networkName: blue}}]
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: db
  namespace: tenant
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: db, uid: vm-uid}]
spec:
  domain: {devices: {interfaces: [{name: default, masquerade: {}}, {name: blue, bridge: {}, macAddress: "02:00:00:00:00:01"}]}}
  networks: [{name: default, pod: {}}, {name: blue, multus: {networkName: blue}}]
status: {phase: Running, nodeName: node-2}
---
apiVersion: v1
kind: Pod
metadata:
  name: virt-launcher-db-x
  namespace: tenant
  uid: launcher-uid
  labels: {kubevirt.io: virt-launcher}
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachineInstance, name: db}]
spec: {nodeName: node-2, containers: [{name: compute, image: virt-launcher}]}
status: {phase: Running}
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: blue, namespace: tenant}
spec: {config: '{"type":"kube-ovn","subnets":"192.168.1.0/24","gateway":"192.168.1.254"}'}
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
  uid: web-uid
  annotations:
    ovn.kubernetes.io/allocated: "true"
    ovn.kubernetes.io/ip_address: 10.16.0.5
    ovn.kubernetes.io/mac_address: 0a:58:0a:10:00:05
    ovn.kubernetes.io/cidr: 10.16.0.0/16
    ovn.kubernetes.io/logical_switch: ovn-default
spec: {nodeName: node-1, containers: [{name: c, image: nginx}]}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: done, namespace: default, uid: done-uid}
spec: {nodeName: node-1, containers: [{name: c, image: busybox}]}
status: {phase: Succeeded}
---
apiVersion: v1
kind: Pod
metadata: {name: host, namespace: default, uid: host-uid}
spec: {nodeName: node-1, hostNetwork: true, containers: [{name: c, image: busybox}]}
status: {phase: Running}
`

// TestPublications: publications follow from Build's facts alone. A plain
// pod carries its own addresses (only what differs is patched), a
// virt-launcher pod and the VM itself carry the VM's, on every network
// with that network's cidr and gateway; pods, not the VM, are marked
// routed on every network; finished and host-network pods carry nothing.
func TestPublications(t *testing.T) {
	in := manifests(t, vmWithLauncher)
	r := desired.Build(in, config(t), state.New(0))
	if len(r.Problems) > 0 {
		t.Fatalf("problems: %v", r.Problems)
	}
	got := Publications(r)
	if len(got) != 3 {
		t.Fatalf("Publications = %+v, want the web pod, the launcher and the VM", got)
	}
	web, launcher, vm := got[0], got[1], got[2]
	if web.Name != "web" || len(web.Set) != 2 || value(web, "ovn.kubernetes.io/gateway") != "10.16.0.1" || value(web, "ovn.kubernetes.io/routed") != "true" {
		t.Errorf("publication for web = %+v, want only the gateway and routed", web)
	}
	for _, k := range []string{"ovn.kubernetes.io/routed", "blue.tenant.ovn.kubernetes.io/routed"} {
		if value(launcher, k) != "true" {
			t.Errorf("launcher %s = %q, want true", k, value(launcher, k))
		}
		if v, ok := vm.Get(k); ok {
			t.Errorf("VM %s = %q, want unset: kube-ovn-cni plumbs pods, not VMs", k, v)
		}
	}
	if launcher.Name != "virt-launcher-db-x" || launcher.UID != "launcher-uid" || launcher.Kind != KindPod {
		t.Errorf("second publication = %+v, want the launcher pod", launcher)
	}
	if vm.Kind != KindVirtualMachine || vm.Name != "db" || vm.UID != "vm-uid" || vm.ResourceVersion != "7" {
		t.Errorf("third publication = %+v, want the VM", vm)
	}
	for k, v := range map[string]string{
		"ovn.kubernetes.io/allocated":                  "true",
		"ovn.kubernetes.io/ip_address":                 "10.16.0.2",
		"ovn.kubernetes.io/mac_address":                "0a:58:0a:10:00:02",
		"ovn.kubernetes.io/logical_switch":             "ovn-default",
		"ovn.kubernetes.io/cidr":                       "10.16.0.0/16",
		"ovn.kubernetes.io/gateway":                    "10.16.0.1",
		"blue.tenant.ovn.kubernetes.io/allocated":      "true",
		"blue.tenant.ovn.kubernetes.io/ip_address":     "192.168.1.2",
		"blue.tenant.ovn.kubernetes.io/mac_address":    "02:00:00:00:00:01",
		"blue.tenant.ovn.kubernetes.io/cidr":           "192.168.1.0/24",
		"blue.tenant.ovn.kubernetes.io/gateway":        "192.168.1.254",
		"blue.tenant.ovn.kubernetes.io/logical_switch": "blue.tenant",
	} {
		if value(launcher, k) != v || value(vm, k) != v {
			t.Errorf("annotation %s: launcher %q, VM %q; want %q", k, value(launcher, k), value(vm, k), v)
		}
	}
}

// TestPublicationsNoGateway: a network that names no gateway publishes
// none.
func TestPublicationsNoGateway(t *testing.T) {
	in := manifests(t, `apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: l2, namespace: default}
spec: {config: '{"type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.5.0/24"}'}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: default, uid: a-uid, annotations: {k8s.v1.cni.cncf.io/networks: l2}}
spec: {nodeName: node-1, containers: [{name: c, image: busybox}]}
status: {phase: Running}
`)
	cfg, _ := desired.NewConfig("ovn-default", []string{"10.16.0.0/16"}, nil)
	got := Publications(desired.Build(in, cfg, state.New(0)))
	if len(got) != 1 {
		t.Fatalf("Publications = %+v", got)
	}
	for _, a := range got[0].Set {
		k := a.Key
		if strings.HasSuffix(k, "/gateway") {
			t.Errorf("published %s for a network without a gateway", k)
		}
	}
	if value(got[0], "l2.default.ovn.kubernetes.io/cidr") != "192.168.5.0/24" {
		t.Errorf("cidr of l2 = %q", value(got[0], "l2.default.ovn.kubernetes.io/cidr"))
	}
}

// TestPublicationsRouted: a scheduled pod is marked routed once, like
// kube-ovn does; a pod not scheduled yet is not (kube-ovn-cni never runs
// for it), though it carries its addresses.
func TestPublicationsRouted(t *testing.T) {
	in := manifests(t, `apiVersion: v1
kind: Pod
metadata: {name: pending, namespace: default, uid: pending-uid}
spec: {containers: [{name: c, image: busybox}]}
status: {phase: Pending}
---
apiVersion: v1
kind: Pod
metadata:
  name: done
  namespace: default
  uid: done-uid
  annotations: {ovn.kubernetes.io/routed: "true"}
spec: {nodeName: node-1, containers: [{name: c, image: busybox}]}
status: {phase: Running}
`)
	got := Publications(desired.Build(in, config(t), state.New(0)))
	if len(got) != 2 || got[0].Name != "done" || got[1].Name != "pending" {
		t.Fatalf("Publications = %+v, want done and pending", got)
	}
	if v, ok := got[0].Get("ovn.kubernetes.io/routed"); ok {
		t.Errorf("done: routed set again (%q) though it already says true", v)
	}
	if v, ok := got[1].Get("ovn.kubernetes.io/routed"); ok {
		t.Errorf("pending: routed = %q before the pod is scheduled", v)
	}
	if value(got[1], "ovn.kubernetes.io/ip_address") == "" {
		t.Errorf("pending: no ip_address published: %+v", got[1].Set)
	}
}

// TestPublicationsMACOnly: a port on a network without IPAM (an
// ovn-kubernetes layer2 NAD without subnets) publishes its MAC, allocated
// and switch, and no ip_address or cidr, on the pod and on the VM, whose
// annotation is the MAC's durable record.
func TestPublicationsMACOnly(t *testing.T) {
	in := manifests(t, `apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: flat, namespace: default}
spec: {config: '{"cniVersion":"0.3.1","name":"flat","type":"ovn-k8s-cni-overlay","topology":"layer2","netAttachDefName":"default/flat"}'}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: db, namespace: default, uid: vm-uid}
spec:
  runStrategy: Halted
  template:
    spec:
      domain: {devices: {interfaces: [{name: flat, bridge: {}, macAddress: "02:00:00:00:f1:01"}]}}
      networks: [{name: flat, multus: {networkName: flat}}]
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: default, uid: a-uid, annotations: {k8s.v1.cni.cncf.io/networks: flat}}
spec: {nodeName: node-1, containers: [{name: c, image: busybox}]}
status: {phase: Running}
`)
	r := desired.Build(in, config(t), state.New(0))
	if len(r.Problems) > 0 {
		t.Fatalf("problems: %v", r.Problems)
	}
	got := Publications(r)
	if len(got) != 2 {
		t.Fatalf("Publications = %+v, want the pod and the VM", got)
	}
	vm, pod := got[1], got[0]
	const k = "flat.default.ovn.kubernetes.io/"
	if vm.Kind != KindVirtualMachine || value(vm, k+"mac_address") != "02:00:00:00:f1:01" || value(vm, k+"allocated") != "true" ||
		value(vm, k+"logical_switch") != "flat.default" {
		t.Errorf("VM publication = %+v, want its MAC recorded", vm)
	}
	if value(pod, k+"mac_address") == "" || value(pod, k+"routed") != "true" {
		t.Errorf("pod publication = %+v, want its MAC and routed", pod)
	}
	for _, p := range got {
		for _, key := range []string{k + "ip_address", k + "cidr", k + "gateway"} {
			if v, ok := p.Get(key); ok {
				t.Errorf("%s %s: %s = %q on a network without IPAM", p.Kind, p.Name, key, v)
			}
		}
	}
}

// TestExplain: explain names each address's source, the chassis and the
// change a pass would make, for an owner asked by kind and name, by its
// launcher pod, or by port name.
func TestExplain(t *testing.T) {
	nb := embeddedNB(t)
	in := manifests(t, vmWithLauncher)
	out := Compute(nb, All(in), Options{Config: config(t)})
	for _, q := range []string{"vm/tenant/db", "VirtualMachine/tenant/db", "pod/tenant/virt-launcher-db-x", "db.tenant.blue.tenant.ovn"} {
		e, err := Explain(out, q)
		if err != nil {
			t.Fatalf("Explain(%q): %v", q, err)
		}
		var b bytes.Buffer
		e.WriteText(&b)
		for _, want := range []string{
			"VirtualMachine tenant/db",
			"port db.tenant.blue.tenant.ovn",
			"02:00:00:00:00:01          request   spec.domain.devices.interfaces[blue].macAddress",
			"192.168.1.2                allocated",
			"chassis: node-2: the VMI's node",
			"change: create",
		} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("Explain(%q) lacks %q:\n%s", q, want, b.String())
			}
		}
	}
	if _, err := Explain(out, "pod/default/host"); err == nil {
		t.Errorf("Explain(a host-network pod) = nil error")
	}
	if _, err := Explain(out, "nosuch.port"); err == nil {
		t.Errorf("Explain(an unknown port) = nil error")
	}
}

// value is what p sets key to, "" when nothing.
func value(p Publication, key string) string {
	v, _ := p.Get(key)
	return v
}

// TestComputePublications: with Options.Publications, a computation holds
// what publishing writes, the same as from its result's facts, and lets
// the facts go.
func TestComputePublications(t *testing.T) {
	nb := embeddedNB(t)
	in := manifests(t, claimsCluster)
	full := Compute(nb, All(in), Options{Config: config(t)})
	lean := Compute(nb, All(in), Options{Config: config(t), Publications: true})
	pubs, claims := Publications(full.Result), ClaimStatuses(full.Result)
	if len(pubs) == 0 || len(claims) == 0 {
		t.Fatalf("the cluster publishes %d objects and %d claims, want some of each", len(pubs), len(claims))
	}
	if !reflect.DeepEqual(lean.Publications, pubs) || !reflect.DeepEqual(lean.Claims, claims) {
		t.Errorf("Outcome.Publications, Claims = %+v, %+v; want %+v, %+v", lean.Publications, lean.Claims, pubs, claims)
	}
	if n := len(lean.Result.Ports()); n != 0 {
		t.Errorf("the result keeps the facts of %d ports, want none", n)
	}
	if !reflect.DeepEqual(lean.Plan, full.Plan) || lean.Result.Want.Ports.Len() != full.Result.Want.Ports.Len() {
		t.Errorf("plan %v with Publications, %v without; want the same", lean.Plan.Counts(), full.Plan.Counts())
	}
	if full.Publications != nil || full.Claims != nil {
		t.Errorf("without Publications the outcome holds %d publications and %d claims, want none", len(full.Publications), len(full.Claims))
	}
}
