package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ovn-sync/ovn-sync/internal/nbtest"
)

// binary is ovn-sync built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ovn-sync-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "ovn-sync")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// ovnSync runs the binary and returns its stdout, stderr and exit code.
func ovnSync(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// stage builds a manifest directory from examples/cluster, with files
// replaced or added from testdata: replace maps an examples file name to a
// testdata path ("" removes it).
func stage(t *testing.T, replace map[string]string, add ...string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir("../../examples/cluster")
	if err != nil {
		t.Fatal(err)
	}
	cp := func(src, dst string) {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range entries {
		src := filepath.Join("../../examples/cluster", e.Name())
		if r, ok := replace[e.Name()]; ok {
			if r == "" {
				continue
			}
			src = r
		}
		cp(src, e.Name())
	}
	for _, a := range add {
		cp(a, "zz-"+filepath.Base(a))
	}
	return dir
}

func applyOK(t *testing.T, s *nbtest.Server, dir string) string {
	t.Helper()
	out, errOut, code := ovnSync(t, "apply", "-f", dir, "--nb", s.Addr(), "--config", "../../examples/ovn-sync.yaml")
	if code != 0 {
		t.Fatalf("ovn-sync apply -f %s: exit %d\nstdout:\n%s\nstderr:\n%s", dir, code, out, errOut)
	}
	return out
}

// TestApplyTwiceAgainstRealNB is the acceptance scenario: against a real
// ovsdb-server the example cluster gets exactly the ports the design
// describes, a second apply prints "No changes." and commits nothing, and plan
// never writes.
func TestApplyTwiceAgainstRealNB(t *testing.T) {
	s := nbtest.Start(t)
	dir := stage(t, nil)

	// plan writes nothing, and says changes are pending.
	before := s.Commits()
	out, _, code := ovnSync(t, "plan", "-f", dir, "--nb", s.Addr(), "--config", "../../examples/ovn-sync.yaml", "--detailed-exitcode")
	if code != 2 || !strings.Contains(out, "to add") {
		t.Fatalf("plan --detailed-exitcode on an empty NB: exit %d, output:\n%s", code, out)
	}
	if got := s.Commits(); got != before {
		t.Fatalf("plan committed %d transactions", got-before)
	}

	out = applyOK(t, s, dir)
	if !strings.Contains(out, "Plan: 10 to add, 0 to change, 0 to destroy.") {
		t.Errorf("first apply output lacks the summary for 8 ports and 2 switches:\n%s", out)
	}
	checkSeedPorts(t, s)

	before = s.Commits()
	out = applyOK(t, s, dir)
	if strings.TrimSpace(out) != "No changes." {
		t.Errorf("second apply printed:\n%s\nwant exactly: No changes.", out)
	}
	if got := s.Commits(); got != before {
		t.Errorf("second apply committed %d transactions, want 0", got-before)
	}
	out, _, code = ovnSync(t, "plan", "-f", dir, "--nb", s.Addr(), "--config", "../../examples/ovn-sync.yaml", "--detailed-exitcode")
	if code != 0 || strings.TrimSpace(out) != "No changes." {
		t.Errorf("plan after apply: exit %d, output %q; want 0 and No changes.", code, out)
	}
}

// checkSeedPorts checks the ports of examples/cluster as the design says.
func checkSeedPorts(t *testing.T, s *nbtest.Server) {
	t.Helper()
	ports := strings.Fields(s.NBCtl("--bare", "--columns=name", "list", "Logical_Switch_Port"))
	want := []string{
		"dns-0.default", "fedora-web.default", "rhel-app.default", "router-0.tenant",
		"router-0.tenant.blue.tenant.ovn", "web-0.default", "win-db.tenant", "win-db.tenant.blue.tenant.ovn",
	}
	for _, w := range want {
		if !slices.Contains(ports, w) {
			t.Errorf("port %s missing; ports: %v", w, ports)
		}
	}
	for _, p := range ports {
		if strings.Contains(p, "virt-launcher") || strings.Contains(p, "node-exporter") || strings.Contains(p, "backup") {
			t.Errorf("port %s must not exist (launcher, hostNetwork or finished pod)", p)
		}
	}

	// Failure 1: the stopped VM keeps its spec-only Multus network, with its MAC.
	blue := "win-db.tenant.blue.tenant.ovn"
	if a := s.Get("Logical_Switch_Port", blue, "addresses"); !strings.HasPrefix(a, `["02:00:00:00:be:01 192.168.100.`) {
		t.Errorf("%s addresses = %s, want the interface's MAC and an address of tenant/blue", blue, a)
	}
	if rc := s.Get("Logical_Switch_Port", blue, "options:requested-chassis"); rc != "" {
		t.Errorf("stopped VM port %s has requested-chassis %q", blue, rc)
	}
	if o := s.Get("Logical_Switch_Port", blue, "external_ids:ovn-sync/owner"); o != "VirtualMachine/tenant/win-db" {
		t.Errorf("%s owner = %q", blue, o)
	}
	if n := s.Get("Logical_Switch_Port", blue, "external_ids:ovn-sync/network"); n != "tenant/blue" {
		t.Errorf("%s network = %q", blue, n)
	}
	if sw := s.NBCtl("lsp-get-ls", blue); !strings.Contains(sw, "(blue.tenant)") {
		t.Errorf("%s is on %s, want switch blue.tenant", blue, sw)
	}

	// Failure 2: the migrating VM has one port, bound to both chassis.
	rhel := "rhel-app.default"
	if a := s.Get("Logical_Switch_Port", rhel, "addresses"); !strings.Contains(a, " 10.16.0.100 ") && !strings.HasSuffix(a, ` 10.16.0.100"]`) {
		t.Errorf("%s addresses = %s, want its fixed IP 10.16.0.100", rhel, a)
	}
	if rc := s.Get("Logical_Switch_Port", rhel, "options:requested-chassis"); rc != "node-1,node-3" {
		t.Errorf("%s requested-chassis = %q, want node-1,node-3", rhel, rc)
	}
	if as := s.Get("Logical_Switch_Port", rhel, "options:activation-strategy"); as != "rarp" {
		t.Errorf("%s activation-strategy = %q, want rarp", rhel, as)
	}

	if a := s.Get("Logical_Switch_Port", "dns-0.default", "addresses"); !strings.HasPrefix(a, `["00:00:00:53:53:53 10.16.0.53`) {
		t.Errorf("dns-0.default addresses = %s, want its requested MAC and IP", a)
	}
	if ps, a := s.Get("Logical_Switch_Port", "web-0.default", "port_security"), s.Get("Logical_Switch_Port", "web-0.default", "addresses"); ps != a {
		t.Errorf("web-0.default port_security %s != addresses %s", ps, a)
	}
	if rc := s.Get("Logical_Switch_Port", "web-0.default", "options:requested-chassis"); rc != "node-1" {
		t.Errorf("web-0.default requested-chassis = %q, want node-1", rc)
	}
}

// TestLifecycleAgainstRealNB follows the example VMs through migration
// completion and a start on another node: addresses never change.
func TestLifecycleAgainstRealNB(t *testing.T) {
	s := nbtest.Start(t)
	applyOK(t, s, stage(t, nil))
	rhelAddr := s.Get("Logical_Switch_Port", "rhel-app.default", "addresses")
	winAddr := s.Get("Logical_Switch_Port", "win-db.tenant", "addresses")
	winBlue := s.Get("Logical_Switch_Port", "win-db.tenant.blue.tenant.ovn", "addresses")
	rhelUUID := s.Get("Logical_Switch_Port", "rhel-app.default", "_uuid")

	// The migration completes: one chassis, no activation strategy, same row, same addresses.
	applyOK(t, s, stage(t, map[string]string{"40-vm-migrating.yaml": "testdata/migrated/rhel-app.yaml"}))
	if rc := s.Get("Logical_Switch_Port", "rhel-app.default", "options:requested-chassis"); rc != "node-3" {
		t.Errorf("after migration, requested-chassis = %q, want node-3", rc)
	}
	if as := s.Get("Logical_Switch_Port", "rhel-app.default", "options:activation-strategy"); as != "" {
		t.Errorf("after migration, activation-strategy = %q, want unset", as)
	}
	if a := s.Get("Logical_Switch_Port", "rhel-app.default", "addresses"); a != rhelAddr {
		t.Errorf("after migration, addresses = %s, want %s", a, rhelAddr)
	}
	if u := s.Get("Logical_Switch_Port", "rhel-app.default", "_uuid"); u != rhelUUID {
		t.Errorf("the port was recreated during migration (uuid %s -> %s)", rhelUUID, u)
	}

	// Failure 3: the stopped VM starts on node-4 and keeps IP and MAC on both networks.
	applyOK(t, s, stage(t, map[string]string{
		"40-vm-migrating.yaml": "testdata/migrated/rhel-app.yaml",
		"30-vm-stopped.yaml":   "testdata/restarted/win-db.yaml",
	}))
	if a := s.Get("Logical_Switch_Port", "win-db.tenant", "addresses"); a != winAddr {
		t.Errorf("after start, win-db.tenant addresses = %s, want %s", a, winAddr)
	}
	if a := s.Get("Logical_Switch_Port", "win-db.tenant.blue.tenant.ovn", "addresses"); a != winBlue {
		t.Errorf("after start, blue addresses = %s, want %s", a, winBlue)
	}
	if rc := s.Get("Logical_Switch_Port", "win-db.tenant", "options:requested-chassis"); rc != "node-4" {
		t.Errorf("after start, requested-chassis = %q, want node-4", rc)
	}

	// Stopped again: the ports stay, unbound, with the same addresses.
	applyOK(t, s, stage(t, map[string]string{"40-vm-migrating.yaml": "testdata/migrated/rhel-app.yaml"}))
	if a := s.Get("Logical_Switch_Port", "win-db.tenant.blue.tenant.ovn", "addresses"); a != winBlue {
		t.Errorf("after stop, blue addresses = %s, want %s", a, winBlue)
	}
	if rc := s.Get("Logical_Switch_Port", "win-db.tenant", "options:requested-chassis"); rc != "" {
		t.Errorf("after stop, requested-chassis = %q, want unset", rc)
	}
}

// TestBadInputAgainstRealNB: problems are reported by object name, and no good
// port is deleted or rewritten; foreign ports and keys are left alone and their
// addresses never handed out.
func TestBadInputAgainstRealNB(t *testing.T) {
	s := nbtest.Start(t)
	// Someone else's port on the default switch, holding the lowest free address.
	s.NBCtl("ls-add", "ovn-default")
	s.NBCtl("lsp-add", "ovn-default", "foreign", "--", "lsp-set-addresses", "foreign", "0a:00:00:00:00:02 10.16.0.2")
	applyOK(t, s, stage(t, nil, "testdata/red/red.yaml"))
	for _, name := range strings.Fields(s.NBCtl("--bare", "--columns=name", "list", "Logical_Switch_Port")) {
		a := s.Get("Logical_Switch_Port", name, "addresses")
		if name != "foreign" && (strings.Contains(a, " 10.16.0.2\"") || strings.Contains(a, " 10.16.0.2 ")) {
			t.Errorf("port %s has %s: 10.16.0.2, held by a foreign port, was handed out again", name, a)
		}
	}
	redPort := "red-client.tenant.red.tenant.ovn"
	redAddr := s.Get("Logical_Switch_Port", redPort, "addresses")
	if !strings.Contains(redAddr, "172.20.0.") {
		t.Fatalf("%s addresses = %q, want one of 172.20.0.0/24", redPort, redAddr)
	}
	if sw := s.NBCtl("lsp-get-ls", redPort); !strings.Contains(sw, "(tenant-red)") {
		t.Errorf("%s is on %s, want the NAD's logical_switch tenant-red", redPort, sw)
	}
	// Someone adds keys of their own to our row.
	s.NBCtl("set", "Logical_Switch_Port", "web-0.default", "external_ids:team=web", "options:mcast_flood=true")
	dump := s.NBCtl("--columns=name,addresses,options,external_ids", "list", "Logical_Switch_Port")

	out := applyOK(t, s, stage(t, nil, "testdata/bad/bad.yaml"))
	for _, w := range []string{
		`Pod default/bad-ip: ovn.kubernetes.io/ip_address "999.1.1.1"`,
		`Pod default/thief:`,
		`NetworkAttachmentDefinition tenant/red:`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("apply output lacks a problem line containing %q:\n%s", w, out)
		}
	}
	if got := s.NBCtl("--columns=name,addresses,options,external_ids", "list", "Logical_Switch_Port"); got != dump {
		t.Errorf("bad input changed existing ports.\nbefore:\n%s\nafter:\n%s", dump, got)
	}
	for _, p := range []string{"bad-ip.default", "thief.default"} {
		if u := s.Get("Logical_Switch_Port", p, "_uuid"); u != "" {
			t.Errorf("port %s was created for bad input", p)
		}
	}
	if o := s.Get("Logical_Switch_Port", "foreign", "external_ids"); o != "{}" {
		t.Errorf("foreign port external_ids = %s, want untouched {}", o)
	}
}
