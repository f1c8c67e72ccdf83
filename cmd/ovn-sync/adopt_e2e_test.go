package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ovn-sync/ovn-sync/internal/kubetest"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/sources"
	"github.com/ovn-sync/ovn-sync/state"
)

// Adoption from kube-ovn (docs/kube-ovn.md, "Coming from kube-ovn"): a cluster built
// from kube-ovn's documented objects and the NB rows kube-ovn wrote for it.
//
// The objects: the Subnets kube-ovn-controller creates at install
// (ovn-default, the default one, and join, the nodes'), a namespace-bound
// Subnet (spec.namespaces, kube-ovn's "Subnet" guide), an attachment Subnet
// with its kube-ovn NAD and provider (kube-ovn's "Multiple network
// interfaces" attachnet example), pods with a static IP and MAC, with a
// logical_switch annotation, in the bound namespace and of a StatefulSet, a
// running VM (its VMI and virt-launcher pod as KubeVirt writes them, with
// kube-ovn's annotations on the launcher pod) and a stopped VM, each on the
// default network and attachnet, and kube-ovn's IP objects for all of them.
//
// The rows, as kube-ovn's pkg/ovs writes them: a switch per Subnet
// (external_ids:vendor only, the cluster load balancer), the ovn-cluster
// router with a router port per Subnet and its "router" switch port, the
// node's port on join (no external_ids), a port group holding a pod's port,
// and a port per pod and VM network (addresses "<mac> <ip>", port_security
// only where the pod asks for it, external_ids vendor, ls and pod).
//
// ovn-sync --adopt kube-ovn takes every pod and VM port over in place: no
// address changes, every row keeps its UUID, no other row is written, and a
// second pass sends nothing.

const kubeOVNConfig = `defaultNetwork:
  logicalSwitch: ovn-default
  subnets: ["10.16.0.0/16"]
  excludeIPs: ["10.16.0.1"]
  gateway: "10.16.0.1"
`

// kubeOVNObjects are the objects that need no UID of another.
var kubeOVNObjects = `apiVersion: v1
kind: Namespace
metadata:
  name: ns1
  annotations:
    ovn.kubernetes.io/cidr: 10.66.0.0/16
    ovn.kubernetes.io/exclude_ips: 10.66.0.1..10.66.0.10
    ovn.kubernetes.io/logical_switch: subnet1
---
apiVersion: v1
kind: Namespace
metadata:
  name: tenant
  annotations:
    ovn.kubernetes.io/cidr: 10.16.0.0/16
    ovn.kubernetes.io/exclude_ips: 10.16.0.1
    ovn.kubernetes.io/logical_switch: ovn-default
---
apiVersion: kubeovn.io/v1
kind: Subnet
metadata: {name: ovn-default, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  vpc: ovn-cluster
  default: true
  provider: ovn
  cidrBlock: 10.16.0.0/16
  gateway: 10.16.0.1
  gatewayNode: ""
  excludeIps: [10.16.0.1]
  natOutgoing: true
  gatewayType: distributed
  protocol: IPv4
  enableLb: true
---
apiVersion: kubeovn.io/v1
kind: Subnet
metadata: {name: join, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  vpc: ovn-cluster
  default: false
  provider: ovn
  cidrBlock: 100.64.0.0/16
  gateway: 100.64.0.1
  gatewayNode: ""
  excludeIps: [100.64.0.1]
  protocol: IPv4
  disableInterConnection: true
---
apiVersion: kubeovn.io/v1
kind: Subnet
metadata: {name: subnet1, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  vpc: ovn-cluster
  provider: ovn
  protocol: IPv4
  cidrBlock: 10.66.0.0/16
  gateway: 10.66.0.1
  excludeIps: [10.66.0.1..10.66.0.10]
  gatewayType: distributed
  natOutgoing: true
  namespaces: [ns1]
---
apiVersion: kubeovn.io/v1
kind: Subnet
metadata: {name: attachnet, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  vpc: ovn-cluster
  protocol: IPv4
  provider: attachnet.default.ovn
  cidrBlock: 172.17.0.0/16
  gateway: 172.17.0.1
  excludeIps: [172.17.0.0..172.17.0.10]
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: attachnet, namespace: default}
spec:
  config: '{"cniVersion":"0.3.0","type":"kube-ovn","server_socket":"/run/openvswitch/kube-ovn-daemon.sock","provider":"attachnet.default.ovn"}'
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
  annotations:
    k8s.v1.cni.cncf.io/networks: default/attachnet
    ovn.kubernetes.io/ip_address: 10.16.0.15
    ovn.kubernetes.io/mac_address: 00:00:00:53:6B:B6
    ovn.kubernetes.io/port_security: "true"
    ovn.kubernetes.io/allocated: "true"
    ovn.kubernetes.io/cidr: 10.16.0.0/16
    ovn.kubernetes.io/gateway: 10.16.0.1
    ovn.kubernetes.io/logical_router: ovn-cluster
    ovn.kubernetes.io/logical_switch: ovn-default
    ovn.kubernetes.io/pod_nic_type: veth-pair
    ovn.kubernetes.io/routed: "true"
    attachnet.default.ovn.kubernetes.io/allocated: "true"
    attachnet.default.ovn.kubernetes.io/cidr: 172.17.0.0/16
    attachnet.default.ovn.kubernetes.io/gateway: 172.17.0.1
    attachnet.default.ovn.kubernetes.io/ip_address: 172.17.0.11
    attachnet.default.ovn.kubernetes.io/logical_router: ovn-cluster
    attachnet.default.ovn.kubernetes.io/logical_switch: attachnet
    attachnet.default.ovn.kubernetes.io/mac_address: 8e:0b:52:3c:1d:01
    attachnet.default.ovn.kubernetes.io/pod_nic_type: veth-pair
    attachnet.default.ovn.kubernetes.io/routed: "true"
spec: {nodeName: node-1, containers: [{name: c, image: nginx}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: dyn
  namespace: default
  annotations:
    ovn.kubernetes.io/allocated: "true"
    ovn.kubernetes.io/cidr: 10.16.0.0/16
    ovn.kubernetes.io/gateway: 10.16.0.1
    ovn.kubernetes.io/ip_address: 10.16.0.2
    ovn.kubernetes.io/mac_address: 8e:0b:52:3c:1d:02
    ovn.kubernetes.io/logical_router: ovn-cluster
    ovn.kubernetes.io/logical_switch: ovn-default
    ovn.kubernetes.io/pod_nic_type: veth-pair
    ovn.kubernetes.io/routed: "true"
spec: {nodeName: node-2, containers: [{name: c, image: nginx}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: app
  namespace: ns1
  annotations:
    ovn.kubernetes.io/allocated: "true"
    ovn.kubernetes.io/cidr: 10.66.0.0/16
    ovn.kubernetes.io/gateway: 10.66.0.1
    ovn.kubernetes.io/ip_address: 10.66.0.11
    ovn.kubernetes.io/mac_address: 8e:0b:52:3c:1d:03
    ovn.kubernetes.io/logical_router: ovn-cluster
    ovn.kubernetes.io/logical_switch: subnet1
    ovn.kubernetes.io/pod_nic_type: veth-pair
    ovn.kubernetes.io/routed: "true"
spec: {nodeName: node-1, containers: [{name: c, image: nginx}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: pinned
  namespace: ns1
  annotations:
    ovn.kubernetes.io/logical_switch: ovn-default
    ovn.kubernetes.io/ip_address: 10.16.0.20
    ovn.kubernetes.io/allocated: "true"
    ovn.kubernetes.io/cidr: 10.16.0.0/16
    ovn.kubernetes.io/gateway: 10.16.0.1
    ovn.kubernetes.io/mac_address: 8e:0b:52:3c:1d:04
    ovn.kubernetes.io/logical_router: ovn-cluster
    ovn.kubernetes.io/pod_nic_type: veth-pair
    ovn.kubernetes.io/routed: "true"
spec: {nodeName: node-2, containers: [{name: c, image: nginx}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: router
  namespace: default
  annotations:
    k8s.v1.cni.cncf.io/networks: default/attachnet@net1, default/attachnet@net2
    ovn.kubernetes.io/allocated: "true"
    ovn.kubernetes.io/cidr: 10.16.0.0/16
    ovn.kubernetes.io/gateway: 10.16.0.1
    ovn.kubernetes.io/ip_address: 10.16.0.21
    ovn.kubernetes.io/mac_address: 8e:0b:52:3c:1d:11
    ovn.kubernetes.io/logical_router: ovn-cluster
    ovn.kubernetes.io/logical_switch: ovn-default
    ovn.kubernetes.io/pod_nic_type: veth-pair
    ovn.kubernetes.io/routed: "true"
    attachnet.default.ovn.net1.kubernetes.io/allocated: "true"
    attachnet.default.ovn.net1.kubernetes.io/cidr: 172.17.0.0/16
    attachnet.default.ovn.net1.kubernetes.io/gateway: 172.17.0.1
    attachnet.default.ovn.net1.kubernetes.io/ip_address: 172.17.0.21
    attachnet.default.ovn.net1.kubernetes.io/mac_address: 8e:0b:52:3c:1d:12
    attachnet.default.ovn.net1.kubernetes.io/logical_router: ovn-cluster
    attachnet.default.ovn.net1.kubernetes.io/logical_switch: attachnet
    attachnet.default.ovn.net1.kubernetes.io/pod_nic_type: veth-pair
    attachnet.default.ovn.net1.kubernetes.io/routed: "true"
    attachnet.default.ovn.net2.kubernetes.io/allocated: "true"
    attachnet.default.ovn.net2.kubernetes.io/cidr: 172.17.0.0/16
    attachnet.default.ovn.net2.kubernetes.io/gateway: 172.17.0.1
    attachnet.default.ovn.net2.kubernetes.io/ip_address: 172.17.0.22
    attachnet.default.ovn.net2.kubernetes.io/mac_address: 8e:0b:52:3c:1d:13
    attachnet.default.ovn.net2.kubernetes.io/logical_router: ovn-cluster
    attachnet.default.ovn.net2.kubernetes.io/logical_switch: attachnet
    attachnet.default.ovn.net2.kubernetes.io/pod_nic_type: veth-pair
    attachnet.default.ovn.net2.kubernetes.io/routed: "true"
spec: {nodeName: node-1, containers: [{name: c, image: frr}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: ns1}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: postgres}]}
---
apiVersion: v1
kind: Pod
metadata: {name: legacy, namespace: default}
spec: {nodeName: node-2, containers: [{name: c, image: nginx}]}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm2, namespace: tenant}
spec:
  runStrategy: Halted
  template:
    spec:
      domain: {devices: {interfaces: [{name: default, bridge: {}}, {name: attach, bridge: {}}]}}
      networks: [{name: default, pod: {}}, {name: attach, multus: {networkName: default/attachnet}}]
` + kubeOVNIPObjects

// kubeOVNStatefulSetPod is a pod of StatefulSet db as kube-ovn left it;
// stsUID is the StatefulSet's.
func kubeOVNStatefulSetPod(ord int, stsUID string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: db-%[1]d
  namespace: ns1
  labels: {app: db, statefulset.kubernetes.io/pod-name: db-%[1]d}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: %[2]s, controller: true}]
  annotations:
    ovn.kubernetes.io/allocated: "true"
    ovn.kubernetes.io/cidr: 10.66.0.0/16
    ovn.kubernetes.io/gateway: 10.66.0.1
    ovn.kubernetes.io/ip_address: 10.66.0.1%[3]d
    ovn.kubernetes.io/mac_address: 8e:0b:52:3c:1d:0%[4]d
    ovn.kubernetes.io/logical_router: ovn-cluster
    ovn.kubernetes.io/logical_switch: subnet1
    ovn.kubernetes.io/pod_nic_type: veth-pair
    ovn.kubernetes.io/routed: "true"
spec: {nodeName: node-1, hostname: db-%[1]d, subdomain: db, containers: [{name: c, image: postgres}]}
`, ord, stsUID, ord+2, ord+5)
}

// kubeOVNIPObjects are kube-ovn's IP objects, as its controller creates them
// (createOrUpdateIPCR): one per port, named after it, and the node's.
var kubeOVNIPObjects = func() string {
	var b strings.Builder
	for _, p := range kubeOVNPorts {
		kind := ""
		if strings.HasPrefix(p.owner, "VirtualMachine/") {
			kind = "VirtualMachine"
		} else if strings.HasPrefix(p.pod, "ns1/db-") {
			kind = "StatefulSet"
		}
		ns, name, _ := strings.Cut(p.pod, "/")
		mac, ip, _ := strings.Cut(p.addresses, " ")
		fmt.Fprintf(&b, `---
apiVersion: kubeovn.io/v1
kind: IP
metadata:
  name: %s
  labels: {ovn.kubernetes.io/subnet: %s, ovn.kubernetes.io/node-name: %q, %s: "", ovn.kubernetes.io/ip_reserved: "false"}
spec: {podName: %s, namespace: %s, subnet: %s, nodeName: %q, ipAddress: %s, v4IpAddress: %s, v6IpAddress: "", macAddress: %q, attachIps: [], attachMacs: [], attachSubnets: [], containerID: "", podType: %q}
`, p.name, p.sw, p.node, p.sw, name, ns, p.sw, p.node, ip, ip, mac, kind)
	}
	b.WriteString(`---
apiVersion: kubeovn.io/v1
kind: IP
metadata:
  name: node-node-1
  labels: {ovn.kubernetes.io/subnet: join, ovn.kubernetes.io/node-name: node-1, join: "", ovn.kubernetes.io/ip_reserved: "false"}
spec: {podName: node-1, namespace: "", subnet: join, nodeName: node-1, ipAddress: 100.64.0.2, v4IpAddress: 100.64.0.2, v6IpAddress: "", macAddress: "8e:0b:52:3c:1d:ff", attachIps: [], attachMacs: [], attachSubnets: [], containerID: "", podType: ""}
`)
	return b.String()
}()

// The running VM vm1: the VM, its VMI (owned by the VM's UID) and its
// virt-launcher pod (owned by the VMI's UID), with what KubeVirt copies from
// the template (the static IP request) and what kube-ovn wrote on the pod.
// uid is the object's own UID where no API server sets one (manifests),
// else "".
func kubeOVNVM(uid string) string {
	return `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm1, namespace: tenant` + uidField(uid) + `}
spec:
  runStrategy: Always
  template:
    metadata:
      annotations: {ovn.kubernetes.io/ip_address: 10.16.0.30}
    spec:
      domain: {devices: {interfaces: [{name: default, bridge: {}}, {name: attach, bridge: {}}]}}
      networks: [{name: default, pod: {}}, {name: attach, multus: {networkName: default/attachnet}}]
`
}

func kubeOVNVMI(vmUID, uid string) string {
	return `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: vm1
  namespace: tenant` + strings.ReplaceAll(uidField(uid), ", ", "\n  ") + `
  labels: {kubevirt.io/nodeName: node-1, vm.kubevirt.io/name: vm1}
  annotations: {kubevirt.io/latest-observed-api-version: v1, kubevirt.io/vm-generation: "1", ovn.kubernetes.io/ip_address: 10.16.0.30}
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: vm1, uid: ` + vmUID + `, controller: true, blockOwnerDeletion: true}]
spec:
  domain: {devices: {interfaces: [{name: default, bridge: {}}, {name: attach, bridge: {}}]}}
  networks: [{name: default, pod: {}}, {name: attach, multus: {networkName: default/attachnet}}]
`
}

func uidField(uid string) string {
	if uid == "" {
		return ""
	}
	return ", uid: " + uid
}

func kubeOVNLauncher(vmiUID string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: virt-launcher-vm1-7xk2p
  namespace: tenant
  labels: {kubevirt.io: virt-launcher, kubevirt.io/created-by: ` + vmiUID + `, kubevirt.io/domain: vm1, vm.kubevirt.io/name: vm1}
  annotations:
    kubevirt.io/domain: vm1
    kubectl.kubernetes.io/default-container: compute
    kubevirt.io/vm-generation: "1"
    k8s.v1.cni.cncf.io/networks: '[{"interface":"pod37a8eec1ce1","name":"attachnet","namespace":"default"}]'
    ovn.kubernetes.io/ip_address: 10.16.0.30
    ovn.kubernetes.io/allocated: "true"
    ovn.kubernetes.io/cidr: 10.16.0.0/16
    ovn.kubernetes.io/gateway: 10.16.0.1
    ovn.kubernetes.io/mac_address: 8e:0b:52:3c:1d:07
    ovn.kubernetes.io/logical_router: ovn-cluster
    ovn.kubernetes.io/logical_switch: ovn-default
    ovn.kubernetes.io/pod_nic_type: veth-pair
    ovn.kubernetes.io/virtualmachine: vm1
    ovn.kubernetes.io/routed: "true"
    attachnet.default.ovn.kubernetes.io/allocated: "true"
    attachnet.default.ovn.kubernetes.io/cidr: 172.17.0.0/16
    attachnet.default.ovn.kubernetes.io/gateway: 172.17.0.1
    attachnet.default.ovn.kubernetes.io/ip_address: 172.17.0.12
    attachnet.default.ovn.kubernetes.io/mac_address: 8e:0b:52:3c:1d:08
    attachnet.default.ovn.kubernetes.io/logical_router: ovn-cluster
    attachnet.default.ovn.kubernetes.io/logical_switch: attachnet
    attachnet.default.ovn.kubernetes.io/pod_nic_type: veth-pair
    attachnet.default.ovn.kubernetes.io/virtualmachine: vm1
    attachnet.default.ovn.kubernetes.io/routed: "true"
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachineInstance, name: vm1, uid: ` + vmiUID + `, controller: true, blockOwnerDeletion: true}]
spec: {nodeName: node-1, containers: [{name: compute, image: virt-launcher}]}
`
}

// applyKubeOVNCluster creates kube-ovn's cluster in k: the documents of
// kubeOVNObjects that keep keeps (every one when keep is nil), the
// StatefulSet's pods and the running VM vm1 with its VMI and launcher pod.
func applyKubeOVNCluster(t *testing.T, k *kubetest.Server, keep func(doc string) bool) {
	t.Helper()
	var docs []string
	for _, doc := range strings.Split(kubeOVNObjects, "\n---") {
		if keep == nil || keep(doc+"\n") {
			docs = append(docs, doc)
		}
	}
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(docs, "\n---")), 0o644); err != nil {
		t.Fatal(err)
	}
	k.ApplyFile(path)
	sts, err := k.Kube.AppsV1().StatefulSets("ns1").Get(context.Background(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		k.Create(corev1.SchemeGroupVersion.WithResource("pods"), kubeOVNStatefulSetPod(i, string(sts.UID)))
	}
	vm := k.Create(sources.GVRVirtualMachine, kubeOVNVM(""))
	vmi := k.Create(sources.GVRVirtualMachineInstance, kubeOVNVMI(string(vm.GetUID()), ""))
	patchStatus(t, k, sources.GVRVirtualMachineInstance, "tenant", "vm1", `{"status":{"phase":"Running","nodeName":"node-1"}}`)
	k.Create(corev1.SchemeGroupVersion.WithResource("pods"), kubeOVNLauncher(string(vmi.GetUID())))
}

// kubeOVNPort is one row as kube-ovn would have written it, and what
// ovn-sync must make of it.
type kubeOVNPort struct {
	name, sw, addresses, pod, node string
	portSecurity                   bool   // the pod asked (ovn.kubernetes.io/port_security)
	owner                          string // after adoption
}

var kubeOVNPorts = []kubeOVNPort{
	{"web.default", "ovn-default", "00:00:00:53:6b:b6 10.16.0.15", "default/web", "node-1", true, "Pod/default/web"},
	{"web.default.attachnet.default.ovn", "attachnet", "8e:0b:52:3c:1d:01 172.17.0.11", "default/web", "node-1", false, "Pod/default/web"},
	{"dyn.default", "ovn-default", "8e:0b:52:3c:1d:02 10.16.0.2", "default/dyn", "node-2", false, "Pod/default/dyn"},
	// One NAD attached twice, each interface named: kube-ovn suffixes both
	// ports with the interface (pkg/controller/pod.go, getPodKubeovnNets).
	{"router.default", "ovn-default", "8e:0b:52:3c:1d:11 10.16.0.21", "default/router", "node-1", false, "Pod/default/router"},
	{"router.default.attachnet.default.ovn.net1", "attachnet", "8e:0b:52:3c:1d:12 172.17.0.21", "default/router", "node-1", false, "Pod/default/router"},
	{"router.default.attachnet.default.ovn.net2", "attachnet", "8e:0b:52:3c:1d:13 172.17.0.22", "default/router", "node-1", false, "Pod/default/router"},
	{"app.ns1", "subnet1", "8e:0b:52:3c:1d:03 10.66.0.11", "ns1/app", "node-1", false, "Pod/ns1/app"},
	{"pinned.ns1", "ovn-default", "8e:0b:52:3c:1d:04 10.16.0.20", "ns1/pinned", "node-2", false, "Pod/ns1/pinned"},
	{"db-0.ns1", "subnet1", "8e:0b:52:3c:1d:05 10.66.0.12", "ns1/db-0", "node-1", false, "Pod/ns1/db-0"},
	{"db-1.ns1", "subnet1", "8e:0b:52:3c:1d:06 10.66.0.13", "ns1/db-1", "node-1", false, "Pod/ns1/db-1"},
	{"vm1.tenant", "ovn-default", "8e:0b:52:3c:1d:07 10.16.0.30", "tenant/vm1", "node-1", false, "VirtualMachine/tenant/vm1"},
	{"vm1.tenant.attachnet.default.ovn", "attachnet", "8e:0b:52:3c:1d:08 172.17.0.12", "tenant/vm1", "node-1", false, "VirtualMachine/tenant/vm1"},
	{"vm2.tenant", "ovn-default", "8e:0b:52:3c:1d:09 10.16.0.3", "tenant/vm2", "", false, "VirtualMachine/tenant/vm2"},
	{"vm2.tenant.attachnet.default.ovn", "attachnet", "8e:0b:52:3c:1d:0a 172.17.0.13", "tenant/vm2", "", false, "VirtualMachine/tenant/vm2"},
}

// kubeOVNSwitches are the Subnets' switches: name, gateway/mask (the router
// port's networks).
var kubeOVNSwitches = [][2]string{
	{"ovn-default", "10.16.0.1/16"}, {"join", "100.64.0.1/16"}, {"subnet1", "10.66.0.1/16"}, {"attachnet", "172.17.0.1/16"},
}

// writeKubeOVNRows writes the NB as kube-ovn left it, and one port an older
// ovn-sync stamped with an owner but no switch, beside a key of someone
// else's.
func writeKubeOVNRows(t *testing.T, s *nbtest.Server) {
	t.Helper()
	s.NBCtl("lr-add", "ovn-cluster", "--", "set", "Logical_Router", "ovn-cluster",
		"options:mac_binding_age_threshold=300", "options:dynamic_neigh_routers=true", "external_ids:vendor=kube-ovn")
	s.NBCtl("lb-add", "cluster-tcp-loadbalancer", "10.96.0.1:443", "172.18.0.2:6443", "tcp")
	for i, sw := range kubeOVNSwitches {
		ls, lr := sw[0], "ovn-cluster"
		// CreateBareLogicalSwitch, then CreateLogicalPatchPort (CreateRouterPortOp).
		s.NBCtl("ls-add", ls, "--", "set", "Logical_Switch", ls, "external_ids:vendor=kube-ovn")
		s.NBCtl("lrp-add", lr, lr+"-"+ls, fmt.Sprintf("8e:0b:52:3c:2d:%02x", i+1), sw[1],
			"--", "set", "Logical_Router_Port", lr+"-"+ls, "external_ids:vendor=kube-ovn")
		s.NBCtl("lsp-add", ls, ls+"-"+lr, "--", "lsp-set-type", ls+"-"+lr, "router",
			"--", "lsp-set-addresses", ls+"-"+lr, "router", "--", "lsp-set-options", ls+"-"+lr, "router-port="+lr+"-"+ls)
		if ls != "join" {
			s.NBCtl("ls-lb-add", ls, "cluster-tcp-loadbalancer")
		}
	}
	// The node's port (CreateBareLogicalSwitchPort: no external_ids).
	s.NBCtl("lsp-add", "join", "node-node-1", "--", "lsp-set-addresses", "node-node-1", "8e:0b:52:3c:1d:ff 100.64.0.2")
	for _, p := range kubeOVNPorts {
		args := []string{"lsp-add", p.sw, p.name, "--", "lsp-set-addresses", p.name, p.addresses}
		if p.portSecurity {
			args = append(args, "--", "lsp-set-port-security", p.name, p.addresses)
		}
		args = append(args, "--", "set", "Logical_Switch_Port", p.name,
			"external_ids:vendor=kube-ovn", "external_ids:ls="+p.sw, `external_ids:pod="`+p.pod+`"`)
		s.NBCtl(args...)
	}
	// A network policy's port group (kube-ovn names it <policy>.<ns>).
	s.NBCtl("pg-add", "allow.web.default", "web.default", "--", "set", "Port_Group", "allow.web.default",
		`external_ids:np="allow-web/default"`)
	s.NBCtl("lsp-add", "ovn-default", "legacy.default", "--", "lsp-set-addresses", "legacy.default", "0a:58:0a:10:00:05 10.16.0.5",
		"--", "lsp-set-port-security", "legacy.default", "0a:58:0a:10:00:05 10.16.0.5",
		"--", "set", "Logical_Switch_Port", "legacy.default",
		"external_ids:ovn-sync/owner=Pod/default/legacy", "external_ids:ovn-sync/network=default", "external_ids:team=a")
}

// nbSnapshot is every row of the tables kube-ovn wrote, by table and name,
// each column as ovn-nbctl prints it in JSON.
type nbSnapshot map[string]map[string]map[string]string

func snapshotNB(t *testing.T, s *nbtest.Server) nbSnapshot {
	t.Helper()
	snap := nbSnapshot{}
	for _, table := range []string{"Logical_Switch", "Logical_Switch_Port", "Logical_Router", "Logical_Router_Port", "Load_Balancer", "Port_Group"} {
		out := s.NBCtl("--format=json", "list", table)
		var res struct {
			Headings []string            `json:"headings"`
			Data     [][]json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("ovn-nbctl list %s: %v", table, err)
		}
		rows := map[string]map[string]string{}
		for _, row := range res.Data {
			cols := map[string]string{}
			for i, h := range res.Headings {
				cols[h] = string(row[i])
			}
			var name string
			if err := json.Unmarshal(row[slices.Index(res.Headings, "name")], &name); err != nil {
				t.Fatalf("%s name: %v", table, err)
			}
			rows[name] = cols
		}
		snap[table] = rows
	}
	return snap
}

// ovsdbMap reads a map column as ovn-nbctl prints it in JSON.
func ovsdbMap(t *testing.T, raw string) map[string]string {
	t.Helper()
	var v []json.RawMessage
	var pairs [][2]string
	if err := json.Unmarshal([]byte(raw), &v); err != nil || len(v) != 2 || json.Unmarshal(v[1], &pairs) != nil {
		t.Fatalf("not an OVSDB map: %s", raw)
	}
	m := map[string]string{}
	for _, kv := range pairs {
		m[kv[0]] = kv[1]
	}
	return m
}

// checkAdopted checks the NB after adoption against before: every row
// other than the adopted ports (and legacy.default) exactly as it was; the
// adopted ports with the same UUID, addresses, switch and every column and
// key of kube-ovn's, plus ovn-sync's keys, port_security equal to the
// addresses and the chassis of a scheduled owner.
func checkAdopted(t *testing.T, s *nbtest.Server, before nbSnapshot) {
	t.Helper()
	after := snapshotNB(t, s)
	taken := map[string]kubeOVNPort{"legacy.default": {name: "legacy.default", sw: "ovn-default", addresses: "0a:58:0a:10:00:05 10.16.0.5",
		node: "node-2", owner: "Pod/default/legacy"}}
	for _, p := range kubeOVNPorts {
		taken[p.name] = p
	}
	for table, rows := range before {
		if len(after[table]) != len(rows) {
			t.Errorf("%s: %d rows after, %d before", table, len(after[table]), len(rows))
		}
		for name, cols := range rows {
			got := after[table][name]
			if got == nil {
				t.Errorf("%s %s: gone", table, name)
				continue
			}
			p, ok := taken[name]
			for col, v := range cols {
				if table == "Logical_Switch_Port" && ok && (col == "external_ids" || col == "options" || col == "port_security") {
					continue
				}
				if got[col] != v {
					t.Errorf("%s %s: %s = %s, was %s", table, name, col, got[col], v)
				}
			}
			if table != "Logical_Switch_Port" || !ok {
				continue
			}
			ids, was := ovsdbMap(t, got["external_ids"]), ovsdbMap(t, cols["external_ids"])
			for k, v := range was {
				if ids[k] != v {
					t.Errorf("%s: external_ids:%s = %q, was %q", name, k, ids[k], v)
				}
			}
			for k, want := range map[string]string{state.KeyOwner: p.owner, state.KeySwitch: p.sw} {
				if ids[k] != want {
					t.Errorf("%s: external_ids:%s = %q, want %q", name, k, ids[k], want)
				}
			}
			opts, wasOpts := ovsdbMap(t, got["options"]), ovsdbMap(t, cols["options"])
			for k, v := range wasOpts {
				if opts[k] != v {
					t.Errorf("%s: options:%s = %q, was %q", name, k, opts[k], v)
				}
			}
			if opts["requested-chassis"] != p.node {
				t.Errorf("%s: options:requested-chassis = %q, want %q", name, opts["requested-chassis"], p.node)
			}
			if ps := strings.Trim(s.Get("Logical_Switch_Port", name, "port_security"), `[]"`); ps != p.addresses {
				t.Errorf("%s: port_security = %q, want its addresses %q", name, ps, p.addresses)
			}
		}
	}
}

func TestAdoptKubeOVNAgainstRealNB(t *testing.T) {
	s := nbtest.Start(t)
	writeKubeOVNRows(t, s)
	before := snapshotNB(t, s)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(kubeOVNConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := manifestDir(t, map[string]string{
		"cluster.yaml": kubeOVNObjects + "---\n" + kubeOVNStatefulSetPod(0, "sts-uid") + "---\n" + kubeOVNStatefulSetPod(1, "sts-uid") +
			"---\n" + kubeOVNVM("vm1-uid") + "---\n" + kubeOVNVMI("vm1-uid", "vmi1-uid") +
			"status: {phase: Running, nodeName: node-1}\n---\n" + kubeOVNLauncher("vmi1-uid"),
	})

	// Without --adopt: kube-ovn's ports stay kube-ovn's, a problem each, and
	// only our own port is updated.
	commits := s.Commits()
	out := runOneShot(t, s, cfg, "plan", dir, 2, "--detailed-exitcode")
	if !strings.Contains(out, "Plan: 0 to add, 1 to change, 0 to destroy.") ||
		strings.Count(out, "is kube-ovn's: not adopted without --adopt kube-ovn") != len(kubeOVNPorts) {
		t.Errorf("plan without --adopt: want legacy.default's update and a problem per kube-ovn port, got:\n%s", out)
	}

	// With it: one update per port, nothing added or destroyed.
	out = runOneShot(t, s, cfg, "plan", dir, 2, "--detailed-exitcode", "--adopt", "kube-ovn")
	if !strings.Contains(out, `~ logical_switch_port "vm2.tenant" (VirtualMachine/tenant/vm2): adopt from kube-ovn`) ||
		!strings.Contains(out, fmt.Sprintf("Plan: 0 to add, %d to change, 0 to destroy.", len(kubeOVNPorts)+1)) ||
		strings.Contains(out, "problem:") || strings.Contains(out, "notice:") {
		t.Errorf("plan --adopt kube-ovn:\n%s", out)
	}
	if s.Commits() != commits {
		t.Fatalf("plan committed")
	}
	if out := runOneShot(t, s, cfg, "apply", dir, 0, "--adopt", "kube-ovn"); strings.Contains(out, "problem:") || strings.Contains(out, "notice:") {
		t.Errorf("apply --adopt kube-ovn reports problems or notices:\n%s", out)
	}
	checkAdopted(t, s, before)

	// A second pass sends nothing.
	commits = s.Commits()
	if out := runOneShot(t, s, cfg, "apply", dir, 0, "--adopt", "kube-ovn"); strings.TrimSpace(out) != "No changes." {
		t.Errorf("second apply:\n%s", out)
	}
	runOneShot(t, s, cfg, "plan", dir, 0, "--detailed-exitcode", "--adopt", "kube-ovn")
	if got := s.Commits(); got != commits {
		t.Errorf("second pass committed %d transactions", got-commits)
	}

	// The NB is lost while db-1, a StatefulSet pod, is being created again
	// (gone from the cluster, its IP object kept, as kube-ovn keeps it). A
	// new pod in ns1 is created meanwhile. Every owner comes back on its
	// addresses (records: pod and launcher annotations, IP objects), the new
	// pod gets none of them, and db-1, back without annotations, gets its
	// own from its IP object.
	s.Wipe()
	cluster := kubeOVNObjects + "---\n" + kubeOVNStatefulSetPod(0, "sts-uid") + "---\n" + kubeOVNVM("vm1-uid") + "---\n" +
		kubeOVNVMI("vm1-uid", "vmi1-uid") + "status: {phase: Running, nodeName: node-1}\n---\n" + kubeOVNLauncher("vmi1-uid")
	lost := manifestDir(t, map[string]string{"cluster.yaml": cluster})
	runOneShot(t, s, cfg, "apply", lost, 0, "--adopt", "kube-ovn")
	fresh := manifestDir(t, map[string]string{"cluster.yaml": cluster + "---\n" + pod("new", "ns1", "2026-02-01T00:00:00Z", "")})
	runOneShot(t, s, cfg, "apply", fresh, 0, "--adopt", "kube-ovn")
	back := `apiVersion: v1
kind: Pod
metadata:
  name: db-1
  namespace: ns1
  labels: {app: db, statefulset.kubernetes.io/pod-name: db-1}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: sts-uid, controller: true}]
spec: {nodeName: node-2, hostname: db-1, subdomain: db, containers: [{name: c, image: postgres}]}
`
	returned := manifestDir(t, map[string]string{"cluster.yaml": cluster + "---\n" + pod("new", "ns1", "2026-02-01T00:00:00Z", "") + "---\n" + back})
	runOneShot(t, s, cfg, "apply", returned, 0, "--adopt", "kube-ovn")
	for _, p := range kubeOVNPorts {
		if got := addresses(t, s, p.name); got != p.addresses {
			t.Errorf("after the NB was lost: %s addresses %q, want %q", p.name, got, p.addresses)
		}
	}
	if got := addresses(t, s, "new.ns1"); got == "" || strings.Contains(got, "10.66.0.13") {
		t.Errorf("new.ns1 addresses %q: want a fresh address on subnet1, not db-1's", got)
	}
}

// TestRunAdoptKubeOVN is the same cluster in run mode, against a real
// kube-apiserver: the objects are created, then ovn-sync run --adopt
// kube-ovn starts.
func TestRunAdoptKubeOVN(t *testing.T) {
	e := startEnv(t, envOptions{RBAC: deployRBAC})
	k, nbs, nb := e.k, e.nbs, e.nb
	writeKubeOVNRows(t, nbs)
	before := snapshotNB(t, nbs)
	applyKubeOVNCluster(t, k, nil)

	run := e.run("--leader-elect=false", "--adopt", "kube-ovn", "--default-subnets", "10.16.0.0/16", "--default-gateway", "10.16.0.1")
	for _, p := range kubeOVNPorts {
		portIs(t, nb, p.name, "adopted", func(q *state.Port) error {
			if q == nil || q.Owner != p.owner || q.Switch != p.sw {
				return fmt.Errorf("%+v", q)
			}
			return nil
		})
	}
	portIs(t, nb, "legacy.default", "given its switch", func(q *state.Port) error {
		if q == nil || q.Switch != "ovn-default" {
			return fmt.Errorf("%+v", q)
		}
		return nil
	})
	run.waitReady()
	checkAdopted(t, nbs, before)
	if n := run.metric("ovn_sync_problems"); n != 0 {
		t.Errorf("%v problems after adoption:\n%s", n, run.logTail(4000))
	}

	// A pass that a Kubernetes change starts finds nothing to do: a
	// kube-ovn annotation of a provider the pod has no interface on, which
	// the stores keep, changes no port (an annotation or a label ovn-sync
	// does not read would make no pass at all).
	txns := run.metric("ovn_sync_transactions_total")
	passes := run.metric("ovn_sync_passes_total", `result="success"`)
	if _, err := k.Kube.CoreV1().Pods("default").Patch(context.Background(), "dyn", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"elsewhere.default.ovn.kubernetes.io/gateway":"192.168.9.1"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	looptest.WaitFor(t, 30*time.Second, "a pass after the annotation", func() error {
		if got := run.metric("ovn_sync_passes_total", `result="success"`); got <= passes {
			return fmt.Errorf("%v successful passes, no more than %v", got, passes)
		}
		return nil
	})
	if got := run.metric("ovn_sync_transactions_total"); got != txns {
		t.Errorf("a pass after adoption sent %v transactions, want 0", got-txns)
	}
	checkAdopted(t, nbs, before)
}

// TestNotAdoptedIsPending: a plan whose only news is an owner without a
// port, because kube-ovn's holds its name, is not "no changes" to
// --detailed-exitcode.
func TestNotAdoptedIsPending(t *testing.T) {
	s := nbtest.Start(t)
	s.NBCtl("ls-add", "ovn-default")
	s.NBCtl("lsp-add", "ovn-default", "dyn.default", "--", "lsp-set-addresses", "dyn.default", "00:00:00:11:22:33 10.16.0.2",
		"--", "set", "Logical_Switch_Port", "dyn.default", "external_ids:vendor=kube-ovn", "external_ids:ls=ovn-default")
	dir := manifestDir(t, map[string]string{"pod.yaml": pod("dyn", "default", "2026-01-01T00:00:00Z", "")})
	out := runOneShot(t, s, configFile(t), "plan", dir, 2, "--detailed-exitcode")
	if !strings.Contains(out, "No changes.") || !strings.Contains(out, `port "dyn.default" is kube-ovn's`) {
		t.Errorf("plan:\n%s", out)
	}
	runOneShot(t, s, configFile(t), "plan", dir, 2, "--detailed-exitcode", "--adopt", "kube-ovn")
	runOneShot(t, s, configFile(t), "apply", dir, 0, "--adopt", "kube-ovn")
	runOneShot(t, s, configFile(t), "plan", dir, 0, "--detailed-exitcode", "--adopt", "kube-ovn")
}

// TestAdoptRefusesMislabelledPort: a kube-ovn port whose ls key names
// ovn-default but that lives on another switch is not written: apply fails
// rather than record a switch the port is not on.
func TestAdoptRefusesMislabelledPort(t *testing.T) {
	s := nbtest.Start(t)
	s.NBCtl("ls-add", "ovn-default")
	s.NBCtl("ls-add", "elsewhere")
	s.NBCtl("lsp-add", "elsewhere", "dyn.default", "--", "lsp-set-addresses", "dyn.default", "00:00:00:11:22:33 10.16.0.2",
		"--", "set", "Logical_Switch_Port", "dyn.default", "external_ids:vendor=kube-ovn", "external_ids:ls=ovn-default")
	dir := manifestDir(t, map[string]string{"pod.yaml": pod("dyn", "default", "2026-01-01T00:00:00Z", "")})
	out := runOneShot(t, s, configFile(t), "apply", dir, 1, "--adopt", "kube-ovn")
	if got := s.Get("Logical_Switch_Port", "dyn.default", "external_ids:"+state.KeyOwner); got != "" {
		t.Errorf("mislabelled port adopted (owner %q); output:\n%s", got, out)
	}
}
