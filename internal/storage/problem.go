package storage

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// ProblemKind names what a storage error says is wrong with the setup.
type ProblemKind string

// Problem kinds, in the terms of `timelake env check`.
const (
	ProblemCredentials   ProblemKind = "credentials"    // no credentials, unknown key, wrong secret, expired token
	ProblemClock         ProblemKind = "clock"          // the local clock is too far off (SigV4)
	ProblemEndpoint      ProblemKind = "endpoint"       // DNS, refused connection, TLS, no answer
	ProblemRegion        ProblemKind = "region"         // wrong signing region or bucket region
	ProblemPermission    ProblemKind = "permission"     // access denied (S3 403, file permissions)
	ProblemMissingBucket ProblemKind = "missing-bucket" // the bucket or folder does not exist
	ProblemReadOnly      ProblemKind = "read-only"      // a read-only file system
	ProblemDiskFull      ProblemKind = "disk-full"      // no space left on a local disk
)

// Problem explains a storage error in a cron log's terms: what is wrong
// (Reason, one line naming the store), how to fix it (Fix), and whether
// trying again can help (Permanent: no). It wraps the original error, so
// errors.Is/As keep working (ErrNotExist, smithy.APIError, ...).
type Problem struct {
	Kind      ProblemKind
	Code      string // S3 error code or errno name, when there is one
	Reason    string
	Fix       string
	Permanent bool
	Err       error
}

// Error returns the reason; the fix is in Fix (FixHint).
func (p *Problem) Error() string { return p.Reason }

// Unwrap returns the original error.
func (p *Problem) Unwrap() error { return p.Err }

// FixHint returns the fix, for printers that show it on a line of its own.
func (p *Problem) FixHint() string { return p.Fix }

// Names are the user's names for the settings behind a store, used in the
// fixes so that they point at the variable to change, e.g.
// "AWS_SECRET_ACCESS_KEY (env file timelake.env)". Empty fields fall back to
// the standard variable names.
type Names struct {
	Endpoint        string        // the endpoint URL; "" means AWS S3
	EndpointSetting string        // where the endpoint is set
	Region          string        // the signing region in use
	KeyID           string        // the access key id, masked by the caller (never a secret)
	AccessKeyVar    string        // default AWS_ACCESS_KEY_ID
	SecretKeyVar    string        // default AWS_SECRET_ACCESS_KEY
	Timeout         time.Duration // the per-request time limit, when there is one
}

func (n Names) accessKeyVar() string { return or(n.AccessKeyVar, "AWS_ACCESS_KEY_ID") }
func (n Names) secretKeyVar() string { return or(n.SecretKeyVar, "AWS_SECRET_ACCESS_KEY") }
func (n Names) endpointSetting() string {
	return or(n.EndpointSetting, "the endpoint (AWS_ENDPOINT_URL_S3)")
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Where names the store an error came from: what it is to the user
// ("landing bucket", "lake bucket"), its location, and the setting that
// names it (e.g. "LANDING_BUCKET (env file)").
type Where struct {
	What     string
	Location Location
	Setting  string
}

func (w Where) prefix() string {
	s := w.Location.String()
	if w.What != "" {
		s = w.What + " " + s
	}
	if s == "" {
		return ""
	}
	return s + ": "
}

// Diagnose explains err from the store at w, or returns nil when err is
// not a setup problem it knows (a lost race, a missing object, a 5xx
// answer: those are for the caller to handle). The reasons and fixes are
// the ones `timelake env check` prints for the same causes: S3 error codes
// (S3 API reference, "Error responses"), network errors and local file
// system errors.
func Diagnose(err error, w Where, n Names) *Problem {
	if err == nil {
		return nil
	}
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	if errors.Is(err, ErrNotS3) {
		p = &Problem{Kind: ProblemEndpoint, Permanent: true,
			Reason: fmt.Sprintf("%s answered a listing with 404 Not Found and no S3 error: it does not serve the S3 API at that URL", or(n.Endpoint, "the endpoint")),
			Fix:    fmt.Sprintf("set %s to the S3 service's URL, without a bucket or path (Tigris: https://t3.storage.dev; docs/tigris.md)", n.endpointSetting())}
	} else if p = diagnoseAPI(err, w, n); p == nil {
		p = diagnoseCredentials(err, n)
	}
	if p == nil {
		p = diagnoseLocal(err, w)
	}
	if p == nil && !isAPIError(err) {
		if k, reason, fix, permanent := DescribeNetError(n.Endpoint, err, n.Timeout, n.endpointSetting()); k != "" {
			p = &Problem{Kind: k, Reason: reason, Fix: fix, Permanent: permanent}
		}
	}
	if p == nil {
		return nil
	}
	p.Reason = w.prefix() + p.Reason
	p.Err = err
	return p
}

// Explain returns err wrapped in its *Problem when Diagnose knows it, else
// err unchanged.
func Explain(err error, w Where, n Names) error {
	if p := Diagnose(err, w, n); p != nil {
		return p
	}
	return err
}

// IsPermanent reports whether retrying err within this run cannot help: a
// setup problem (credentials, permissions, a missing bucket, a read-only
// or full disk, a wrong region, an unknown host or an untrusted
// certificate). Throttling, 5xx answers, refused or timed-out connections
// and lost races are not permanent.
func IsPermanent(err error) bool {
	p := Diagnose(err, Where{}, Names{})
	return p != nil && p.Permanent
}

func isAPIError(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae)
}

// MissingBucketFix is the fix for a bucket (or folder) that does not exist.
func MissingBucketFix(loc Location, setting string) string {
	if !loc.IsS3() {
		return "create the folder, or fix " + or(setting, "the setting")
	}
	return fmt.Sprintf("create bucket %s (docs/tigris.md) or fix %s", loc.Bucket, or(setting, "the setting"))
}

// diagnoseAPI maps S3 error codes.
func diagnoseAPI(err error, w Where, n Names) *Problem {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return nil
	}
	code := ae.ErrorCode()
	key := n.KeyID
	if key == "" {
		key = "(" + n.accessKeyVar() + ")"
	}
	bucket := w.Location.Bucket
	p := &Problem{Code: code, Permanent: true}
	switch code {
	case "NoSuchBucket":
		p.Kind = ProblemMissingBucket
		p.Reason = fmt.Sprintf("bucket %s does not exist", bucket)
		if bucket == "" {
			p.Reason = "the bucket does not exist (NoSuchBucket)"
		}
		p.Fix = MissingBucketFix(w.Location, w.Setting)
	case "AccessDenied", "AllAccessDisabled", "Forbidden":
		p.Kind = ProblemPermission
		p.Reason = fmt.Sprintf("access denied to key %s (%s)", key, code)
		p.Fix = "ingest needs s3:ListBucket, s3:GetObject, s3:PutObject and s3:DeleteObject on the landing and lake buckets; grant them to the key (docs/tigris.md)"
	case "InvalidAccessKeyId", "InvalidClientTokenId", "XAdminUserNotFound": // the last is versitygw's
		p.Kind = ProblemCredentials
		p.Reason = fmt.Sprintf("%s does not know access key id %s (%s)", or(n.Endpoint, "the server"), key, code)
		p.Fix = fmt.Sprintf("copy the access key id again into %s; check the endpoint is the provider that issued it (Tigris keys: docs/tigris.md)", n.accessKeyVar())
	case "SignatureDoesNotMatch":
		p.Kind = ProblemCredentials
		p.Reason = fmt.Sprintf("the secret key does not match access key id %s (SignatureDoesNotMatch)", key)
		p.Fix = fmt.Sprintf("copy the secret access key again into %s, without spaces or quotes around it; check AWS_REGION (it is signed too)", n.secretKeyVar())
	case "RequestTimeTooSkewed":
		p.Kind = ProblemClock
		p.Reason = "the server rejected the request time (RequestTimeTooSkewed): the local clock is more than 15 minutes off"
		p.Fix = "synchronise the clock: timedatectl set-ntp true, or install chrony"
	case "AuthorizationHeaderMalformed", "InvalidRegion", "IllegalLocationConstraintException", "PermanentRedirect":
		p.Kind = ProblemRegion
		p.Reason = fmt.Sprintf("wrong signing region %q (%s)", n.Region, code)
		p.Fix = "set AWS_REGION to the region the server expects (Tigris: auto)"
		if want := expectedRegion(err, ae); want != "" {
			p.Reason += fmt.Sprintf(": the server expects %q", want)
			p.Fix = "set AWS_REGION=" + want + ", the region the server expects"
		}
	case "ExpiredToken", "InvalidToken", "TokenRefreshRequired":
		p.Kind = ProblemCredentials
		p.Reason = fmt.Sprintf("the session token of key %s is expired or invalid (%s)", key, code)
		p.Fix = "refresh the temporary credentials, or use long-lived keys for cron"
	default:
		return nil
	}
	return p
}

// expectedRegion is the region an S3 answer to a request signed for the
// wrong one names, "" when it names none: the x-amz-bucket-region header
// (AWS S3 on a bucket's wrong-region and redirect answers, MinIO), else the
// error message's "the region 'X' is wrong; expecting 'Y'" (AWS S3,
// versitygw; the Region element of the error body, which the SDK does not
// keep, says the same).
func expectedRegion(err error, ae smithy.APIError) string {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		if r := re.Response.Header.Get("X-Amz-Bucket-Region"); regionName.MatchString(r) {
			return r
		}
	}
	if m := regionExpected.FindStringSubmatch(ae.ErrorMessage()); m != nil {
		return m[1]
	}
	return ""
}

var (
	regionName     = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)
	regionExpected = regexp.MustCompile(`region ['"][^'"]*['"] is wrong; expecting ['"]([A-Za-z0-9-]{1,64})['"]`)
)

// diagnoseCredentials recognises the SDK's failure to find credentials at
// all (it wraps the provider chain's error in "get identity" and
// "failed to refresh cached credentials" without an exported type).
func diagnoseCredentials(err error, n Names) *Problem {
	msg := err.Error()
	if !strings.Contains(msg, "failed to refresh cached credentials") && !strings.Contains(msg, "get identity:") {
		return nil
	}
	return &Problem{Kind: ProblemCredentials, Permanent: true,
		Reason: "no S3 credentials found",
		Fix: fmt.Sprintf("set %s and %s in the env file, or AWS_PROFILE (docs/configuration.md)",
			n.accessKeyVar(), n.secretKeyVar())}
}

// diagnoseLocal maps errors of local folders.
func diagnoseLocal(err error, w Where) *Problem {
	folder := w.Location.Dir
	switch {
	case errors.Is(err, syscall.EROFS):
		return &Problem{Kind: ProblemReadOnly, Code: "EROFS", Permanent: true,
			Reason: "read-only file system",
			Fix:    "mount the file system read-write, or move " + or(folder, "the folder") + " to a writable disk"}
	case errors.Is(err, syscall.ENOSPC):
		return &Problem{Kind: ProblemDiskFull, Code: "ENOSPC", Permanent: true,
			Reason: "no space left on the disk",
			Fix:    "free space on the disk of " + or(folder, "the folder")}
	case errors.Is(err, fs.ErrPermission):
		return &Problem{Kind: ProblemPermission, Code: "EACCES", Permanent: true,
			Reason: "permission denied",
			Fix:    "let the user that runs timelake read and write " + or(folder, "the folder") + " (chown or chmod)"}
	case !w.Location.IsS3() && folder != "" && errors.Is(err, ErrNotExist) && strings.Contains(err.Error(), "folder "+folder):
		return &Problem{Kind: ProblemMissingBucket, Permanent: true,
			Reason: "folder does not exist",
			Fix:    MissingBucketFix(w.Location, w.Setting)}
	}
	return nil
}

// DescribeNetError explains a failed request to endpoint: the kind
// (ProblemEndpoint, or "" when err is not a network error it knows), a
// reason naming the endpoint, a fix naming setting, and whether retrying
// cannot help (an unknown host, an untrusted certificate, TLS spoken to a
// plain server). timeout is the request time limit, named when the
// request timed out.
func DescribeNetError(endpoint string, err error, timeout time.Duration, setting string) (kind ProblemKind, reason, fix string, permanent bool) {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if setting == "" {
		setting = "the endpoint"
	}
	if endpoint == "" {
		endpoint = "the S3 endpoint"
	}
	host := endpoint
	if u, perr := url.Parse(endpoint); perr == nil && u.Host != "" {
		host = u.Host
	}
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recErr tls.RecordHeaderError
	var netErr net.Error
	switch {
	case errors.As(err, &dnsErr):
		return ProblemEndpoint, fmt.Sprintf("%s: DNS lookup of %s failed: %v", endpoint, dnsErr.Name, dnsErr.Err),
			fmt.Sprintf("check the host name in %s (Tigris: https://t3.storage.dev) and the host's DNS", setting), dnsErr.IsNotFound
	case errors.Is(err, syscall.ECONNREFUSED):
		return ProblemEndpoint, fmt.Sprintf("%s: connection refused: nothing listens on %s", endpoint, host),
			fmt.Sprintf("check the port in %s and that the server runs", setting), false
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr):
		return ProblemEndpoint, fmt.Sprintf("%s: TLS certificate not trusted: %v", endpoint, err),
			"check the host name; behind a TLS-inspecting proxy, add its CA to the system trust store (or SSL_CERT_FILE)", true
	case errors.As(err, &recErr), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return ProblemEndpoint, fmt.Sprintf("%s: the server does not speak TLS on %s", endpoint, host),
			fmt.Sprintf("use http:// in %s for this server, or its TLS port", setting), true
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		within := ""
		if timeout > 0 {
			within = " within " + timeout.String()
		}
		return ProblemEndpoint, fmt.Sprintf("%s: no answer%s", endpoint, within),
			"check the host and port, a firewall or HTTPS_PROXY", false
	}
	return "", "", "", false
}
