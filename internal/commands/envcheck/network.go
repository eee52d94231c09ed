package envcheck

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/timelake/timelake/internal/config"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
)

// network runs the connect, clock and auth checks.
func (c *Checker) network(ctx context.Context) {
	if c.s3Blocked != "" {
		for _, n := range []string{CheckConnect, CheckClock, CheckAuth} {
			c.Skip(n, c.s3Blocked)
		}
		return
	}
	c.connect(ctx)
	c.clock()
	c.auth(ctx)
}

// serviceURL is the endpoint, or the AWS S3 regional endpoint of the
// client's region.
func (c *Checker) resolveServiceURL(ctx context.Context) (string, error) {
	if e := c.opts.Settings.S3.Endpoint; e != "" {
		return e, nil
	}
	return c.client.ServiceURL(ctx)
}

func (c *Checker) httpClient() *http.Client {
	if c.opts.HTTPClient != nil {
		return c.opts.HTTPClient
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// connect sends one unauthenticated GET to the endpoint: any HTTP answer
// (S3 answers 403 without credentials) proves DNS, TCP and TLS work.
func (c *Checker) connect(ctx context.Context) {
	u, err := c.resolveServiceURL(ctx)
	if err != nil {
		c.Fail(CheckConnect, err.Error(), "set AWS_REGION, or the endpoint with AWS_ENDPOINT_URL_S3")
		c.blockS3("endpoint unknown")
		return
	}
	c.serviceURL = u
	ctx, cancel := c.WithTimeout(ctx)
	defer cancel()

	var mu sync.Mutex
	var remote string
	var tlsVersion uint16
	trace := &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) {
			mu.Lock()
			defer mu.Unlock()
			if i.Conn != nil {
				remote = i.Conn.RemoteAddr().String()
			}
		},
		TLSHandshakeDone: func(s tls.ConnectionState, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				tlsVersion = s.Version
			}
		},
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, u, nil)
	if err != nil {
		c.Fail(CheckConnect, fmt.Sprintf("%s: %v", u, err), "check the endpoint URL")
		c.blockS3("endpoint invalid")
		return
	}
	client := c.httpClient()
	start := c.now()
	resp, err := client.Do(req)
	end := c.now()
	if err != nil {
		detail, fix := describeNetError(u, err, c.opts.Timeout, c.opts.Settings.Endpoint)
		c.Fail(CheckConnect, detail, fix)
		c.blockS3("endpoint not reachable")
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	c.connected = true
	if d := resp.Header.Get("Date"); d != "" {
		if t, err := http.ParseTime(d); err == nil {
			c.serverDate = t
			c.localAtResponse = start.Add(end.Sub(start) / 2)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	via := ""
	if remote != "" {
		via = " via " + remote
	}
	tlsDesc := "plain HTTP"
	if tlsVersion != 0 {
		tlsDesc = tls.VersionName(tlsVersion)
	}
	c.OK(CheckConnect, fmt.Sprintf("%s reached in %s%s (%s; an unsigned GET got HTTP %d; timeout %s)",
		u, end.Sub(start).Round(time.Millisecond), via, tlsDesc, resp.StatusCode, c.opts.Timeout))
}

// describeNetError turns a failed request into a detail naming the endpoint
// and a fix: storage.DescribeNetError's, the explanation ingest prints for
// the same failure, with the --timeout flag named where it matters.
func describeNetError(endpoint string, err error, timeout time.Duration, setting config.Setting) (detail, fix string) {
	where := "the endpoint"
	if setting.Value != "" {
		where = setting.Describe()
	}
	kind, reason, fix, _ := storage.DescribeNetError(endpoint, err, timeout, where)
	if kind == "" {
		return fmt.Sprintf("%s: %v", endpoint, err), fmt.Sprintf("check %s and the network", where)
	}
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout() {
		reason += " (--timeout)"
		fix += "; raise --timeout on a slow link"
	}
	return reason, fix
}

// clock compares the local clock with the server's Date header (1-second
// resolution, RFC 9110), taken at the middle of the request.
func (c *Checker) clock() {
	if !c.connected {
		c.Skip(CheckClock, "endpoint not reachable")
		return
	}
	if c.serverDate.IsZero() {
		c.Warn(CheckClock, "the server sent no Date header: skew not measured",
			"keep the clock synchronised (timedatectl set-ntp true)")
		return
	}
	// Date is truncated to the second: the server's clock was in
	// [Date, Date+1s), so take the middle.
	skew := c.serverDate.Add(500 * time.Millisecond).Sub(c.localAtResponse)
	abs := skew
	if abs < 0 {
		abs = -abs
	}
	if abs <= time.Second {
		c.OK(CheckClock, "local clock within 1s of the server's")
		return
	}
	dir := "behind"
	if skew < 0 {
		dir = "ahead of"
	}
	detail := fmt.Sprintf("local clock is %s %s the server's", abs.Round(time.Second), dir)
	const fix = "synchronise the clock: timedatectl set-ntp true, or install chrony"
	switch {
	case abs > SkewFail:
		c.Fail(CheckClock, detail+": S3 rejects requests signed more than 15 minutes off (SigV4, RequestTimeTooSkewed)", fix)
	case abs > SkewWarn:
		c.Warn(CheckClock, detail+": S3 (SigV4) rejects requests beyond 15 minutes", fix)
	default:
		c.OK(CheckClock, detail)
	}
}

// auth proves the credentials with one cheap signed call, ListBuckets with
// MaxBuckets=1. AccessDenied still proves them: the server checked the
// signature before the permission (ingest does not need ListBuckets).
func (c *Checker) auth(ctx context.Context) {
	if !c.connected {
		c.Skip(CheckAuth, "endpoint not reachable")
		return
	}
	cr := c.opts.Settings.Credentials
	cctx, cancel := c.WithTimeout(ctx)
	defer cancel()
	creds, err := c.client.Credentials(cctx)
	if errors.Is(err, storage.ErrNoCredentialsProvider) {
		c.Fail(CheckAuth, "no credentials provider", "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
		c.blockS3("no credentials")
		return
	}
	if err != nil {
		c.Fail(CheckAuth, fmt.Sprintf("no credentials found (%s): %v", cr.Kind, err),
			fmt.Sprintf("set %s and %s in the env file, or %s (docs/configuration.md)", AccessKeyEnv, SecretKeyEnv, ProfileEnv))
		c.blockS3("no credentials")
		return
	}
	key := settings.MaskKeyID(creds.AccessKeyID)
	source := ""
	if cr.Kind != CredStatic && creds.Source != "" {
		source = "; credentials from " + creds.Source
	}
	err = c.client.ProbeAuth(cctx)
	if err == nil {
		c.OK(CheckAuth, fmt.Sprintf("key %s accepted by %s (ListBuckets%s)", key, c.serviceURL, source))
		return
	}
	code := storage.ErrorCode(err)
	idVar, secretVar := AccessKeyEnv, SecretKeyEnv
	if cr.Kind == CredStatic {
		idVar, secretVar = describeVar(cr.From, AccessKeyEnv), describeVar(cr.From, SecretKeyEnv)
	}
	if code == "AccessDenied" || code == "AllAccessDisabled" {
		user := "ingest"
		if c.opts.Lake == nil {
			user = "upload"
		}
		c.OK(CheckAuth, fmt.Sprintf("key %s accepted by %s (it may not list buckets, which %s does not need%s)", key, c.serviceURL, user, source))
		return
	}
	// The same explanation ingest prints for the same answer.
	endpointSetting := ""
	if st := c.opts.Settings.Endpoint; st.Value != "" {
		endpointSetting = st.Describe()
	}
	p := storage.Diagnose(err, storage.Where{}, storage.Names{Endpoint: c.serviceURL, Region: c.client.Region(),
		KeyID: key, AccessKeyVar: idVar, SecretKeyVar: secretVar, Timeout: c.opts.Timeout, EndpointSetting: endpointSetting})
	switch {
	case p != nil && code != "":
		c.Fail(CheckAuth, p.Reason, p.Fix)
	case code == "":
		detail, fix := describeNetError(c.serviceURL, err, c.opts.Timeout, c.opts.Settings.Endpoint)
		c.Fail(CheckAuth, "ListBuckets: "+detail, fix)
	default:
		c.Fail(CheckAuth, fmt.Sprintf("ListBuckets with key %s: %v", key, err), "check the credentials and the endpoint")
	}
	if errors.Is(err, storage.ErrNotS3) {
		c.blockS3("the endpoint does not answer as S3")
		return
	}
	c.blockS3("credentials rejected")
}

// describeVar picks "KEY (source)" for key out of a Credentials.From list.
func describeVar(fromList, key string) string {
	for _, part := range strings.Split(fromList, ", ") {
		if strings.HasPrefix(part, key+" ") {
			return part
		}
	}
	return key
}
