package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ovn-sync/ovn-sync/internal/kubetest"
	"github.com/ovn-sync/ovn-sync/internal/nbtest"
	"github.com/ovn-sync/ovn-sync/sources"
	"github.com/ovn-sync/ovn-sync/state"
)

// Adoption from kube-ovn (README "Coming from kube-ovn"): a cluster as
// kube-ovn documents it — the default Subnet ovn-default (10.16.0.0/16), an
// attachment network by a kube-ovn NAD with subnets, pods with static and
// dynamic addresses, a running VM and a stopped VM, IP objects — and the NB
// rows kube-ovn wrote for them. ovn-sync --adopt kube-ovn takes every port
// over in place: no address changes, every row keeps its UUID and
// kube-ovn's keys, and a second pass sends nothing.

const kubeOVNConfig = `defaultNetwork:
  logicalSwitch: ovn-default
  subnets: ["10.16.0.0/16"]
  excludeIPs: ["10.16.0.1"]
  gateway: "10.16.0.1"
`

// kubeOVNObjects are the objects that need no UID of another: a kube-ovn
// NAD with subnets, a pod with a static IP and MAC on both networks, a pod
// kube-ovn gave an address, a stopped VM, a pod whose port an older version
// stamped without a switch, and kube-ovn's IP objects.
const kubeOVNObjects = `apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: attachnet, namespace: default}
spec:
  config: '{"cniVersion":"0.3.0","type":"kube-ovn","server_socket":"/run/openvswitch/kube-ovn-daemon.sock","provider":"attachnet.default.ovn","subnets":"172.17.0.0/16","logical_switch":"attachnet"}'
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
    ovn.kubernetes.io/allocated: "true"
    ovn.kubernetes.io/logical_switch: ovn-default
    ovn.kubernetes.io/cidr: 10.16.0.0/16
    ovn.kubernetes.io/gateway: 10.16.0.1
    ovn.kubernetes.io/routed: "true"
    attachnet.default.ovn.kubernetes.io/allocated: "true"
    attachnet.default.ovn.kubernetes.io/ip_address: 172.17.0.2
    attachnet.default.ovn.kubernetes.io/mac_address: 00:00:00:7d:2a:10
    attachnet.default.ovn.kubernetes.io/logical_switch: attachnet
spec: {nodeName: node-1, containers: [{name: c, image: nginx}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: dyn
  namespace: default
  annotations:
    ovn.kubernetes.io/allocated: "true"
    ovn.kubernetes.io/ip_address: 10.16.0.2
    ovn.kubernetes.io/mac_address: 00:00:00:11:22:33
    ovn.kubernetes.io/logical_switch: ovn-default
    ovn.kubernetes.io/routed: "true"
spec: {nodeName: node-2, containers: [{name: c, image: nginx}]}
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
      domain: {devices: {interfaces: [{name: default, bridge: {}}]}}
      networks: [{name: default, pod: {}}]
---
apiVersion: kubeovn.io/v1
kind: IP
metadata: {name: web.default}
spec: {podName: web, namespace: default, subnet: ovn-default, nodeName: node-1, ipAddress: 10.16.0.15, v4IpAddress: 10.16.0.15, macAddress: "00:00:00:53:6b:b6", attachSubnets: [], attachIps: [], attachMacs: []}
---
apiVersion: kubeovn.io/v1
kind: IP
metadata: {name: web.default.attachnet.default.ovn}
spec: {podName: web, namespace: default, subnet: attachnet, nodeName: node-1, ipAddress: 172.17.0.2, v4IpAddress: 172.17.0.2, macAddress: "00:00:00:7d:2a:10"}
---
apiVersion: kubeovn.io/v1
kind: IP
metadata: {name: dyn.default}
spec: {podName: dyn, namespace: default, subnet: ovn-default, nodeName: node-2, ipAddress: 10.16.0.2, v4IpAddress: 10.16.0.2, macAddress: "00:00:00:11:22:33"}
---
apiVersion: kubeovn.io/v1
kind: IP
metadata: {name: vm1.tenant}
spec: {podName: vm1, namespace: tenant, subnet: ovn-default, nodeName: node-1, podType: VirtualMachine, ipAddress: 10.16.0.3, v4IpAddress: 10.16.0.3, macAddress: "00:00:00:aa:bb:01"}
---
apiVersion: kubeovn.io/v1
kind: IP
metadata: {name: vm2.tenant}
spec: {podName: vm2, namespace: tenant, subnet: ovn-default, podType: VirtualMachine, ipAddress: 10.16.0.4, v4IpAddress: 10.16.0.4, macAddress: "00:00:00:aa:bb:02"}
`

// The running VM vm1: the VM, its VMI (owned by the VM's UID) and its
// virt-launcher pod (owned by the VMI's UID), with the annotations kube-ovn
// wrote on it.
// uid is the object's own UID where no API server sets one (manifests),
// else "".
func kubeOVNVM(uid string) string {
	return `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm1, namespace: tenant` + uidField(uid) + `}
spec:
  runStrategy: Always
  template:
    spec:
      domain: {devices: {interfaces: [{name: default, bridge: {}}]}}
      networks: [{name: default, pod: {}}]
`
}

func kubeOVNVMI(vmUID, uid string) string {
	return `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: vm1
  namespace: tenant` + strings.ReplaceAll(uidField(uid), ", ", "\n  ") + `
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: vm1, uid: ` + vmUID + `, controller: true}]
spec:
  domain: {devices: {interfaces: [{name: default, bridge: {}}]}}
  networks: [{name: default, pod: {}}]
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
  labels: {kubevirt.io: virt-launcher, vm.kubevirt.io/name: vm1}
  annotations:
    kubevirt.io/domain: vm1
    ovn.kubernetes.io/allocated: "true"
    ovn.kubernetes.io/ip_address: 10.16.0.3
    ovn.kubernetes.io/mac_address: 00:00:00:aa:bb:01
    ovn.kubernetes.io/logical_switch: ovn-default
    ovn.kubernetes.io/routed: "true"
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachineInstance, name: vm1, uid: ` + vmiUID + `, controller: true}]
spec: {nodeName: node-1, containers: [{name: compute, image: virt-launcher}]}
`
}

// kubeOVNPort is one row as kube-ovn would have written it, and what
// ovn-sync must make of it.
type kubeOVNPort struct {
	name, sw, addresses, pod string
	owner                    string // after adoption
}

var kubeOVNPorts = []kubeOVNPort{
	{"web.default", "ovn-default", "00:00:00:53:6b:b6 10.16.0.15", "default/web", "Pod/default/web"},
	{"web.default.attachnet.default.ovn", "attachnet", "00:00:00:7d:2a:10 172.17.0.2", "default/web", "Pod/default/web"},
	{"dyn.default", "ovn-default", "00:00:00:11:22:33 10.16.0.2", "default/dyn", "Pod/default/dyn"},
	{"vm1.tenant", "ovn-default", "00:00:00:aa:bb:01 10.16.0.3", "tenant/vm1", "VirtualMachine/tenant/vm1"},
	{"vm2.tenant", "ovn-default", "00:00:00:aa:bb:02 10.16.0.4", "tenant/vm2", "VirtualMachine/tenant/vm2"},
}

// writeKubeOVNRows writes the NB as kube-ovn left it: its two switches
// (other_config and external_ids as kube-ovn sets them), a port per owner
// (addresses, no port_security, external_ids vendor, ls and pod), and one
// port an older ovn-sync stamped with an owner but no switch, beside a key
// of someone else's.
func writeKubeOVNRows(t *testing.T, s *nbtest.Server) {
	t.Helper()
	for _, sw := range [][2]string{{"ovn-default", "10.16.0.0/16"}, {"attachnet", "172.17.0.0/16"}} {
		gw := strings.TrimSuffix(sw[1], "0/16") + "1"
		s.NBCtl("ls-add", sw[0], "--", "set", "Logical_Switch", sw[0],
			"other_config:subnet="+sw[1], "other_config:gateway="+gw, "other_config:exclude_ips="+gw,
			"external_ids:vendor=kube-ovn", "external_ids:logical_router=ovn-cluster")
	}
	for _, p := range kubeOVNPorts {
		s.NBCtl("lsp-add", p.sw, p.name, "--", "lsp-set-addresses", p.name, p.addresses,
			"--", "set", "Logical_Switch_Port", p.name,
			"external_ids:vendor=kube-ovn", "external_ids:ls="+p.sw, `external_ids:pod="`+p.pod+`"`)
	}
	s.NBCtl("lsp-add", "ovn-default", "legacy.default", "--", "lsp-set-addresses", "legacy.default", "0a:58:0a:10:00:05 10.16.0.5",
		"--", "lsp-set-port-security", "legacy.default", "0a:58:0a:10:00:05 10.16.0.5",
		"--", "set", "Logical_Switch_Port", "legacy.default",
		"external_ids:ovn-sync/owner=Pod/default/legacy", "external_ids:ovn-sync/network=default", "external_ids:team=a")
}

// rowsOf returns the UUID and addresses of every port and the UUID and
// other_config of every switch: what adoption leaves as it is.
func rowsOf(t *testing.T, s *nbtest.Server) map[string]string {
	t.Helper()
	rows := map[string]string{}
	for table, columns := range map[string]string{"Logical_Switch_Port": "name,_uuid,addresses", "Logical_Switch": "name,_uuid,other_config"} {
		out := s.NBCtl("--bare", "--columns="+columns, "--format=csv", "--no-headings", "list", table)
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			name, rest, _ := strings.Cut(line, ",")
			rows[table+" "+name] = rest
		}
	}
	return rows
}

// checkAdopted checks that the rows are the ones kube-ovn wrote, with
// ovn-sync's keys added and nothing of kube-ovn's lost.
func checkAdopted(t *testing.T, s *nbtest.Server, before map[string]string) {
	t.Helper()
	if after := rowsOf(t, s); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("rows changed (UUID, addresses or switch other_config):\nbefore %v\nafter  %v", before, after)
	}
	for _, p := range kubeOVNPorts {
		for key, want := range map[string]string{
			"vendor": "kube-ovn", "ls": p.sw, "pod": p.pod,
			state.KeyOwner: p.owner, state.KeySwitch: p.sw,
		} {
			if got := get(t, s, "Logical_Switch_Port", p.name, "external_ids:"+key); got != want {
				t.Errorf("%s external_ids:%s = %q, want %q", p.name, key, got, want)
			}
		}
		if got := strings.Trim(get(t, s, "Logical_Switch_Port", p.name, "port_security"), `[]"`); got != p.addresses {
			t.Errorf("%s port_security = %q, want its addresses %q", p.name, got, p.addresses)
		}
	}
	if got := get(t, s, "Logical_Switch_Port", "legacy.default", "external_ids:team"); got != "a" {
		t.Errorf("legacy.default lost external_ids:team (%q)", got)
	}
	if got := get(t, s, "Logical_Switch_Port", "legacy.default", "external_ids:"+state.KeySwitch); got != "ovn-default" {
		t.Errorf("legacy.default external_ids:%s = %q, want ovn-default", state.KeySwitch, got)
	}
	for _, sw := range []string{"ovn-default", "attachnet"} {
		if got := get(t, s, "Logical_Switch", sw, "external_ids"); strings.Contains(got, "ovn-sync") {
			t.Errorf("switch %s taken over: external_ids %s", sw, got)
		}
	}
}

func TestAdoptKubeOVNAgainstRealNB(t *testing.T) {
	s := nbtest.Start(t)
	writeKubeOVNRows(t, s)
	before := rowsOf(t, s)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(kubeOVNConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := manifestDir(t, map[string]string{
		"cluster.yaml": kubeOVNObjects + "---\n" + kubeOVNVM("vm1-uid") + "---\n" + kubeOVNVMI("vm1-uid", "vmi1-uid") +
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
		!strings.Contains(out, "Plan: 0 to add, 6 to change, 0 to destroy.") {
		t.Errorf("plan --adopt kube-ovn:\n%s", out)
	}
	if s.Commits() != commits {
		t.Fatalf("plan committed")
	}
	runOneShot(t, s, cfg, "apply", dir, 0, "--adopt", "kube-ovn")
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
}

// TestRunAdoptKubeOVN is the same cluster in run mode, against a real
// kube-apiserver: the objects are created, then ovn-sync run --adopt
// kube-ovn starts.
func TestRunAdoptKubeOVN(t *testing.T) {
	nbtest.Require(t)
	k := kubetest.Start(t)
	nbs := nbtest.Start(t)
	writeKubeOVNRows(t, nbs)
	before := rowsOf(t, nbs)
	k.Namespace("kube-system")
	k.ApplyFile("../../deploy/rbac.yaml")
	k.Namespace("tenant")
	objects := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(objects, []byte(kubeOVNObjects), 0o644); err != nil {
		t.Fatal(err)
	}
	k.ApplyFile(objects)
	vm := k.Create(sources.GVRVirtualMachine, kubeOVNVM(""))
	vmi := k.Create(sources.GVRVirtualMachineInstance, kubeOVNVMI(string(vm.GetUID()), ""))
	patchStatus(t, k, "vmi", "vm1", `{"status":{"phase":"Running","nodeName":"node-1"}}`)
	k.Create(corev1.SchemeGroupVersion.WithResource("pods"), kubeOVNLauncher(string(vmi.GetUID())))

	run := startRun(t, k.ServiceAccountKubeconfig, nbs.Addr(), "--leader-elect=false", "--adopt", "kube-ovn",
		"--default-subnets", "10.16.0.0/16", "--default-gateway", "10.16.0.1")
	nb := nbWatch(t, nbs.Addr())
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
	waitFor(t, 30*time.Second, "ready", func() error { _, err := run.get("/readyz"); return err })
	checkAdopted(t, nbs, before)

	// A pass that a Kubernetes change starts finds nothing to do: a label
	// on a pod changes no port.
	txns := run.metric("ovn_sync_transactions_total")
	passes := run.metric("ovn_sync_passes_total", `result="success"`)
	if _, err := k.Kube.CoreV1().Pods("default").Patch(context.Background(), "dyn", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "a pass after the label", func() error {
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
	if got := get(t, s, "Logical_Switch_Port", "dyn.default", "external_ids:"+state.KeyOwner); got != "" {
		t.Errorf("mislabelled port adopted (owner %q); output:\n%s", got, out)
	}
}
