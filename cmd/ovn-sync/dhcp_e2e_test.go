package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovn-sync/ovn-sync/internal/nbtest"
)

// TestDHCP follows native DHCP through the binary against a real
// ovsdb-server: plan shows the DHCP_Options rows and the ports' references
// (text and JSON), apply writes them and a second plan has nothing to do,
// explain shows what a port's guest is offered, a row ovn-sync did not
// create is never touched, and turning DHCP off deletes our rows and
// clears the references.
func TestDHCP(t *testing.T) {
	s := nbtest.Start(t)
	dir := manifestDir(t, map[string]string{
		"nad.yaml": `apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: l2, namespace: tenant}
spec:
  config: '{"cniVersion":"0.4.0","type":"ovn-k8s-cni-overlay","topology":"layer2","subnets":"192.168.50.0/24","gateway":"192.168.50.1","dhcp":true,"dhcpV4Options":"dns_server={192.168.50.53}"}'
`,
		"vm.yaml": `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: db, namespace: tenant, creationTimestamp: "2026-03-01T00:00:00Z"}
spec:
  runStrategy: Halted
  template:
    spec:
      domain: {devices: {interfaces: [{name: default, masquerade: {}}, {name: l2, bridge: {}}]}}
      networks: [{name: default, pod: {}}, {name: l2, multus: {networkName: l2}}]
`,
	})
	cfgDir := t.TempDir()
	writeCfg := func(extra string) string {
		f := filepath.Join(cfgDir, "config.yaml")
		if err := os.WriteFile(f, []byte(addrConfig+extra), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	cfg := writeCfg("  gateway: \"10.16.0.1\"\n  dhcp: true\n  dhcpV4Options: \"lease_time=600\"\n")

	// A DHCP_Options row someone else made, with our name on it but not
	// our owner: never ours.
	theirs := strings.TrimSpace(s.NBCtl("create", "DHCP_Options", "cidr=10.99.0.0/24", `options={lease_time="60"}`,
		`external_ids={"ovn-sync/dhcp"="ovn-default/ipv4"}`))

	plan := runOneShot(t, s, cfg, "plan", dir, 2, "--detailed-exitcode")
	for _, want := range []string{
		`+ dhcp_options "ovn-default/ipv4" (ovn-sync)`,
		`+ options:lease_time: "600"`,
		`+ options:router: "10.16.0.1"`,
		`+ dhcp_options "l2.tenant/ipv4" (NetworkAttachmentDefinition/tenant/l2)`,
		`+ options:dns_server: "{192.168.50.53}"`,
		`+ dhcpv4_options: "ovn-default/ipv4"`,
		`+ dhcpv4_options: "l2.tenant/ipv4"`,
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, plan)
		}
	}
	var j struct {
		Plan struct {
			Changes []struct {
				Kind  string         `json:"kind"`
				Name  string         `json:"name"`
				After map[string]any `json:"after"`
			} `json:"changes"`
		} `json:"plan"`
	}
	out := runOneShot(t, s, cfg, "plan", dir, 0, "-o", "json")
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &j); err != nil {
		t.Fatalf("plan -o json: %v\n%s", err, out)
	}
	refs := map[string]any{}
	for _, c := range j.Plan.Changes {
		if c.Kind == "logical_switch_port" {
			refs[c.Name] = c.After["dhcpv4_options"]
		}
		if c.Kind == "dhcp_options" && c.Name == "ovn-default/ipv4" && c.After["cidr"] != "10.16.0.0/16" {
			t.Errorf("plan -o json: dhcp_options %s after = %v", c.Name, c.After)
		}
	}
	if refs["db.tenant"] != "ovn-default/ipv4" || refs["db.tenant.l2.tenant.ovn"] != "l2.tenant/ipv4" {
		t.Errorf("plan -o json: the ports' dhcpv4_options = %v", refs)
	}

	runOneShot(t, s, cfg, "apply", dir, 0)
	ours := strings.TrimSpace(s.NBCtl("--bare", "--columns=_uuid", "find", "DHCP_Options", `external_ids:"ovn-sync/owner"=ovn-sync`))
	if ours == "" || strings.Contains(ours, "\n") {
		t.Fatalf("DHCP_Options rows of the default network's owner: %q, want one", ours)
	}
	if got := s.Get("Logical_Switch_Port", "db.tenant", "dhcpv4_options"); got != ours {
		t.Errorf("db.tenant dhcpv4_options = %q, want our row %s", got, ours)
	}
	if got := s.Get("DHCP_Options", ours, "options:server_id"); got != "10.16.0.1" {
		t.Errorf("server_id = %q, want the gateway", got)
	}
	mac := s.Get("DHCP_Options", ours, "options:server_mac")
	runOneShot(t, s, cfg, "plan", dir, 0, "--detailed-exitcode")

	stdout, stderr, code := ovnSync(t, "explain", "vm/tenant/db", "-f", dir, "--nb", s.Addr(), "--config", cfg)
	if code != 0 || !strings.Contains(stdout, "dhcp: ovn-default/ipv4, cidr 10.16.0.0/16, change none") ||
		!strings.Contains(stdout, "lease_time=600") || !strings.Contains(stdout, "dhcp: l2.tenant/ipv4") {
		t.Errorf("explain vm/tenant/db: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	// Another pass writes the same server_mac: it is derived, not random.
	s.NBCtl("set", "DHCP_Options", ours, `options:lease_time="1"`)
	runOneShot(t, s, cfg, "apply", dir, 0)
	if got := s.Get("DHCP_Options", ours, "options:lease_time"); got != "600" {
		t.Errorf("lease_time after a repair = %q, want 600", got)
	}
	if got := s.Get("DHCP_Options", ours, "options:server_mac"); got != mac {
		t.Errorf("server_mac = %q after another pass, was %q", got, mac)
	}

	// DHCP off on the default network: its row goes, the port's reference
	// with it; the NAD's stays; the foreign row is as it was.
	off := writeCfg("  gateway: \"10.16.0.1\"\n")
	runOneShot(t, s, off, "apply", dir, 0)
	if got := s.Get("Logical_Switch_Port", "db.tenant", "dhcpv4_options"); got != "[]" {
		t.Errorf("db.tenant dhcpv4_options = %q after DHCP off, want []", got)
	}
	if got := strings.TrimSpace(s.NBCtl("--bare", "--columns=_uuid", "find", "DHCP_Options", `external_ids:"ovn-sync/owner"=ovn-sync`)); got != "" {
		t.Errorf("our default network's DHCP_Options row %q survived DHCP off", got)
	}
	if got := s.Get("Logical_Switch_Port", "db.tenant.l2.tenant.ovn", "dhcpv4_options"); got == "[]" {
		t.Errorf("the NAD's port lost its dhcpv4_options")
	}
	if got := s.Get("DHCP_Options", theirs, "options:lease_time"); got != "60" {
		t.Errorf("the foreign DHCP_Options row: lease_time %q, want 60 (untouched)", got)
	}
	runOneShot(t, s, off, "plan", dir, 0, "--detailed-exitcode")
}
