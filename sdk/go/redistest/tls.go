package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TLS is what a test needs to serve and reach a redis-server over TLS: a
// certificate authority made for the test alone, a server certificate for
// 127.0.0.1 and localhost signed by it, the three as PEM files in a
// temporary directory, and a free port to serve TLS on.
//
//	x := redistest.NewTLS(t)
//	srv := redistest.Start(t, x.Option())      // plain port for setup, TLS on x.Port
//	opt := rueidis.ClientOption{InitAddress: []string{x.Addr()}, TLSConfig: x.Config()}
type TLS struct {
	CA   string // the CA certificate (what a client trusts, e.g. emqgen -tls-ca)
	Cert string // the server certificate
	Key  string // the server's private key
	Port int    // the port Option serves TLS on

	roots *x509.CertPool
}

// NewTLS makes the CA and the server certificate (valid for an hour around
// now) and picks the TLS port.
func NewTLS(t testing.TB) *TLS {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redistest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("redistest: making the CA: %v", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	srvKey := newKey(t)
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("redistest: making the server certificate: %v", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		return path
	}
	x := &TLS{
		CA:    write("ca.pem", "CERTIFICATE", caDER),
		Cert:  write("server.pem", "CERTIFICATE", srvDER),
		Key:   write("server.key", "EC PRIVATE KEY", keyDER),
		roots: x509.NewCertPool(),
	}
	x.roots.AddCert(caCert)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: no free port: %v", err)
	}
	x.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	return x
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return k
}

// Option makes a server serve TLS on x.Port with x's certificate, besides
// its plain port (which Start waits on and Do uses). Clients are not asked
// for a certificate.
func (x *TLS) Option() Option {
	return WithArgs("--tls-port", strconv.Itoa(x.Port), "--tls-cert-file", x.Cert, "--tls-key-file", x.Key,
		"--tls-ca-cert-file", x.CA, "--tls-auth-clients", "no")
}

// Addr returns host:port of the TLS port.
func (x *TLS) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(x.Port)) }

// Config returns a client configuration that trusts x's CA and nothing
// else; the server name is taken from the address dialed (127.0.0.1 or
// localhost, both in the certificate).
func (x *TLS) Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: x.roots}
}
