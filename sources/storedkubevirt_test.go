package sources

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/desired"
)

// kubevirtAsWritten are VMs and VMIs as KubeVirt's controllers and
// ovn-sync's publishing leave them: labels and annotations virt-controller
// sets, a stopped VM whose addresses are recorded in its annotations (the
// only place they are kept while it is stopped), a VMI started with a
// fixed IP from its template's kube-ovn annotation, one migrated (its
// source virt-launcher pod still winding down) and one whose migration
// failed (its target pod still there).
var kubevirtAsWritten = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: db
  namespace: vms
  uid: 0a000000-0000-0000-0000-000000000001
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels: {app: db, kubevirt.io/vm: db}
  annotations:
    kubevirt.io/latest-observed-api-version: v1
    kubevirt.io/storage-observed-api-version: v1
    ovn.kubernetes.io/allocated: "true"
    ovn.kubernetes.io/ip_address: 10.16.5.40
    ovn.kubernetes.io/mac_address: 0a:58:0a:10:05:28
    ovn.kubernetes.io/logical_switch: ovn-default
    ovn.kubernetes.io/cidr: 10.16.0.0/16
    ovn.kubernetes.io/gateway: 10.16.0.1
spec:
  runStrategy: Halted
  template:
    metadata:
      labels: {kubevirt.io/domain: db, kubevirt.io/size: small}
      annotations: {kubevirt.io/allow-pod-bridge-network-live-migration: "true"}
    spec:
      domain:
        devices:
          interfaces:
          - {name: default, bridge: {}}
      networks:
      - {name: default, pod: {}}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: web
  namespace: vms
  uid: 0a000000-0000-0000-0000-000000000002
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels: {app: web}
  annotations: {kubevirt.io/latest-observed-api-version: v1, kubevirt.io/storage-observed-api-version: v1}
spec:
  runStrategy: Always
  template:
    metadata:
      labels: {kubevirt.io/domain: web}
      annotations:
        ovn.kubernetes.io/ip_address: 10.16.7.7
        kubevirt.io/allow-pod-bridge-network-live-migration: "true"
    spec:
      domain:
        devices:
          interfaces:
          - {name: default, masquerade: {}, ports: [{name: http, port: 80}]}
      networks:
      - {name: default, pod: {}}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: web
  namespace: vms
  uid: 0b000000-0000-0000-0000-000000000002
  creationTimestamp: "2026-01-02T00:00:00Z"
  labels: {kubevirt.io/domain: web, kubevirt.io/nodeName: node-2, kubevirt.io/migrationTargetNodeName: node-2}
  annotations:
    kubevirt.io/latest-observed-api-version: v1
    kubevirt.io/storage-observed-api-version: v1
    kubevirt.io/vm-generation: "1"
    ovn.kubernetes.io/ip_address: 10.16.7.7
    kubevirt.io/allow-pod-bridge-network-live-migration: "true"
  ownerReferences:
  - {apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: web, uid: 0a000000-0000-0000-0000-000000000002, controller: true, blockOwnerDeletion: true}
spec:
  domain:
    devices:
      interfaces:
      - {name: default, masquerade: {}, ports: [{name: http, port: 80}]}
  networks:
  - {name: default, pod: {}}
status:
  phase: Running
  nodeName: node-2
  migrationState:
    sourceNode: node-1
    targetNode: node-2
    sourcePod: virt-launcher-web-aaaaa
    targetPod: virt-launcher-web-bbbbb
    migrationUid: 0c000000-0000-0000-0000-000000000002
    completed: true
    mode: PreCopy
    startTimestamp: "2026-01-03T00:00:00Z"
    endTimestamp: "2026-01-03T00:00:09Z"
` +
	launcherDoc("web", "virt-launcher-web-aaaaa", "0b000000-0000-0000-0000-000000000002", "node-1", "2026-01-02T00:00:01Z") +
	launcherDoc("web", "virt-launcher-web-bbbbb", "0b000000-0000-0000-0000-000000000002", "node-2", "2026-01-03T00:00:00Z") + `---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: api, namespace: vms, uid: 0a000000-0000-0000-0000-000000000003, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        devices:
          interfaces:
          - {name: default, bridge: {}, macAddress: "02:00:00:00:00:03"}
      networks:
      - {name: default, pod: {}}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: api
  namespace: vms
  uid: 0b000000-0000-0000-0000-000000000003
  creationTimestamp: "2026-01-02T00:00:00Z"
  labels: {kubevirt.io/nodeName: node-4}
  ownerReferences:
  - {apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: api, uid: 0a000000-0000-0000-0000-000000000003, controller: true, blockOwnerDeletion: true}
spec:
  domain:
    devices:
      interfaces:
      - {name: default, bridge: {}, macAddress: "02:00:00:00:00:03"}
  networks:
  - {name: default, pod: {}}
status:
  phase: Running
  nodeName: node-4
  migrationState:
    sourceNode: node-4
    targetNode: node-5
    sourcePod: virt-launcher-api-aaaaa
    targetPod: virt-launcher-api-ccccc
    migrationUid: 0c000000-0000-0000-0000-000000000003
    failed: true
` +
	launcherDoc("api", "virt-launcher-api-aaaaa", "0b000000-0000-0000-0000-000000000003", "node-4", "2026-01-02T00:00:01Z") +
	launcherDoc("api", "virt-launcher-api-ccccc", "0b000000-0000-0000-0000-000000000003", "node-5", "2026-01-03T00:00:00Z")

// launcherDoc is a Running virt-launcher pod of VMI vmi (UID uid) on node,
// as KubeVirt writes it.
func launcherDoc(vmi, name, uid, node, created string) string {
	return fmt.Sprintf(`---
apiVersion: v1
kind: Pod
metadata:
  name: %[2]s
  namespace: vms
  creationTimestamp: %[5]q
  labels: {kubevirt.io: virt-launcher, vm.kubevirt.io/name: %[1]s, kubevirt.io/created-by: %[3]s}
  annotations: {kubevirt.io/domain: %[1]s}
  ownerReferences:
  - {apiVersion: kubevirt.io/v1, kind: VirtualMachineInstance, name: %[1]s, uid: %[3]s, controller: true, blockOwnerDeletion: true}
spec: {nodeName: %[4]s}
status: {phase: Running}
`, vmi, name, uid, node, created)
}

// A VM or VMI keeps in its stored form every field Build reads, and none
// of the labels and annotations it does not: the objects above, as the
// informers store them, build what they build as served — the stopped
// VM's recorded addresses, the fixed IP, each VMI's chassis after its
// migration ended — on an empty NB and on the NB they made.
func TestStoredKubeVirtBuildsAlike(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kubevirt.yaml")
	if err := os.WriteFile(file, []byte(kubevirtAsWritten), 0o600); err != nil {
		t.Fatal(err)
	}
	served, _, err := ReadManifests([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := desired.NewConfig("ovn-default", []string{"10.16.0.0/16"}, []string{"10.16.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	read := throughStores(t, served)
	buildsAlike(t, served, read, cfg, func(round int, want desired.Result) {
		if len(want.Problems) > 0 {
			t.Fatalf("round %d: the served objects have problems: %v", round, want.Problems)
		}
		// What the objects ask for, so that the comparison is of
		// something.
		for name, w := range map[string]string{
			"db.vms":  "0a:58:0a:10:05:28 10.16.5.40 chassis=",
			"web.vms": "10.16.7.7 chassis=node-2",
			"api.vms": "02:00:00:00:00:03 10.16.0.2 chassis=node-4",
		} {
			p := want.Want.Ports.Get(name)
			if p == nil {
				t.Fatalf("round %d: no port %s", round, name)
			}
			addrs, chassis, _ := strings.Cut(w, " chassis=")
			if !strings.Contains(p.Addresses[0], addrs) || p.RequestedChassis != chassis {
				t.Errorf("round %d: port %s: %q on %q, want %q on %q", round, name, p.Addresses[0], p.RequestedChassis, addrs, chassis)
			}
		}
	})
	for _, vm := range read.VirtualMachines {
		checkKept(t, "VirtualMachine "+vm.Name, vm.Labels, vm.Annotations)
		if tm := vm.Spec.Template; tm != nil {
			checkKept(t, "VirtualMachine "+vm.Name+" template", tm.ObjectMeta.Labels, tm.ObjectMeta.Annotations)
		}
	}
	for _, vmi := range read.VirtualMachineInstances {
		checkKept(t, "VirtualMachineInstance "+vmi.Name, vmi.Labels, vmi.Annotations)
		for _, ifc := range vmi.Spec.Domain.Devices.Interfaces {
			if ifc.InterfaceBindingMethod != (kubevirtv1.InterfaceBindingMethod{}) || ifc.Ports != nil {
				t.Errorf("VirtualMachineInstance %s interface %s keeps its binding or ports: %+v", vmi.Name, ifc.Name, ifc)
			}
		}
	}
}

// checkKept fails when a stored object kept labels, or an annotation
// Build does not read.
func checkKept(t *testing.T, what string, labels, ann map[string]string) {
	t.Helper()
	if len(labels) > 0 {
		t.Errorf("%s keeps its labels %v", what, labels)
	}
	for k := range ann {
		if !desired.PodAnnotationRead(k) {
			t.Errorf("%s keeps annotation %s, which Build does not read", what, k)
		}
	}
}

// multusVM is a VM and its VMI on a Multus network and the pod network,
// with a MAC on each interface, as kubectl would apply them.
const multusVM = `---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: two, namespace: vms, uid: 0a000000-0000-0000-0000-000000000009}
spec:
  runStrategy: Always
  template:
    metadata:
      annotations: {ovn.kubernetes.io/ip_address: 10.16.9.9}
    spec:
      domain:
        devices:
          interfaces:
          - {name: default, masquerade: {}, macAddress: "02:00:00:00:00:09"}
          - {name: blue, bridge: {}, macAddress: "02:00:00:00:01:09"}
      networks:
      - {name: blue, multus: {networkName: tenant/blue}}
      - {name: default, pod: {}}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: two, namespace: vms, uid: 0b000000-0000-0000-0000-000000000009}
spec:
  domain:
    devices:
      interfaces:
      - {name: default, masquerade: {}, macAddress: "02:00:00:00:00:09"}
      - {name: blue, bridge: {}, macAddress: "02:00:00:00:01:09"}
  networks:
  - {name: blue, multus: {networkName: tenant/blue}}
  - {name: default, pod: {}}
status: {nodeName: node-1, phase: Running}
`

// A stored VM or VMI that a Reader makes in the memory of the one before
// it is what At makes of it anew: nothing of the one before stays (a
// migration, annotations, a template, a Multus network), in either order.
func TestStoredReaderMakesWhatAtMakes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kubevirt.yaml")
	if err := os.WriteFile(file, []byte(kubevirtAsWritten+multusVM), 0o600); err != nil {
		t.Fatal(err)
	}
	served, _, err := ReadManifests([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	vms := transformed(served.VirtualMachines, compacting(typedTransform(KindVirtualMachine)),
		func(vm *kubevirtv1.VirtualMachine) any { return vm.DeepCopy() })
	vmis := transformed(served.VirtualMachineInstances, compacting(typedTransform(KindVirtualMachineInstance)),
		func(vmi *kubevirtv1.VirtualMachineInstance) any { return vmi.DeepCopy() })
	for _, reversed := range []bool{false, true} {
		if reversed {
			slices.Reverse(vms)
			slices.Reverse(vmis)
		}
		var bad []Unreadable
		var vmList []*kubevirtv1.VirtualMachine
		var vmiList []*kubevirtv1.VirtualMachineInstance
		readAlike(t, "VirtualMachine", listStored[*storedVM, vmMemory](KindVirtualMachine, vms, &bad, &vmList))
		readAlike(t, "VirtualMachineInstance", listStored[*storedVMI, vmiMemory](KindVirtualMachineInstance, vmis, &bad, &vmiList))
		if len(bad)+len(vmList)+len(vmiList) > 0 {
			t.Fatalf("not every object is in its stored form: %v, %d VMs, %d VMIs", bad, len(vmList), len(vmiList))
		}
	}
}

// readAlike fails when s's Reader makes an object other than At's, or
// makes each anew.
func readAlike[T interface {
	comparable
	GetName() string
}](t *testing.T, kind string, s desired.Stored[T]) {
	t.Helper()
	if s.Len() < 3 {
		t.Fatalf("%d %ss", s.Len(), kind)
	}
	at := s.Reader()
	first := at(0)
	for i := range s.Len() {
		got := at(i)
		if got != first {
			t.Errorf("%s %d is made anew, not in the memory of the one before", kind, i)
		}
		if want := s.At(i); !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s: the Reader made\n%+v\nAt made\n%+v", kind, want.GetName(), got, want)
		}
	}
}
