// Package s3fault is an S3 fault-injection proxy for tests and benchmarks:
// an HTTP reverse proxy in front of a real S3 server (the suite's
// versitygw), or of an Iceberg REST catalog (the suite's SeaweedFS), that, for requests matching a rule (method, bucket, key
// pattern, query parameter, header), fails them before they are forwarded
// (an S3 error answer such as 503 SlowDown), loses their response after the
// server executed them (the connection is closed, so the client cannot know
// the outcome and its SDK retries), drops them unforwarded, or delays them.
// Every rule counts what it matched and injected.
//
// Requests are forwarded unchanged, Host header included, so SigV4
// signatures made for the proxy's address stay valid. Clients must use
// path-style addressing (http://proxy/bucket/key).
//
// It is written here rather than taken from a library because what it does
// is specific to S3 requests (keys, conditional headers, S3 error bodies)
// and small; the forwarding itself is net/http/httputil's ReverseProxy.
package s3fault

import (
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Action is what a rule does to a matching request.
type Action int

// Actions.
const (
	// Forward passes the request on (after the rule's Delay): a rule that
	// only delays or only counts.
	Forward Action = iota
	// Fail answers with Status and Code without forwarding: the server
	// never sees the request.
	Fail
	// LoseResponse forwards the request, lets the server execute it, and
	// then closes the client's connection instead of answering: the client
	// sees a connection error and cannot know the outcome.
	LoseResponse
	// Drop closes the client's connection without forwarding: the request
	// never ran, but the client cannot know that either.
	Drop
)

func (a Action) String() string {
	switch a {
	case Forward:
		return "forward"
	case Fail:
		return "fail"
	case LoseResponse:
		return "lose-response"
	case Drop:
		return "drop"
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// Rule selects requests and says what to do with them. Empty selectors
// match everything.
type Rule struct {
	// Name identifies the rule in counters and messages.
	Name string
	// Method is the HTTP method (PUT, GET, HEAD, POST, DELETE).
	Method string
	// Bucket is the bucket name (the first path segment).
	Bucket string
	// Key is a pattern for the object key: * matches any run of
	// characters, slashes included; ? one character. "" matches any key,
	// bucket-level requests (listings) included.
	Key string
	// Query is a query parameter the request must carry, e.g. "uploads"
	// (CreateMultipartUpload), "uploadId" (parts, completion),
	// "list-type" (ListObjectsV2).
	Query string
	// Without is a query parameter the request must not carry, e.g.
	// "uploadId" to select a single PutObject and not the parts of a
	// multipart upload.
	Without string
	// Header is a request header that must be present, e.g.
	// "If-None-Match" (conditional create) or "X-Amz-Copy-Source" (copy).
	Header string

	// Action is done to matching requests, after Delay.
	Action Action
	// Status and Code are the answer of Fail, e.g. 503 "SlowDown" or 500
	// "InternalError". For a request to an Iceberg REST catalog (a path
	// below /v1/), Code is the error type of its JSON answer, e.g.
	// "CommitFailedException" (Iceberg REST spec, "ErrorModel").
	Status int
	Code   string
	// Delay is waited before the action.
	Delay time.Duration
	// Then, if set, is called for each injected request before Delay: a
	// test stops the code under test at a chosen request (cancels its
	// context) while the request is held.
	Then func()

	// Skip lets the first Skip matching requests through untouched.
	Skip int
	// Times bounds how many requests are injected (0: no bound).
	Times int
	// Prob injects each matching request with this probability (0: every
	// one), drawn from the proxy's seeded generator.
	Prob float64
}

// Counts are a rule's counters.
type Counts struct {
	Matched  int // requests that matched the selectors
	Injected int // requests the action was done to
}

type rule struct {
	Rule
	key *regexp.Regexp
	Counts
}

// Proxy is a running fault proxy.
type Proxy struct {
	// URL is the endpoint clients use instead of the server's.
	URL string

	target *url.URL
	rp     *httputil.ReverseProxy
	srv    *http.Server
	ln     net.Listener

	mu       sync.Mutex
	rules    []*rule
	rng      *rand.Rand
	requests map[string]int // by method
	injected map[Action]int
}

// Start starts a proxy on a free 127.0.0.1 port in front of the S3 server
// at target (e.g. http://127.0.0.1:7070). seed fixes the generator behind
// Rule.Prob, so a run can be repeated. Close stops it.
func Start(target string, seed uint64) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("s3fault: bad target %q", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("s3fault: listen: %w", err)
	}
	p := &Proxy{
		URL:      "http://" + ln.Addr().String(),
		target:   u,
		ln:       ln,
		rng:      rand.New(rand.NewPCG(seed, seed^0x5eed)),
		requests: map[string]int{},
		injected: map[Action]int{},
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host // signed by the client
		},
		Transport:     tr,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go p.srv.Serve(ln) //nolint:errcheck // ends with Close
	return p, nil
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() error { return p.srv.Close() }

// Add installs a rule and returns it for Counts; rules are tried in the
// order they were added and the first match acts.
func (p *Proxy) Add(r Rule) *Rule {
	rr := &rule{Rule: r}
	if r.Key != "" {
		rr.key = globRegexp(r.Key)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, rr)
	return &rr.Rule
}

// Clear removes every rule (the counters of Requests and Injected stay).
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// Counts returns the counters of the rule named name (summed when several
// rules share it).
func (p *Proxy) Counts(name string) Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	var c Counts
	for _, r := range p.rules {
		if r.Name == name {
			c.Matched += r.Matched
			c.Injected += r.Injected
		}
	}
	return c
}

// Requests returns how many requests the proxy received with method ("" for
// all).
func (p *Proxy) Requests(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if method != "" {
		return p.requests[method]
	}
	n := 0
	for _, v := range p.requests {
		n += v
	}
	return n
}

// Injected returns how many faults of kind a were injected since Start (all
// kinds but Forward when a is Forward).
func (p *Proxy) Injected(a Action) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a != Forward {
		return p.injected[a]
	}
	n := 0
	for k, v := range p.injected {
		if k != Forward {
			n += v
		}
	}
	return n
}

// globRegexp turns a key pattern into an anchored regexp.
func globRegexp(glob string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for _, c := range glob {
		switch c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// bucketKey splits a path-style request path.
func bucketKey(r *http.Request) (bucket, key string) {
	p := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key
}

func (r *rule) matches(req *http.Request, bucket, key string) bool {
	switch {
	case r.Method != "" && !strings.EqualFold(r.Method, req.Method):
		return false
	case r.Bucket != "" && r.Bucket != bucket:
		return false
	case r.key != nil && !r.key.MatchString(key):
		return false
	case r.Query != "" && !req.URL.Query().Has(r.Query):
		return false
	case r.Without != "" && req.URL.Query().Has(r.Without):
		return false
	case r.Header != "" && req.Header.Get(r.Header) == "":
		return false
	}
	return true
}

// decide returns the rule that acts on req, if any, counting it.
func (p *Proxy) decide(req *http.Request) *rule {
	bucket, key := bucketKey(req)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests[req.Method]++
	for _, r := range p.rules {
		if !r.matches(req, bucket, key) {
			continue
		}
		r.Matched++
		if r.Matched <= r.Skip || (r.Times > 0 && r.Injected >= r.Times) ||
			(r.Prob > 0 && p.rng.Float64() >= r.Prob) {
			continue // this rule lets the request through: the next may act
		}
		r.Injected++
		p.injected[r.Action]++
		return r
	}
	return nil
}

// ServeHTTP applies the first matching rule that acts on the request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r := p.decide(req)
	if r == nil {
		p.rp.ServeHTTP(w, req)
		return
	}
	if r.Then != nil {
		r.Then()
	}
	if r.Delay > 0 {
		select {
		case <-time.After(r.Delay):
		case <-req.Context().Done():
			return
		}
	}
	switch r.Action {
	case Fail:
		writeError(w, req, r.Status, r.Code)
	case LoseResponse:
		sw := &swallowed{header: http.Header{}}
		p.rp.ServeHTTP(sw, req) // the server executes the request
		hangUp(w)
	case Drop:
		hangUp(w)
	default:
		p.rp.ServeHTTP(w, req)
	}
}

// writeError answers like S3 does (S3 API reference, "Error responses"),
// or like an Iceberg REST catalog for its routes (below /v1/).
func writeError(w http.ResponseWriter, req *http.Request, status int, code string) {
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if strings.HasPrefix(req.URL.Path, "/v1/") {
		if code == "" {
			code = "InternalServerError"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"injected by s3fault","type":%q,"code":%d}}`, code, status)
		return
	}
	if code == "" {
		code = "InternalError"
	}
	w.Header().Set("Content-Type", "application/xml")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "0")
	}
	w.WriteHeader(status)
	if req.Method == http.MethodHead {
		return
	}
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<Error><Code>%s</Code><Message>injected by s3fault</Message><Resource>%s</Resource><RequestId>s3fault</RequestId></Error>`,
		code, req.URL.Path)
}

// hangUp closes the client's connection without an answer (a reset, so the
// client sees the failure at once).
func hangUp(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("s3fault: the response writer cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

// swallowed is a ResponseWriter that throws the answer away.
type swallowed struct {
	header http.Header
}

func (s *swallowed) Header() http.Header         { return s.header }
func (s *swallowed) Write(b []byte) (int, error) { return len(b), nil }
func (s *swallowed) WriteHeader(int)             {}
func (s *swallowed) Flush()                      {}

var _ http.Flusher = (*swallowed)(nil)

// StartT starts a proxy in front of target for a test and closes it when
// the test ends.
func StartT(t testing.TB, target string, seed uint64) *Proxy {
	t.Helper()
	p, err := Start(target, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
