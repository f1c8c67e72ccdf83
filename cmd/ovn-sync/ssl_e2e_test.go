package main

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-sync/ovn-sync/internal/kubetest"
	"github.com/ovn-sync/ovn-sync/internal/looptest"
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
	s := nbtest.StartSSL(t)
	k := kubetest.Start(t)
	k.Namespace("tls")
	run := startRun(t, k.Kubeconfig, s.Addr(), append([]string{"--leader-elect=false"},
		sslFlags(s, s.ClientCert, s.ClientKey, s.CA.Cert)[2:]...)...)
	nb := nbWatch(t, s.Server.Addr())
	looptest.WaitFor(t, 30*time.Second, "ready", func() error { _, err := run.get("/readyz"); return err })
	if _, err := k.Kube.CoreV1().Pods("tls").Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "tls"},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	portIs(t, nb, "p.tls", "created over ssl", present)
}
