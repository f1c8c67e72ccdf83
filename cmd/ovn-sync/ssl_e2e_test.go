package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ovn-sync/ovn-sync/internal/nbtest"
)

// sslFlags are the NB flags for s's SSL listener with the given client
// certificate.
func sslFlags(s *nbtest.SSLServer, cert, key, ca string) []string {
	return []string{"--nb", s.Addr(), "--nb-cert", cert, "--nb-key", key, "--nb-ca", ca}
}

// TestApplySSL runs apply over ssl: against an ovsdb-server that requires
// client certificates: it converges, a second apply is "No changes.", and a
// connection the server or the client must not trust fails at once with an
// error that says why.
func TestApplySSL(t *testing.T) {
	s := nbtest.StartSSL(t)
	dir := stage(t, nil)
	conf := []string{"-f", dir, "--config", "../../examples/ovn-sync.yaml"}
	good := sslFlags(s, s.ClientCert, s.ClientKey, s.CA.Cert)

	out, errOut, code := ovnSync(t, append(append([]string{"apply"}, conf...), good...)...)
	if code != 0 || !strings.Contains(out, "Plan: 10 to add, 0 to change, 0 to destroy.") {
		t.Fatalf("apply over ssl: exit %d, output:\n%s\nstderr:\n%s", code, out, errOut)
	}
	checkSeedPorts(t, s.Server)
	before := s.Commits()
	out, errOut, code = ovnSync(t, append(append([]string{"apply"}, conf...), good...)...)
	if code != 0 || strings.TrimSpace(out) != "No changes." {
		t.Errorf("second apply over ssl: exit %d, output %q, stderr %q; want 0 and No changes.", code, out, errOut)
	}
	if got := s.Commits(); got != before {
		t.Errorf("second apply over ssl committed %d transactions, want 0", got-before)
	}

	other := nbtest.NewCA(t, "other")
	otherCert, otherKey := other.Issue("intruder")
	for _, tc := range []struct {
		name  string
		flags []string
		want  string // in stderr
	}{
		{"client certificate from another CA", sslFlags(s, otherCert, otherKey, s.CA.Cert), "refused the client certificate: remote error: tls:"},
		{"no client certificate", []string{"--nb", s.Addr(), "--nb-ca", s.CA.Cert}, "refused the client certificate: remote error: tls:"},
		{"server certificate from an untrusted CA", sslFlags(s, s.ClientCert, s.ClientKey, other.Cert), "unknown authority"},
	} {
		start := time.Now()
		out, errOut, code := ovnSync(t, append(append([]string{"plan"}, conf...), tc.flags...)...)
		took := time.Since(start)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: plan exit %d, stdout %q, stderr %q; want exit 1 and an error mentioning %q", tc.name, code, out, errOut, tc.want)
		}
		// A refusal must not wait for the connection to time out (the
		// default --connect-timeout, 30s).
		if took >= 30*time.Second {
			t.Errorf("%s: plan took %s to fail: it waited for --connect-timeout, want a refusal before it", tc.name, took.Round(time.Millisecond))
		}
		t.Logf("%s: refused in %s: %s", tc.name, took.Round(time.Millisecond), strings.TrimSpace(errOut))
	}
}

// TestRunSSL runs run mode over ssl: a pod gets its port.
func TestRunSSL(t *testing.T) {
	e := startEnv(t, envOptions{SSL: true, Namespaces: []string{"tls"}})
	run := e.run("--leader-elect=false")
	run.waitReady()
	createPod(t, e.k, pausePod("tls", "p", "node-a"))
	portIs(t, e.nb, "p.tls", "created over ssl", present)
}
