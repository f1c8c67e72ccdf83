package nbtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a throw-away certificate authority whose files live in a test's
// temporary directory.
type CA struct {
	// Cert is the CA certificate's PEM file, what --nb-ca and ovsdb-server's
	// --ca-cert take.
	Cert string

	dir  string
	name string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	t    testing.TB
}

// NewCA makes a self-signed CA named name, valid for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{dir: t.TempDir(), name: name, cert: cert, key: key, t: t}
	ca.Cert = ca.write(name+"-ca.pem", "CERTIFICATE", der)
	return ca
}

// Issue signs a certificate for cn, usable by servers and clients alike,
// with ips as its IP SANs, and returns the paths of its certificate and
// private key PEM files.
func (ca *CA) Issue(cn string, ips ...net.IP) (cert, key string) {
	ca.t.Helper()
	k := newKey(ca.t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(ca.t),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &k.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		ca.t.Fatal(err)
	}
	base := ca.name + "-" + cn
	return ca.write(base+"-cert.pem", "CERTIFICATE", der), ca.write(base+"-key.pem", "PRIVATE KEY", kder)
}

func (ca *CA) write(name, typ string, der []byte) string {
	ca.t.Helper()
	path := filepath.Join(ca.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		ca.t.Fatal(err)
	}
	return path
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// SSLServer is a Server that also listens for SSL on loopback. It requires
// clients to present a certificate its CA signed (ovsdb-server does when it
// is given --ca-cert). The embedded Server's methods (NBCtl, Restart, ...)
// keep using the unix socket.
type SSLServer struct {
	*Server
	// Port is the SSL port on 127.0.0.1.
	Port int
	// CA signed the server's certificate (SAN 127.0.0.1) and the client's.
	CA *CA
	// ClientCert and ClientKey are a client certificate and key CA signed.
	ClientCert, ClientKey string
}

// Addr is the SSL address in the form ovn-sync's --nb flag takes.
func (s *SSLServer) Addr() string { return fmt.Sprintf("ssl:127.0.0.1:%d", s.Port) }

// StartSSL is Start with an SSL listener on a free loopback port, under a
// CA of its own.
func StartSSL(t testing.TB) *SSLServer {
	t.Helper()
	Require(t)
	ca := NewCA(t, "nbtest")
	srvCert, srvKey := ca.Issue("ovsdb-server", net.IPv4(127, 0, 0, 1))
	cliCert, cliKey := ca.Issue("ovn-sync")
	port := freeLoopbackPort(t)
	s := &SSLServer{Port: port, CA: ca, ClientCert: cliCert, ClientKey: cliKey}
	s.Server = startWith(t, []string{
		fmt.Sprintf("--remote=pssl:%d:127.0.0.1", port),
		"--private-key=" + srvKey, "--certificate=" + srvCert, "--ca-cert=" + ca.Cert,
	})
	// The unix socket answers first; wait for the SSL listener too.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("ovsdb-server SSL listener on 127.0.0.1:%d: %v", port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freeLoopbackPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
