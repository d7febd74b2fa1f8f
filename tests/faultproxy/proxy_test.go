package main

// The proxy in process, against a stand-in API server (httptest): what each fault looks like
// to HTTP/1.1 and HTTP/2 clients. e2e_test.sh does the same against the real API server.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var watchEvents = []string{
	`{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a"}}}` + "\n",
	`{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"b"}}}` + "\n",
	`{"type":"MODIFIED","object":{"kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"y"}}}}` + "\n",
}

type fixture struct {
	url      string
	token    string
	roots    *x509.CertPool
	faults   *injector
	log      bytes.Buffer
	mu       sync.Mutex
	seen     []string // requests that reached the API server: "METHOD PATH"
	requests atomic.Int64
}

func (f *fixture) reached() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{faults: newInjector(), token: "admin-token-for-tests"}
	api := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		w.Header().Set("X-Saw-Authorization", r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Query().Get("watch") == "true":
			for _, e := range watchEvents {
				_, _ = io.WriteString(w, e)
				w.(http.Flusher).Flush()
				time.Sleep(20 * time.Millisecond)
			}
			if r.URL.Query().Get("hold") == "1" { // a watch that stays open until its client goes
				<-r.Context().Done()
			}
		case r.Method == http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(body)
		default:
			_, _ = io.WriteString(w, `{"kind":"ConfigMap","metadata":{"name":"c","resourceVersion":"7"}}`+"\n")
		}
	}))
	api.StartTLS()
	t.Cleanup(api.Close)
	upstreamRoots := x509.NewCertPool()
	upstreamRoots.AddCert(api.Certificate())
	upstream, _ := url.Parse(api.URL)

	// A cluster CA (RSA, PKCS#1, as controlplane.sh's) that the proxy mints its certificate from.
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour)}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	caKeyDER, _ := x509.MarshalPKCS8PrivateKey(caKey)
	_ = os.WriteFile(filepath.Join(dir, "ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600)
	_ = os.WriteFile(filepath.Join(dir, "ca.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: caKeyDER}), 0o600)
	cert, err := mintServingCert(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"), dir)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	f.roots = x509.NewCertPool()
	f.roots.AddCert(caCert)

	errlog := log.New(io.Discard, "", 0)
	srv := newServer(newProxy(upstream, upstreamRoots, f.faults, f.token, &faultLog{w: &f.log}, errlog), cert, errlog)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	f.url = "https://" + ln.Addr().String()
	return f
}

func (f *fixture) client(h2 bool) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.roots}, ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr}
}

func (f *fixture) setFaults(t *testing.T, spec string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, f.url+adminPath, strings.NewReader(spec))
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := f.client(false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT faults %s: %d %s", spec, resp.StatusCode, body)
	}
}

func do(c *http.Client, method, url, body string) (*http.Response, []byte, error) {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer sa-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

const cms = "/api/v1/namespaces/ns/configmaps"

func TestProxy(t *testing.T) {
	f := newFixture(t)
	for _, h2 := range []bool{false, true} {
		name := map[bool]string{false: "http1.1", true: "http2"}[h2]
		t.Run(name, func(t *testing.T) {
			c := f.client(h2)
			wantProto := map[bool]int{false: 1, true: 2}[h2]

			f.setFaults(t, `{"rules":[]}`)
			resp, body, err := do(c, "GET", f.url+cms+"/c", "")
			if err != nil || resp.StatusCode != 200 || resp.ProtoMajor != wantProto ||
				string(body) != `{"kind":"ConfigMap","metadata":{"name":"c","resourceVersion":"7"}}`+"\n" ||
				resp.Header.Get("X-Saw-Authorization") != "Bearer sa-token" {
				t.Fatalf("pass-through: %v %v %q %v", err, resp, body, resp.Header)
			}

			for _, c5 := range []struct{ spec, code, retry, body string }{
				{`{"fault":"500"}`, "500", "", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Internal error occurred: faultproxy: injected fault","reason":"InternalError","details":{"causes":[{"message":"faultproxy: injected fault"}]},"code":500}`},
				{`{"fault":"503"}`, "503", "", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server is currently unable to handle the request","reason":"ServiceUnavailable","code":503}`},
				{`{"fault":"503","retryAfterSeconds":3}`, "503", "3", ""},
				{`{"fault":"429"}`, "429", "1", `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}`},
			} {
				f.setFaults(t, `{"rules":[`+c5.spec+`]}`)
				resp, body, err := do(c, "GET", f.url+cms, "")
				if err != nil || resp.Status[:3] != c5.code || resp.Header.Get("Retry-After") != c5.retry ||
					(c5.body != "" && string(body) != c5.body+"\n") || resp.Header.Get("Content-Type") != "application/json" {
					t.Fatalf("%s: %v %v %s %v", c5.spec, err, resp, body, resp.Header)
				}
			}

			// reset-before: the client's connection is reset, nothing reaches the server.
			f.setFaults(t, `{"rules":[{"fault":"reset-before","verbs":["create"]}]}`)
			before := len(f.reached())
			if _, _, err := do(c, "POST", f.url+cms, `{"metadata":{"name":"rb"}}`); err == nil ||
				!strings.Contains(err.Error(), "reset") {
				t.Fatalf("reset-before: %v", err)
			}
			if got := f.reached()[before:]; len(got) != 0 {
				t.Fatalf("reset-before reached the server: %v", got)
			}
			if _, _, err := do(c, "GET", f.url+cms+"/c", ""); err != nil { // a new connection works
				t.Fatalf("after the reset: %v", err)
			}

			// reset-after: the write reached the server, the client saw a reset.
			f.setFaults(t, `{"rules":[{"fault":"reset-after"}]}`)
			before = len(f.reached())
			if _, _, err := do(c, "POST", f.url+cms, `{"metadata":{"name":"ra"}}`); err == nil ||
				!strings.Contains(err.Error(), "reset") {
				t.Fatalf("reset-after: %v", err)
			}
			if got := f.reached()[before:]; len(got) != 1 || got[0] != "POST "+cms {
				t.Fatalf("reset-after: the server saw %v", got)
			}

			// slow: a client that waits 100 ms gives up; the write is applied after the delay.
			f.setFaults(t, `{"rules":[{"fault":"slow","delaySeconds":0.4}]}`)
			before = len(f.reached())
			impatient := f.client(h2)
			impatient.Timeout = 100 * time.Millisecond
			if _, _, err := do(impatient, "POST", f.url+cms, `{"metadata":{"name":"slow"}}`); err == nil {
				t.Fatal("slow: the impatient client got an answer")
			}
			for end := time.Now().Add(5 * time.Second); len(f.reached()) == before && time.Now().Before(end); {
				time.Sleep(20 * time.Millisecond)
			}
			if got := f.reached()[before:]; len(got) != 1 {
				t.Fatalf("slow: the server saw %v", got)
			}
			start := time.Now()
			if resp, _, err := do(c, "GET", f.url+cms+"/c", ""); err != nil || resp.StatusCode != 200 ||
				time.Since(start) < 400*time.Millisecond {
				t.Fatalf("slow: %v %v after %v", err, resp, time.Since(start))
			}

			// watch-cut: one whole event, half of the next, then the reset.
			f.setFaults(t, `{"rules":[{"fault":"watch-cut","cutAfterEvents":1}]}`)
			resp, body, err = do(c, "GET", f.url+cms+"?watch=true", "")
			want := watchEvents[0] + watchEvents[1][:len(watchEvents[1])/2]
			if err == nil || string(body) != want {
				t.Fatalf("watch-cut: %v %q, want %q", err, body, want)
			}
			// Not faulted: the whole stream.
			f.setFaults(t, `{"rules":[{"fault":"watch-cut","cutAfterEvents":1,"userAgent":"someone-else"}]}`)
			if _, body, err = do(c, "GET", f.url+cms+"?watch=true", ""); err != nil || string(body) != strings.Join(watchEvents, "") {
				t.Fatalf("watch: %v %q", err, body)
			}
		})
	}
	lines := strings.Split(strings.TrimSpace(f.log.String()), "\n")
	if len(lines) != 2*9 {
		t.Fatalf("log: %d lines\n%s", len(lines), f.log.String())
	}
	for _, want := range []string{`"verb":"create","apiGroup":"","resource":"configmaps","subresource":"","namespace":"ns","name":"rb"`,
		`"name":"ra","uri":"/api/v1/namespaces/ns/configmaps","userAgent":"Go-http-client/2.0","fault":"reset-after","code":0,"upstreamCode":201`,
		`"fault":"watch-cut","code":200,"upstreamCode":200`} {
		if !strings.Contains(f.log.String(), want) {
			t.Errorf("log has no %s:\n%s", want, f.log.String())
		}
	}
}

func TestAdmin(t *testing.T) {
	f := newFixture(t)
	c := f.client(false)
	call := func(method, token, path, body string) (int, string) {
		req, _ := http.NewRequest(method, f.url+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	if code, _ := call("GET", "", adminPath, ""); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := call("GET", "wrong", adminPath, ""); code != 401 {
		t.Fatalf("wrong token: %d", code)
	}
	if code, body := call("PUT", f.token, adminPath, `{"rules":[{"fault":"500","fraction":2}]}`); code != 400 ||
		!strings.Contains(body, `"message":"rules[0].fraction must be in [0, 1]","reason":"BadRequest"`) {
		t.Fatalf("bad rules: %d %s", code, body)
	}
	if code, body := call("POST", f.token, adminPath, `{"seed":3,"rules":[{"fault":"503","limit":1}]}`); code != 200 ||
		!strings.Contains(body, `"seed":3`) {
		t.Fatalf("POST: %d %s", code, body)
	}
	for i := 0; i < 2; i++ {
		_, _, _ = do(c, "GET", f.url+cms, "")
	}
	if _, body := call("GET", f.token, adminPath, ""); !strings.Contains(body, `"injected":{"503":1}`) ||
		!strings.Contains(body, `"limit":1`) {
		t.Fatalf("GET: %s", body)
	}
	// Discovery and health are never faulted; neither reaches the admin endpoint's rules.
	f.setFaults(t, `{"rules":[{"fault":"500"}]}`)
	for _, p := range []string{"/api", "/api/v1", "/apis", "/apis/apps/v1", "/version", "/healthz", "/livez", "/readyz", "/openapi/v2"} {
		if resp, _, err := do(c, "GET", f.url+p, ""); err != nil || resp.StatusCode != 200 {
			t.Errorf("%s was faulted: %v %v", p, err, resp)
		}
	}
	if code, body := call("DELETE", f.token, adminPath, ""); code != 200 || !strings.Contains(body, `"rules":[]`) {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	if code, _ := call("GET", f.token, "/faultproxy/v1/other", ""); code != 404 {
		t.Fatalf("other admin path: %d", code)
	}
	if code, _ := call("PATCH", f.token, adminPath, ""); code != 405 {
		t.Fatalf("PATCH: %d", code)
	}
}

func TestCutBodyProtobuf(t *testing.T) {
	frame := func(s string) string { return string([]byte{0, 0, 0, byte(len(s))}) + s }
	stream := frame("first event") + frame("second event, longer")
	reset := 0
	b := &cutBody{src: io.NopCloser(strings.NewReader(stream)), left: 1, protobuf: true, reset: func() { reset++ }}
	got, err := io.ReadAll(b)
	second := frame("second event, longer")
	if err != errWatchCut || reset != 1 || string(got) != frame("first event")+second[:len(second)/2] {
		t.Fatalf("%v %d %q", err, reset, got)
	}
	// A stream that ends before the cut passes whole.
	b = &cutBody{src: io.NopCloser(strings.NewReader("a\nb\npartial")), left: 5, reset: func() { reset++ }}
	if got, err := io.ReadAll(b); err != nil || string(got) != "a\nb\npartial" {
		t.Fatalf("%v %q", err, got)
	}
}

// Protocol upgrades (exec, attach, port-forward over HTTP/1.1) pass: the proxy hands the
// connection over once the server switched protocols.
func TestUpgrade(t *testing.T) {
	api := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "no upgrade", http.StatusBadRequest)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		_ = rw.Flush()
		line, _ := rw.ReadString('\n')
		_, _ = rw.WriteString("echo " + line)
		_ = rw.Flush()
	}))
	api.StartTLS()
	defer api.Close()
	roots := x509.NewCertPool()
	roots.AddCert(api.Certificate())
	u, _ := url.Parse(api.URL)
	p := newProxy(u, roots, newInjector(), "t", &faultLog{}, log.New(io.Discard, "", 0))
	front := httptest.NewTLSServer(p)
	defer front.Close()

	conn, err := tls.Dial("tcp", front.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET /api/v1/namespaces/ns/pods/p/exec?command=sh HTTP/1.1\r\nHost: x\r\n"+
		"Connection: Upgrade\r\nUpgrade: websocket\r\nAuthorization: Bearer sa-token\r\n\r\n")
	buf := make([]byte, 4096)
	var got []byte
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	for !bytes.Contains(got, []byte("\r\n\r\n")) {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("%v after %q", err, got)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.HasPrefix(got, []byte("HTTP/1.1 101 Switching Protocols")) {
		t.Fatalf("no upgrade: %q", got)
	}
	_, _ = io.WriteString(conn, "hello\n")
	got = got[:0]
	for !bytes.Contains(got, []byte("\n")) {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("%v after %q", err, got)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != "echo hello\n" {
		t.Fatalf("through the upgraded connection: %q", got)
	}
}

// POST /faultproxy/v1/watches/close drops every open watch (fault or not), over HTTP/1.1 and
// HTTP/2: the client's stream ends with an error after the events it had; other requests pass.
func TestCloseWatches(t *testing.T) {
	f := newFixture(t)
	for _, h2 := range []bool{false, true} {
		c := f.client(h2)
		resp, err := c.Get(f.url + "/api/v1/namespaces/n/configmaps?watch=true&hold=1")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		var events []byte
		go func() {
			var e error
			events, e = io.ReadAll(resp.Body)
			got <- e
		}()
		time.Sleep(200 * time.Millisecond) // the three events are through; the watch holds
		req, _ := http.NewRequest(http.MethodPost, f.url+"/faultproxy/v1/watches/close", nil)
		req.Header.Set("Authorization", "Bearer "+f.token)
		cresp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(cresp.Body)
		if cresp.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"closed":1}` {
			t.Fatalf("h2=%v: close answered %d %s", h2, cresp.StatusCode, body)
		}
		select {
		case err := <-got:
			if err == nil {
				t.Errorf("h2=%v: the dropped watch ended cleanly; want an error", h2)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("h2=%v: the watch was not dropped", h2)
		}
		if strings.Count(string(events), "\n") != len(watchEvents) {
			t.Errorf("h2=%v: events before the drop: %q", h2, events)
		}
		if resp, _, _ := do(c, http.MethodPost, f.url+"/faultproxy/v1/watches/close", ""); resp == nil || resp.StatusCode != 401 {
			t.Errorf("h2=%v: close without the token: %v", h2, resp)
		}
		if resp, _, err := do(c, http.MethodGet, f.url+"/api/v1/namespaces/n/configmaps/c", ""); err != nil || resp.StatusCode != 200 {
			t.Errorf("h2=%v: a GET after the drop: %v %v", h2, resp, err)
		}
	}
}
