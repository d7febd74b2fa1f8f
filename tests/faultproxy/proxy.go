package main

// The proxy: every request goes to the real API server through httputil.ReverseProxy, headers
// and bodies as they are, answers streamed (each chunk flushed); a resource request some rule
// picks gets its fault instead (or on top).

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	adminPath = "/faultproxy/v1/faults"
	closePath = "/faultproxy/v1/watches/close"
)

type connKey struct{}  // the client's connection (*tls.Conn), from http.Server.ConnContext
type stateKey struct{} // a faulted request's *reqState, for the ReverseProxy hooks

// reqState follows one faulted request.
type reqState struct {
	fault     string
	cutAfter  int // watch-cut: whole events before the cut; -1: no cut
	conn      net.Conn
	clientCtx context.Context
	cancel    context.CancelFunc // forwarding detached from the client (slow, reset-after)

	mu           sync.Mutex
	upstreamCode int // what the API server answered; 0: nothing (yet)
	logged       bool
	entry        logEntry
}

// watchSet holds a cancel for every watch passing through, so that POST
// /faultproxy/v1/watches/close can drop them all at once, as a restarting API server or a
// load balancer dropping its connections would.
type watchSet struct {
	mu      sync.Mutex
	next    int
	cancels map[int]context.CancelFunc
}

// track gives the watch a context the set can cancel; the returned func forgets it.
func (s *watchSet) track(r *http.Request) (*http.Request, func()) {
	ctx, cancel := context.WithCancel(r.Context())
	s.mu.Lock()
	if s.cancels == nil {
		s.cancels = map[int]context.CancelFunc{}
	}
	id := s.next
	s.next++
	s.cancels[id] = cancel
	s.mu.Unlock()
	return r.WithContext(ctx), func() {
		s.mu.Lock()
		delete(s.cancels, id)
		s.mu.Unlock()
		cancel()
	}
}

// closeAll ends every watch open now (its stream stops mid-way, as a dropped connection's
// does); it answers how many.
func (s *watchSet) closeAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.cancels)
	for id, cancel := range s.cancels {
		cancel()
		delete(s.cancels, id)
	}
	return n
}

type proxy struct {
	rp      *httputil.ReverseProxy
	watches watchSet
	faults  *injector
	token   string
	log     *faultLog
	errlog  *log.Logger
}

func newProxy(upstream *url.URL, upstreamCAs *x509.CertPool, faults *injector, token string, flog *faultLog,
	errlog *log.Logger) *proxy {
	p := &proxy{faults: faults, token: token, log: flog, errlog: errlog}
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: upstreamCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  true, // gzip only when the client asks for it, and then passed on as it is
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	p.rp = &httputil.ReverseProxy{
		// SetURL: scheme, host and Host header of the API server; everything else as the client
		// sent it (Rewrite drops only hop-by-hop and X-Forwarded-* headers, and adds none).
		Rewrite:        func(pr *httputil.ProxyRequest) { pr.SetURL(upstream) },
		Transport:      transport,
		FlushInterval:  -1, // every chunk at once: watches, logs
		ErrorLog:       errlog,
		ModifyResponse: p.modifyResponse,
	}
	return p
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/faultproxy" || strings.HasPrefix(r.URL.Path, "/faultproxy/") {
		p.serveAdmin(w, r)
		return
	}
	info := newRequestInfo(r)
	if info.verb == "watch" {
		var done func()
		r, done = p.watches.track(r)
		defer done()
	}
	var d decision
	if info.resourceRequest { // never discovery, /healthz, /version, /openapi, ...
		d = p.faults.pick(info.verb, info.resource, info.subresource, r.UserAgent())
	}
	if d.fault == "" {
		p.rp.ServeHTTP(w, r)
		if info.verb == "watch" && r.Context().Err() != nil {
			// Dropped (watches/close) or its client gone: the stream must stop mid-way, as a
			// dropped connection's does. The API server, seeing its request cancelled, may end
			// its response cleanly before the copy notices, and ReverseProxy would then end ours
			// cleanly too (HTTP/2: END_STREAM instead of RST_STREAM).
			panic(http.ErrAbortHandler)
		}
		return
	}
	p.serveFault(w, r, info, d)
}

func (p *proxy) serveFault(w http.ResponseWriter, r *http.Request, info requestInfo, d decision) {
	st := &reqState{fault: d.fault, cutAfter: -1}
	st.conn, _ = r.Context().Value(connKey{}).(net.Conn)
	st.entry = logEntry{TS: time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00"), Verb: info.verb,
		APIGroup: info.apiGroup, Resource: info.resource, Subresource: info.subresource, Namespace: info.namespace,
		Name: info.name, URI: r.URL.RequestURI(), UserAgent: r.UserAgent(), Fault: d.fault}
	defer p.logOnce(st) // also after a reset (the handler ends with http.ErrAbortHandler)
	defer func() {
		if st.cancel != nil {
			st.cancel()
		}
	}()
	if d.fault == "slow" || d.fault == "reset-after" || (info.verb == "create" && info.name == "") {
		// The whole body first: it reaches the API server even when the client has given up.
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			p.errlog.Printf("reading the body of %s %s: %v", r.Method, r.URL.Path, err)
			panic(http.ErrAbortHandler)
		}
		r.Body, r.ContentLength = http.NoBody, 0
		if len(body) > 0 {
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			r.Header.Del("Transfer-Encoding")
		}
		if info.name == "" {
			st.entry.Name = objectName(body, r.Header.Get("Content-Type"))
		}
	}
	switch d.fault {
	case "500":
		writeStatus(w, r, http.StatusInternalServerError, "InternalError", "Internal error occurred: faultproxy: injected fault",
			&statusDetails{Causes: []statusCause{{Message: "faultproxy: injected fault"}}}, d.retryAfter)
	case "503":
		writeStatus(w, r, http.StatusServiceUnavailable, "ServiceUnavailable",
			"the server is currently unable to handle the request", nil, d.retryAfter)
	case "429":
		writeStatus(w, r, http.StatusTooManyRequests, "TooManyRequests", "Too many requests, please try again later.",
			&statusDetails{RetryAfterSeconds: d.retryAfter}, d.retryAfter)
	case "reset-before":
		p.reset(st)
	case "reset-after":
		sink := &discardWriter{header: http.Header{}}
		p.rp.ServeHTTP(sink, p.detach(r, st))
		if st.entry.Name == "" {
			st.entry.Name = objectName(sink.body.Bytes(), sink.header.Get("Content-Type"))
		}
		p.reset(st)
	case "slow":
		time.Sleep(d.delay) // applied when the delay is over, whether the client still waits or not
		p.rp.ServeHTTP(w, p.detach(r, st))
	case "watch-cut":
		st.cutAfter = d.cutAfter
		p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), stateKey{}, st)))
	}
}

// detach: the request goes on to the API server if the client gives up before the answer
// starts (as a write that reached a server does), and stops once the client goes after that.
func (p *proxy) detach(r *http.Request, st *reqState) *http.Request {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	st.clientCtx, st.cancel = r.Context(), cancel
	return r.WithContext(context.WithValue(ctx, stateKey{}, st))
}

func (p *proxy) modifyResponse(resp *http.Response) error {
	st, _ := resp.Request.Context().Value(stateKey{}).(*reqState)
	if st == nil {
		return nil
	}
	st.mu.Lock()
	st.upstreamCode = resp.StatusCode
	st.mu.Unlock()
	if st.cancel != nil {
		context.AfterFunc(st.clientCtx, st.cancel)
	}
	if st.cutAfter >= 0 {
		if resp.StatusCode == http.StatusOK {
			resp.Body = &cutBody{src: resp.Body, left: st.cutAfter, protobuf: isProtobuf(resp.Header.Get("Content-Type")),
				reset: func() { time.Sleep(50 * time.Millisecond); resetConn(st.conn) }}
		}
		p.logOnce(st) // a watch is logged when it starts, as the audit log does
	}
	return nil
}

// reset drops the client's connection with a TCP RST (SO_LINGER 0), whatever it carries: with
// HTTP/2 every stream on it goes, as with a real reset.
func (p *proxy) reset(st *reqState) {
	resetConn(st.conn)
	panic(http.ErrAbortHandler)
}

func resetConn(c net.Conn) {
	if c == nil {
		return
	}
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn() // no TLS close_notify: the peer sees the reset
	}
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = c.Close()
}

func isProtobuf(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "application/vnd.kubernetes.protobuf"
}

var errWatchCut = errors.New("faultproxy: watch cut")

// cutBody passes a watch stream's first `left` events whole, then the first half of the next
// one, then resets the connection. Events are JSON lines, or length-prefixed protobuf frames.
type cutBody struct {
	src      io.ReadCloser
	left     int
	protobuf bool
	reset    func()
	pending  []byte // read, not returned yet
	ready    int    // how much of pending may be returned
	cut      bool   // the half event is in pending: once it is out, reset
	srcErr   error
	buf      []byte
}

func (b *cutBody) eventEnd() int {
	if b.protobuf {
		if len(b.pending) >= 4 {
			if n := 4 + int(binary.BigEndian.Uint32(b.pending)); len(b.pending) >= n {
				return n
			}
		}
		return 0
	}
	return bytes.IndexByte(b.pending, '\n') + 1
}

func (b *cutBody) Read(p []byte) (int, error) {
	for {
		if b.ready > 0 {
			n := copy(p, b.pending[:b.ready])
			b.pending, b.ready = b.pending[n:], b.ready-n
			return n, nil
		}
		if b.cut {
			b.reset()
			return 0, errWatchCut
		}
		if end := b.eventEnd(); end > 0 {
			if b.left > 0 || end < 2 {
				b.left--
				b.ready = end
			} else {
				b.pending, b.ready, b.cut = b.pending[:end/2], end/2, true
			}
			continue
		}
		if b.srcErr != nil {
			if len(b.pending) > 0 {
				b.ready = len(b.pending)
				continue
			}
			return 0, b.srcErr
		}
		if b.buf == nil {
			b.buf = make([]byte, 32<<10)
		}
		n, err := b.src.Read(b.buf)
		b.pending = append(b.pending, b.buf[:n]...)
		b.srcErr = err
	}
}

func (b *cutBody) Close() error { return b.src.Close() }

// discardWriter takes the answer of a reset-after request (the client never gets it).
type discardWriter struct {
	header http.Header
	body   bytes.Buffer
}

func (d *discardWriter) Header() http.Header { return d.header }
func (d *discardWriter) WriteHeader(int)     {}
func (d *discardWriter) Flush()              {}
func (d *discardWriter) Write(b []byte) (int, error) {
	if d.body.Len() < 1<<20 {
		d.body.Write(b)
	}
	return len(b), nil
}

// objectName: metadata.name of a JSON object (a create's body, or what the server answered).
func objectName(body []byte, contentType string) string {
	if mt, _, _ := mime.ParseMediaType(contentType); mt != "application/json" {
		return ""
	}
	var o struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(body, &o)
	return o.Metadata.Name
}

// The API server's Status (k8s.io/apimachinery metav1.Status), field order and all.
type statusCause struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

type statusDetails struct {
	Causes            []statusCause `json:"causes,omitempty"`
	RetryAfterSeconds int           `json:"retryAfterSeconds,omitempty"`
}

type status struct {
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Metadata   struct{}       `json:"metadata"`
	Status     string         `json:"status"`
	Message    string         `json:"message,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Details    *statusDetails `json:"details,omitempty"`
	Code       int            `json:"code"`
}

func writeStatus(w http.ResponseWriter, r *http.Request, code int, reason, message string, details *statusDetails,
	retryAfter int) {
	if retryAfter >= 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	writeJSON(w, r, code, status{Kind: "Status", APIVersion: "v1", Status: "Failure", Message: message, Reason: reason,
		Details: details, Code: code})
}

// writeJSON answers as the API server does: compact JSON and a newline, indented for curl, Wget
// and browsers or with ?pretty=true (its isPrettyPrint).
func writeJSON(w http.ResponseWriter, r *http.Request, code int, v any) {
	body, _ := json.Marshal(v)
	if prettyPrint(r) {
		body, _ = json.MarshalIndent(v, "", "  ")
	}
	w.Header().Set("Cache-Control", "no-cache, private")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}

func prettyPrint(r *http.Request) bool {
	if pp := r.URL.Query().Get("pretty"); pp != "" {
		b, _ := strconv.ParseBool(pp)
		return b
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/5.0")
}

// The admin endpoint, on a path the API server never serves, for the holder of the token in
// --cert-dir/admin-token: GET the rules and counts, PUT/POST new rules (reseeds), DELETE them.
func (p *proxy) serveAdmin(w http.ResponseWriter, r *http.Request) {
	auth := []byte(r.Header.Get("Authorization"))
	if subtle.ConstantTimeCompare(auth, []byte("Bearer "+p.token)) != 1 {
		writeStatus(w, r, http.StatusUnauthorized, "Unauthorized", "Unauthorized", nil, -1)
		return
	}
	if r.URL.Path == closePath && r.Method == http.MethodPost {
		writeJSON(w, r, http.StatusOK, map[string]int{"closed": p.watches.closeAll()})
		return
	}
	if r.URL.Path != adminPath {
		writeStatus(w, r, http.StatusNotFound, "NotFound", "the server could not find the requested resource", nil, -1)
		return
	}
	switch r.Method {
	case http.MethodGet:
	case http.MethodDelete:
		p.faults.clear()
	case http.MethodPut, http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			err = p.faults.configure(body)
		}
		if err != nil {
			writeStatus(w, r, http.StatusBadRequest, "BadRequest", err.Error(), nil, -1)
			return
		}
	default:
		writeStatus(w, r, http.StatusMethodNotAllowed, "MethodNotAllowed",
			"the server does not allow this method on the requested resource", nil, -1)
		return
	}
	writeJSON(w, r, http.StatusOK, p.faults.describe())
}

// The log of faulted requests (--log): one JSON line each, written once the client's outcome is
// decided (a watch-cut watch when its stream starts).
type logEntry struct {
	TS           string `json:"ts"`
	Verb         string `json:"verb"`
	APIGroup     string `json:"apiGroup"`
	Resource     string `json:"resource"`
	Subresource  string `json:"subresource"`
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	URI          string `json:"uri"`
	UserAgent    string `json:"userAgent"`
	Fault        string `json:"fault"`
	Code         int    `json:"code"`                   // what the client got; 0: the connection reset, no answer
	UpstreamCode int    `json:"upstreamCode,omitempty"` // what the API server answered; absent: not forwarded
}

type faultLog struct {
	mu sync.Mutex
	w  io.Writer // nil: no log
}

func (l *faultLog) write(e *logEntry) {
	if l == nil || l.w == nil {
		return
	}
	line, _ := json.Marshal(e)
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(append(line, '\n'))
}

func (p *proxy) logOnce(st *reqState) {
	st.mu.Lock()
	if st.logged {
		st.mu.Unlock()
		return
	}
	st.logged = true
	e := st.entry
	e.UpstreamCode = st.upstreamCode
	st.mu.Unlock()
	switch st.fault {
	case "500":
		e.Code = 500
	case "503":
		e.Code = 503
	case "429":
		e.Code = 429
	case "slow", "watch-cut":
		e.Code = e.UpstreamCode
	}
	p.log.write(&e)
}
