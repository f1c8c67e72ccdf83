package nbtest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStartSSL checks the server's SSL listener with OVS's own client: a
// certificate the CA signed is let in, one from another CA is not.
func TestStartSSL(t *testing.T) {
	s := StartSSL(t)
	s.NBCtl("ls-add", "sw0")
	list := func(cert, key string) (string, error) {
		out, err := exec.Command("ovsdb-client", "--timeout=5", "-p", key, "-c", cert, "-C", s.CA.Cert,
			"list-dbs", s.Addr()).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := list(s.ClientCert, s.ClientKey); err != nil || !strings.Contains(out, "OVN_Northbound") {
		t.Errorf("ovsdb-client list-dbs with the CA's client certificate = %q, %v; want OVN_Northbound", out, err)
	}
	cert, key := NewCA(t, "other").Issue("intruder")
	if out, err := list(cert, key); err == nil {
		t.Errorf("ovsdb-client list-dbs with another CA's certificate = %q, want an error", out)
	}
}
