// faultproxy: a fault-injecting HTTPS proxy between a client and the real kube-apiserver, for
// tests (README.md), with the fault rules the retired tests/kubesim took.
//
//	faultproxy --listen 127.0.0.1:0 --upstream https://127.0.0.1:PORT --upstream-ca DIR/pki/ca.crt
//	           --cert-dir D --ca-cert DIR/pki/ca.crt --ca-key DIR/pki/ca.key [--faults JSON|@FILE] [--log FILE]
//
// Prints `faultproxy ready https://127.0.0.1:PORT` once it serves; SIGTERM/SIGINT: stops, exits 0.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func usage(msg string) {
	fmt.Fprintf(os.Stderr, "faultproxy: %s\n", msg)
	fmt.Fprintln(os.Stderr, "usage: faultproxy --listen 127.0.0.1:0 --upstream https://HOST:PORT --upstream-ca FILE "+
		"--cert-dir DIR --ca-cert FILE --ca-key FILE [--faults JSON|@FILE] [--log FILE]")
	os.Exit(2)
}

func readPEMs(file string) []*pem.Block {
	data, err := os.ReadFile(file)
	if err != nil {
		usage(err.Error())
	}
	var blocks []*pem.Block
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return blocks
		}
		blocks = append(blocks, b)
	}
}

func parseKey(b *pem.Block) (any, error) {
	if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	return x509.ParsePKCS8PrivateKey(b.Bytes)
}

// mintServingCert: a serving certificate for 127.0.0.1, ::1 and localhost signed by the cluster's
// CA, so that a kubeconfig with the cluster's CA trusts the proxy as it trusts the API server.
func mintServingCert(caCertFile, caKeyFile, dir string) (tls.Certificate, error) {
	certs, keys := readPEMs(caCertFile), readPEMs(caKeyFile)
	if len(certs) == 0 || len(keys) == 0 {
		return tls.Certificate{}, errors.New("--ca-cert / --ca-key: no PEM block")
	}
	ca, err := x509.ParseCertificate(certs[0].Bytes)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--ca-cert: %v", err)
	}
	caKey, err := parseKey(keys[0])
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--ca-key: %v", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "faultproxy"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("signing the serving certificate: %v", err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	if err := os.WriteFile(filepath.Join(dir, "server.crt"), certPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "server.key"), keyPEM, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

func newServer(h http.Handler, cert tls.Certificate, errlog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          errlog,
		// The client's connection, for the resets (HTTP/1.1 and HTTP/2 alike).
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve HTTPS on")
	upstreamURL := flag.String("upstream", "", "the API server, https://HOST:PORT")
	upstreamCA := flag.String("upstream-ca", "", "CA bundle that verifies the API server (default: the system's)")
	certDir := flag.String("cert-dir", "", "where the serving certificate and the admin token are written")
	caCert := flag.String("ca-cert", "", "CA certificate that signs the serving certificate (the cluster's)")
	caKey := flag.String("ca-key", "", "its key")
	faultsArg := flag.String("faults", "", "initial fault rules: JSON, or @FILE")
	logFile := flag.String("log", "", "append one JSON line per faulted request to FILE")
	flag.Usage = func() { usage("bad arguments") }
	flag.Parse()
	if flag.NArg() > 0 {
		usage("unexpected argument " + flag.Arg(0))
	}
	if *upstreamURL == "" || *certDir == "" || *caCert == "" || *caKey == "" {
		usage("--upstream, --cert-dir, --ca-cert and --ca-key are required")
	}
	upstream, err := url.Parse(*upstreamURL)
	if err != nil || upstream.Scheme != "https" || upstream.Host == "" {
		usage("--upstream must be https://HOST:PORT")
	}
	errlog := log.New(os.Stderr, "faultproxy: ", log.LstdFlags)

	var pool *x509.CertPool
	if *upstreamCA != "" {
		pool = x509.NewCertPool()
		data, err := os.ReadFile(*upstreamCA)
		if err != nil || !pool.AppendCertsFromPEM(data) {
			usage("--upstream-ca: no certificate in " + *upstreamCA)
		}
	}
	faults := newInjector()
	if *faultsArg != "" {
		spec := []byte(*faultsArg)
		if strings.HasPrefix(*faultsArg, "@") {
			if spec, err = os.ReadFile((*faultsArg)[1:]); err != nil {
				usage("--faults: " + err.Error())
			}
		}
		if err := faults.configure(spec); err != nil {
			usage("--faults: " + err.Error())
		}
	}
	flog := &faultLog{}
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			usage("--log: " + err.Error())
		}
		defer f.Close()
		flog.w = f
	}
	if err := os.MkdirAll(*certDir, 0o700); err != nil {
		usage("--cert-dir: " + err.Error())
	}
	cert, err := mintServingCert(*caCert, *caKey, *certDir)
	if err != nil {
		usage(err.Error())
	}
	// The admin token: in --cert-dir/admin-token only (never printed, never logged).
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	token := hex.EncodeToString(raw)
	if err := os.WriteFile(filepath.Join(*certDir, "admin-token"), []byte(token), 0o600); err != nil {
		usage("--cert-dir: " + err.Error())
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		usage("--listen: " + err.Error())
	}
	srv := newServer(newProxy(upstream, pool, faults, token, flog, errlog), cert, errlog)
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	fmt.Printf("faultproxy ready https://%s\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	select {
	case <-ctx.Done():
		_ = srv.Close() // watches never go idle: no graceful wait
	case err := <-served:
		errlog.Printf("serving: %v", err)
		os.Exit(1)
	}
}
