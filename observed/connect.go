package observed

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"
)

// Address names an NB to connect to, as ovn-sync's --nb flags give it.
type Address struct {
	// NB is "unix:PATH", "tcp:HOST:PORT", "ssl:HOST:PORT" (comma-separated
	// for a RAFT cluster), or "embedded" for an in-memory NB started here.
	NB string
	// Cert, Key and CA are PEM files: the client certificate and key, and
	// the CA that signed the server's certificate (system roots without).
	Cert, Key, CA string
	// Timeout bounds connecting, and each attempt to reconnect.
	Timeout time.Duration
}

// Connect dials the NB a names: a real one through its RAFT leader, or an
// embedded one it starts. The returned func closes whatever it opened.
func Connect(ctx context.Context, a Address) (*NB, func(), error) {
	if a.NB == "" {
		return nil, nil, errors.New("--nb is required (unix:PATH, tcp:HOST:PORT, ssl:HOST:PORT or embedded)")
	}
	ctx, cancel := context.WithTimeout(ctx, a.Timeout)
	defer cancel()
	if a.NB == "embedded" {
		e, err := StartEmbedded()
		if err != nil {
			return nil, nil, err
		}
		nb, err := Dial(ctx, Options{Endpoints: []string{e.Endpoint}})
		if err != nil {
			e.Close()
			return nil, nil, err
		}
		return nb, func() { nb.Close(); e.Close() }, nil
	}
	eps, err := ParseEndpoints(a.NB)
	if err != nil {
		return nil, nil, err
	}
	tlsCfg, err := a.tlsConfig()
	if err != nil {
		return nil, nil, err
	}
	nb, err := Dial(ctx, Options{Endpoints: eps, TLS: tlsCfg, LeaderOnly: true, ReconnectTimeout: a.Timeout})
	if err != nil {
		return nil, nil, err
	}
	return nb, nb.Close, nil
}

func (a Address) tlsConfig() (*tls.Config, error) {
	if a.Cert == "" && a.Key == "" && a.CA == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if a.Cert != "" || a.Key != "" {
		pair, err := tls.LoadX509KeyPair(a.Cert, a.Key)
		if err != nil {
			return nil, fmt.Errorf("--nb-cert/--nb-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if a.CA != "" {
		pem, err := os.ReadFile(a.CA)
		if err != nil {
			return nil, fmt.Errorf("--nb-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--nb-ca %s: no certificate found", a.CA)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
