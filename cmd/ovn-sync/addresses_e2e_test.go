package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovn-sync/ovn-sync/internal/nbtest"
)

// The address-integrity cases, each against a real ovsdb-server through the
// ovn-sync binary: what used to lose, duplicate or silently change an
// address, and what must happen instead (docs/addresses.md).

const addrConfig = `defaultNetwork:
  logicalSwitch: ovn-default
  subnets: ["10.16.0.0/16"]
  excludeIPs: ["10.16.0.1"]
`

// manifestDir writes files (name → YAML) into a new directory.
func manifestDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func configFile(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(f, []byte(addrConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// runOneShot runs plan or apply against s and fails the test on an unexpected
// exit code.
func runOneShot(t *testing.T, s *nbtest.Server, cfg, cmd, dir string, wantCode int, extra ...string) string {
	t.Helper()
	args := append([]string{cmd, "-f", dir, "--nb", s.Addr(), "--config", cfg}, extra...)
	out, errOut, code := ovnSync(t, args...)
	if code != wantCode {
		t.Fatalf("ovn-sync %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, out, errOut)
	}
	return out + errOut
}

func addresses(t *testing.T, s *nbtest.Server, port string) string {
	t.Helper()
	return strings.Trim(s.Get("Logical_Switch_Port", port, "addresses"), `[]"`)
}

func pod(name, ns, created, annotations string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
  namespace: ` + ns + `
  creationTimestamp: "` + created + `"
  annotations: {` + annotations + `}
spec: {nodeName: node-1, containers: [{name: c, image: busybox}]}
status: {phase: Running}
`
}

const l2NAD = `apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: l2, namespace: tenant}
spec:
  config: '{"cniVersion":"0.4.0","name":"l2","type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.50.0/24","netAttachDefName":"tenant/l2"}'
`

func stoppedVMManifest(annotations string) string {
	return `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: db
  namespace: tenant
  creationTimestamp: "2026-03-01T00:00:00Z"
  annotations: {` + annotations + `}
spec:
  runStrategy: Halted
  template:
    spec:
      domain:
        devices:
          interfaces: [{name: default, masquerade: {}}, {name: l2, bridge: {}}]
      networks: [{name: default, pod: {}}, {name: l2, multus: {networkName: l2}}]
`
}

// TestNBWipeKeepsAddresses (case 1): the NB is wiped, and pods that sort
// before a stopped VM appear. Without a record the VM comes back on other
// addresses and a pod takes its old one — the failure; with the
// annotations run mode publishes on the VM, present in the manifests, it
// keeps both.
func TestNBWipeKeepsAddresses(t *testing.T) {
	s := nbtest.Start(t)
	cfg := configFile(t)
	base := map[string]string{"nad.yaml": l2NAD, "vm.yaml": stoppedVMManifest("")}
	runOneShot(t, s, cfg, "apply", manifestDir(t, base), 0)
	vm, vmL2 := addresses(t, s, "db.tenant"), addresses(t, s, "db.tenant.l2.tenant.ovn")

	newcomers := pod("aaa", "aaa", "2026-01-01T00:00:00Z", "k8s.v1.cni.cncf.io/networks: tenant/l2") +
		"---\n" + pod("aab", "aaa", "2026-01-01T00:00:01Z", "")

	// Without a record: reproduces the loss.
	s.Wipe()
	without := map[string]string{"nad.yaml": l2NAD, "vm.yaml": stoppedVMManifest(""), "pods.yaml": newcomers}
	runOneShot(t, s, cfg, "apply", manifestDir(t, without), 0)
	if got := addresses(t, s, "db.tenant"); got == vm {
		t.Fatalf("without a record the VM kept %q: this test no longer reproduces the loss", got)
	}

	// With the record run mode publishes on the VM.
	s.Wipe()
	vmIP, vmMAC := strings.Fields(vm)[1], strings.Fields(vm)[0]
	l2IP, l2MAC := strings.Fields(vmL2)[1], strings.Fields(vmL2)[0]
	record := "ovn.kubernetes.io/allocated: 'true', ovn.kubernetes.io/ip_address: " + vmIP + ", ovn.kubernetes.io/mac_address: '" + vmMAC +
		"', l2.tenant.ovn.kubernetes.io/allocated: 'true', l2.tenant.ovn.kubernetes.io/ip_address: " + l2IP +
		", l2.tenant.ovn.kubernetes.io/mac_address: '" + l2MAC + "'"
	with := map[string]string{"nad.yaml": l2NAD, "vm.yaml": stoppedVMManifest(record), "pods.yaml": newcomers}
	dir := manifestDir(t, with)
	runOneShot(t, s, cfg, "apply", dir, 0)
	if got := addresses(t, s, "db.tenant"); got != vm {
		t.Errorf("after the wipe db.tenant = %q, want %q", got, vm)
	}
	if got := addresses(t, s, "db.tenant.l2.tenant.ovn"); got != vmL2 {
		t.Errorf("after the wipe db.tenant.l2.tenant.ovn = %q, want %q", got, vmL2)
	}
	for _, p := range []string{"aaa.aaa", "aaa.aaa.l2.tenant.ovn", "aab.aaa"} {
		if a := addresses(t, s, p); strings.Contains(a+" ", " "+vmIP+" ") || strings.Contains(a+" ", " "+l2IP+" ") {
			t.Errorf("%s = %q: took the VM's address", p, a)
		}
	}
	if out := runOneShot(t, s, cfg, "plan", dir, 0, "--detailed-exitcode"); !strings.Contains(out, "No changes.") {
		t.Errorf("plan after the pass:\n%s", out)
	}
}

// TestOutsideEditNoDuplicate (case 2): ovn-nbctl gives web-2 web-1's
// address, and a port that is not ours takes the address of web-3, a pod
// not scheduled yet. One apply later no address is held twice, the ports
// whose address it was keep it, and the foreign port is byte-identical.
func TestOutsideEditNoDuplicate(t *testing.T) {
	s := nbtest.Start(t)
	cfg := configFile(t)
	pending := strings.Replace(pod("web-3", "default", "2026-01-01T00:00:03Z", ""), "nodeName: node-1, ", "", 1)
	dir := manifestDir(t, map[string]string{"pods.yaml": pod("web-1", "default", "2026-01-01T00:00:01Z", "") + "---\n" +
		pod("web-2", "default", "2026-01-01T00:00:02Z", "") + "---\n" + pending})
	runOneShot(t, s, cfg, "apply", dir, 0)
	web1, web3 := addresses(t, s, "web-1.default"), addresses(t, s, "web-3.default")

	s.NBCtl("set", "Logical_Switch_Port", "web-2.default", `addresses="`+web1+`"`)
	// lsp-set-addresses refuses a duplicate; a generic set does not.
	s.NBCtl("lsp-add", "ovn-default", "intruder", "--", "set", "Logical_Switch_Port", "intruder", `addresses="`+web3+`"`)
	intruder := s.NBCtl("list", "Logical_Switch_Port", "intruder")

	// Before the fix the pass completed the edit: both ports held web-1's
	// address and the next plan said "No changes.".
	out := runOneShot(t, s, cfg, "apply", dir, 0)
	for _, want := range []string{`Pod default/web-2: port "web-2.default" held IPv4 address`, `Pod default/web-3: port "web-3.default" held IPv4 address`} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}
	if got := addresses(t, s, "web-1.default"); got != web1 {
		t.Errorf("web-1 = %q, want %q", got, web1)
	}
	seen := map[string]string{}
	for _, p := range []string{"web-1.default", "web-2.default", "web-3.default", "intruder"} {
		for _, w := range strings.Fields(addresses(t, s, p)) {
			if other, ok := seen[w]; ok {
				t.Errorf("%s held by %s and %s", w, other, p)
			}
			seen[w] = p
		}
	}
	if got := s.NBCtl("list", "Logical_Switch_Port", "intruder"); got != intruder {
		t.Errorf("the foreign port changed:\nbefore\n%s\nafter\n%s", intruder, got)
	}
	if ps := strings.Trim(s.Get("Logical_Switch_Port", "web-2.default", "port_security"), `[]"`); ps != addresses(t, s, "web-2.default") {
		t.Errorf("web-2 port_security %q differs from its addresses", ps)
	}
	runOneShot(t, s, cfg, "plan", dir, 0, "--detailed-exitcode")
}

// testVM is a running VM (its VMI on node-a, its launcher pod there),
// whose template and VMI ask for ip when it is not "".
func testVM(ip string) string {
	ann := "{}"
	if ip != "" {
		ann = "{ovn.kubernetes.io/ip_address: " + ip + "}"
	}
	return `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: testvm, namespace: default, uid: vm-testvm, creationTimestamp: "2026-02-01T00:00:00Z"}
spec:
  runStrategy: Always
  template:
    metadata: {annotations: ` + ann + `}
    spec:
      domain: {devices: {interfaces: [{name: default, bridge: {}}]}}
      networks: [{name: default, pod: {}}]
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: testvm
  namespace: default
  uid: vmi-testvm
  annotations: ` + ann + `
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: testvm, uid: vm-testvm, controller: true}]
spec:
  domain: {devices: {interfaces: [{name: default, bridge: {}}]}}
  networks: [{name: default, pod: {}}]
status: {phase: Running, nodeName: node-a}
---
apiVersion: v1
kind: Pod
metadata:
  name: virt-launcher-testvm-x7k2p
  namespace: default
  labels: {kubevirt.io: virt-launcher, vm.kubevirt.io/name: testvm}
  annotations: {kubevirt.io/domain: testvm}
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachineInstance, name: testvm, uid: vmi-testvm, controller: true}]
spec: {nodeName: node-a, containers: [{name: compute, image: virt-launcher}]}
status: {phase: Running}
`
}

// TestForeignPortTakesRunningVMAddress: a port that is not ours is given
// a running VM's address (a stray ovn-nbctl, or kube-ovn's controller
// scaled back up). The VM's port keeps its address and stays, whether the
// address is only sticky or the template requests it; the conflict is a
// Problem naming the VM, the address and the foreign port with its UUID;
// the foreign row is never written. (It used to renumber the VM under its
// running guest, or, with a request, delete its port.)
func TestForeignPortTakesRunningVMAddress(t *testing.T) {
	for _, tc := range []struct{ name, ip string }{{"sticky", ""}, {"requested", "10.16.0.15"}} {
		t.Run(tc.name, func(t *testing.T) {
			s := nbtest.Start(t)
			cfg := configFile(t)
			dir := manifestDir(t, map[string]string{"vm.yaml": testVM(tc.ip)})
			runOneShot(t, s, cfg, "apply", dir, 0)
			vm := addresses(t, s, "testvm.default")
			uuid := s.Get("Logical_Switch_Port", "testvm.default", "_uuid")
			ip := strings.Fields(vm)[1]
			if tc.ip != "" && ip != tc.ip {
				t.Fatalf("testvm.default = %q, want %s", vm, tc.ip)
			}
			s.NBCtl("lsp-add", "ovn-default", "foreign")
			s.NBCtl("set", "Logical_Switch_Port", "foreign", `addresses="00:00:00:00:99:99 `+ip+`"`)
			foreign := s.NBCtl("list", "Logical_Switch_Port", "foreign")
			foreignUUID := s.Get("Logical_Switch_Port", "foreign", "_uuid")

			out := runOneShot(t, s, cfg, "apply", dir, 0)
			want := `VirtualMachine default/testvm: port "testvm.default" holds IPv4 address ` + ip + `, also held by port "foreign" (UUID ` + foreignUUID + `)`
			if !strings.Contains(out, want) {
				t.Errorf("apply output lacks %q:\n%s", want, out)
			}
			if got := addresses(t, s, "testvm.default"); got != vm {
				t.Errorf("testvm.default = %q after the foreign edit, want %q: the running guest was renumbered", got, vm)
			}
			if got := s.Get("Logical_Switch_Port", "testvm.default", "_uuid"); got != uuid {
				t.Errorf("testvm.default was replaced (%s, was %s)", got, uuid)
			}
			if got := s.NBCtl("list", "Logical_Switch_Port", "foreign"); got != foreign {
				t.Errorf("the foreign port changed:\nbefore\n%s\nafter\n%s", foreign, got)
			}
			// plan says the same, in JSON too, and changes nothing.
			out, _, code := ovnSync(t, "plan", "-f", dir, "--nb", s.Addr(), "--config", cfg, "-o", "json", "--detailed-exitcode")
			if code != 0 || !jsonProblem(t, out, "VirtualMachine/default/testvm", `"testvm.default"`, foreignUUID) {
				t.Errorf("plan -o json (exit %d) lacks the AddressConflict naming the foreign port:\n%s", code, out)
			}
		})
	}
}

// TestConflictRepairedFromRecordsReported: with the annotations run mode
// publishes (records) in the manifests, an outside edit gives web-2
// web-1's addresses. The plan puts web-2 back on its record, and says why:
// an AddressConflict Problem naming both ports, in text and in JSON. (The
// plan used to show it only as "differs from desired".)
func TestConflictRepairedFromRecordsReported(t *testing.T) {
	s := nbtest.Start(t)
	cfg := configFile(t)
	rec := func(ip, mac string) string {
		return "ovn.kubernetes.io/allocated: 'true', ovn.kubernetes.io/ip_address: " + ip + ", ovn.kubernetes.io/mac_address: '" + mac + "'"
	}
	dir := manifestDir(t, map[string]string{"pods.yaml": pod("web-1", "default", "2026-01-01T00:00:01Z", rec("10.16.0.2", "0a:58:0a:10:00:02")) + "---\n" +
		pod("web-2", "default", "2026-01-01T00:00:02Z", rec("10.16.0.3", "0a:58:0a:10:00:03"))})
	runOneShot(t, s, cfg, "apply", dir, 0)
	s.NBCtl("set", "Logical_Switch_Port", "web-2.default", `addresses="0a:58:0a:10:00:02 10.16.0.2"`)

	out := runOneShot(t, s, cfg, "plan", dir, 2, "--detailed-exitcode")
	want := `Pod default/web-2: port "web-2.default" held IPv4 address 10.16.0.2, also held by port "web-1.default" (Pod/default/web-1): back on its request 10.16.0.3`
	if !strings.Contains(out, want) {
		t.Errorf("plan lacks %q:\n%s", want, out)
	}
	js, _, _ := ovnSync(t, "plan", "-f", dir, "--nb", s.Addr(), "--config", cfg, "-o", "json")
	if !jsonProblem(t, js, "Pod/default/web-2", `"web-2.default"`, `"web-1.default"`) {
		t.Errorf("plan -o json lacks the AddressConflict naming both ports:\n%s", js)
	}
	runOneShot(t, s, cfg, "apply", dir, 0)
	if got := addresses(t, s, "web-2.default"); got != "0a:58:0a:10:00:03 10.16.0.3" {
		t.Errorf("web-2.default = %q, want its record 10.16.0.3", got)
	}
	runOneShot(t, s, cfg, "plan", dir, 0, "--detailed-exitcode")
}

func runningVM(ip, mac, vmiIP, vmiMAC, vmiUID string) string {
	return `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: web, namespace: default, uid: vm-web, creationTimestamp: "2026-02-01T00:00:00Z"}
spec:
  runStrategy: Always
  template:
    metadata:
      annotations: {ovn.kubernetes.io/ip_address: ` + ip + `}
    spec:
      domain: {devices: {interfaces: [{name: default, bridge: {}, macAddress: "` + mac + `"}]}}
      networks: [{name: default, pod: {}}]
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: web
  namespace: default
  uid: ` + vmiUID + `
  annotations: {ovn.kubernetes.io/ip_address: ` + vmiIP + `}
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: web, uid: vm-web, controller: true}]
spec:
  domain: {devices: {interfaces: [{name: default, bridge: {}, macAddress: "` + vmiMAC + `"}]}}
  networks: [{name: default, pod: {}}]
status: {phase: Running, nodeName: node-1}
`
}

// TestRunningVMTemplateEdit (case 3): a running VM's template asks for a
// new IP and MAC. The port keeps the running addresses and plan shows a
// RestartRequired notice, not an update; once the VM restarts (a new VMI)
// the new addresses take effect.
func TestRunningVMTemplateEdit(t *testing.T) {
	s := nbtest.Start(t)
	cfg := configFile(t)
	runOneShot(t, s, cfg, "apply", manifestDir(t, map[string]string{"vm.yaml": runningVM("10.16.0.50", "02:00:00:00:00:50", "10.16.0.50", "02:00:00:00:00:50", "vmi-1")}), 0)
	if got := addresses(t, s, "web.default"); got != "02:00:00:00:00:50 10.16.0.50" {
		t.Fatalf("web.default = %q", got)
	}
	edited := manifestDir(t, map[string]string{"vm.yaml": runningVM("10.16.0.60", "02:00:00:00:00:60", "10.16.0.50", "02:00:00:00:00:50", "vmi-1")})
	out := runOneShot(t, s, cfg, "plan", edited, 0, "--detailed-exitcode")
	if !strings.Contains(out, "notice: VirtualMachine default/web: RestartRequired") || !strings.Contains(out, "No changes.") {
		t.Errorf("plan after a template edit:\n%s", out)
	}
	runOneShot(t, s, cfg, "apply", edited, 0)
	if got := addresses(t, s, "web.default"); got != "02:00:00:00:00:50 10.16.0.50" {
		t.Errorf("web.default after a template edit = %q, want the running addresses", got)
	}
	restarted := manifestDir(t, map[string]string{"vm.yaml": runningVM("10.16.0.60", "02:00:00:00:00:60", "10.16.0.60", "02:00:00:00:00:60", "vmi-2")})
	runOneShot(t, s, cfg, "apply", restarted, 0)
	if got := addresses(t, s, "web.default"); got != "02:00:00:00:00:60 10.16.0.60" {
		t.Errorf("web.default after the restart = %q, want the new addresses", got)
	}
}

// TestReservedAddresses (case 4): a request for the excluded 10.16.0.1 is
// refused, and a kube-ovn NAD's gateway (its first address) is not given to
// its first pod.
func TestReservedAddresses(t *testing.T) {
	s := nbtest.Start(t)
	cfg := configFile(t)
	nad := `apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: attachnet, namespace: default}
spec:
  config: '{"cniVersion":"0.3.0","type":"kube-ovn","server_socket":"/run/openvswitch/kube-ovn-daemon.sock","provider":"attachnet.default.ovn","subnets":"172.17.0.0/16","gateway":"172.17.0.1"}'
`
	dir := manifestDir(t, map[string]string{"nad.yaml": nad, "pods.yaml": pod("first", "default", "2026-01-01T00:00:01Z", "k8s.v1.cni.cncf.io/networks: attachnet") +
		"---\n" + pod("gw", "default", "2026-01-01T00:00:02Z", "ovn.kubernetes.io/ip_address: 10.16.0.1")})
	out := runOneShot(t, s, cfg, "apply", dir, 0)
	if !strings.Contains(out, `Pod default/gw: ovn.kubernetes.io/ip_address "10.16.0.1": is excluded`) {
		t.Errorf("apply output lacks the refusal:\n%s", out)
	}
	if got, _ := s.TryNBCtl("--if-exists", "get", "Logical_Switch_Port", "gw.default", "addresses"); got != "" {
		t.Errorf("gw.default exists: %s", got)
	}
	if got := addresses(t, s, "first.default.attachnet.default.ovn"); got != "0a:58:ac:11:00:02 172.17.0.2" {
		t.Errorf("first pod on attachnet = %q, want 172.17.0.2 (172.17.0.1 is the gateway)", got)
	}
}

// TestNADTypoKeepsNetwork (case 5): a typo in a managed NAD's type used to
// delete every port on it and its switch. Now they stay, with a Problem on
// the NAD, and the addresses are unchanged.
func TestNADTypoKeepsNetwork(t *testing.T) {
	s := nbtest.Start(t)
	cfg := configFile(t)
	pods := ""
	for i, n := range []string{"a", "b", "c"} {
		if i > 0 {
			pods += "---\n"
		}
		pods += pod(n, "tenant", "2026-01-01T00:00:0"+string(rune('1'+i))+"Z", "k8s.v1.cni.cncf.io/networks: l2")
	}
	runOneShot(t, s, cfg, "apply", manifestDir(t, map[string]string{"nad.yaml": l2NAD, "pods.yaml": pods}), 0)
	before := addresses(t, s, "b.tenant.l2.tenant.ovn")
	uuid := s.Get("Logical_Switch", "l2.tenant", "_uuid")
	typo := manifestDir(t, map[string]string{"nad.yaml": strings.Replace(l2NAD, "ovn-k8s-cni-overlay", "ovn-k8s-cni-overlayy", 1), "pods.yaml": pods})
	out := runOneShot(t, s, cfg, "apply", typo, 0)
	if !strings.Contains(out, `NetworkAttachmentDefinition tenant/l2: spec.config: "type" "ovn-k8s-cni-overlayy"`) {
		t.Errorf("apply output lacks the Problem on the NAD:\n%s", out)
	}
	if got := addresses(t, s, "b.tenant.l2.tenant.ovn"); got != before {
		t.Errorf("b's port on l2 = %q, want %q", got, before)
	}
	if got := s.Get("Logical_Switch", "l2.tenant", "_uuid"); got != uuid {
		t.Errorf("switch l2.tenant = %q, want %q", got, uuid)
	}
}

// TestEmptyInputRefused (case 6): -f naming nothing Kubernetes is an
// error naming the paths, and the NB is untouched; --allow-empty goes on.
func TestEmptyInputRefused(t *testing.T) {
	s := nbtest.Start(t)
	cfg := configFile(t)
	runOneShot(t, s, cfg, "apply", manifestDir(t, map[string]string{"pods.yaml": pod("a", "default", "2026-01-01T00:00:01Z", "")}), 0)
	empty := manifestDir(t, map[string]string{"README.txt": "not yaml at all\n", "empty.yaml": ""})
	commits := s.Commits()
	out := runOneShot(t, s, cfg, "apply", empty, 1)
	if !strings.Contains(out, "no Kubernetes objects read from "+empty) {
		t.Errorf("apply of an empty directory:\n%s", out)
	}
	if s.Commits() != commits {
		t.Errorf("apply of an empty directory committed")
	}
	runOneShot(t, s, cfg, "apply", empty, 0, "--allow-empty")
	if got, _ := s.TryNBCtl("--if-exists", "get", "Logical_Switch_Port", "a.default", "addresses"); got != "" {
		t.Errorf("a.default still exists after --allow-empty: %s", got)
	}
}

// TestMultusDefaultNetwork (case 7): a pod whose primary interface Multus
// puts on a NAD gets no port on the default switch.
func TestMultusDefaultNetwork(t *testing.T) {
	s := nbtest.Start(t)
	cfg := configFile(t)
	dir := manifestDir(t, map[string]string{"nad.yaml": l2NAD, "pods.yaml": pod("p", "tenant", "2026-01-01T00:00:01Z", "v1.multus-cni.io/default-network: tenant/l2")})
	runOneShot(t, s, cfg, "apply", dir, 0)
	if got, _ := s.TryNBCtl("--if-exists", "get", "Logical_Switch_Port", "p.tenant", "addresses"); got != "" {
		t.Errorf("p.tenant exists on the default switch: %s", got)
	}
	if got := s.Get("Logical_Switch_Port", "p.tenant.l2.tenant.ovn", "external_ids:ovn-sync/switch"); got != "l2.tenant" {
		t.Errorf("p's primary port is on %q, want l2.tenant", got)
	}
}

// TestKubeOVNLauncherRecords (case 8): a running VM moved from kube-ovn
// keeps the addresses kube-ovn wrote on its virt-launcher pod.
func TestKubeOVNLauncherRecords(t *testing.T) {
	s := nbtest.Start(t)
	cfg := configFile(t)
	vm := `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: legacy, namespace: default, uid: vm-legacy, creationTimestamp: "2026-02-01T00:00:00Z"}
spec:
  runStrategy: Always
  template:
    spec:
      domain: {devices: {interfaces: [{name: default, bridge: {}}]}}
      networks: [{name: default, pod: {}}]
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: legacy
  namespace: default
  uid: vmi-legacy
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: legacy, uid: vm-legacy, controller: true}]
spec:
  domain: {devices: {interfaces: [{name: default, bridge: {}}]}}
  networks: [{name: default, pod: {}}]
status: {phase: Running, nodeName: node-1}
---
apiVersion: v1
kind: Pod
metadata:
  name: virt-launcher-legacy-7xk2p
  namespace: default
  labels: {kubevirt.io: virt-launcher, vm.kubevirt.io/name: legacy}
  annotations:
    kubevirt.io/domain: legacy
    ovn.kubernetes.io/allocated: "true"
    ovn.kubernetes.io/ip_address: 10.16.0.77
    ovn.kubernetes.io/mac_address: 00:00:00:4b:1c:22
    ovn.kubernetes.io/logical_switch: ovn-default
    ovn.kubernetes.io/routed: "true"
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachineInstance, name: legacy, uid: vmi-legacy, controller: true}]
spec: {nodeName: node-1, containers: [{name: compute, image: virt-launcher}]}
status: {phase: Running}
`
	runOneShot(t, s, cfg, "apply", manifestDir(t, map[string]string{"vm.yaml": vm, "pods.yaml": pod("older", "default", "2025-01-01T00:00:00Z", "")}), 0)
	if got := addresses(t, s, "legacy.default"); got != "00:00:00:4b:1c:22 10.16.0.77" {
		t.Errorf("legacy.default = %q, want kube-ovn's 00:00:00:4b:1c:22 10.16.0.77", got)
	}
}

// jsonProblem reports whether the plan -o json report out holds an
// AddressConflict Problem of owner whose message names every one of names.
func jsonProblem(t *testing.T, out, owner string, names ...string) bool {
	t.Helper()
	var report struct {
		Problems []struct{ Owner, Reason, Message string }
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("plan -o json: %v\n%s", err, out)
	}
	for _, p := range report.Problems {
		if p.Owner != owner || p.Reason != "AddressConflict" {
			continue
		}
		all := true
		for _, n := range names {
			all = all && strings.Contains(p.Message, n)
		}
		if all {
			return true
		}
	}
	return false
}
