package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
)

// S3Config holds what is needed to build an S3 client. Empty fields fall back
// to the standard AWS chain (environment, shared config and credentials
// files, instance roles; with an Endpoint, instance roles only when the
// profile's credential_source asks for them).
type S3Config struct {
	// Endpoint is the service URL of an S3-compatible store, e.g.
	// https://t3.storage.dev for Tigris or http://127.0.0.1:9000; empty means
	// AWS S3.
	Endpoint string
	// Region is the signing region; Tigris uses "auto". Empty: from the AWS
	// chain, else "auto" for Tigris and "us-east-1" for other custom endpoints.
	Region string
	// VirtualHosted selects virtual-hosted-style addressing
	// (bucket.host). The default is path-style for custom endpoints, which every
	// S3-compatible server supports, and virtual-hosted for AWS.
	VirtualHosted bool
	// Static credentials; when AccessKeyID is empty the AWS chain is used.
	AccessKeyID, SecretAccessKey, SessionToken string
	// Profile is a shared-config profile name (AWS_PROFILE).
	Profile string
	// MaxAttempts bounds SDK retries of throttling, 5xx and network errors
	// (4xx are never retried by the standard retryer). 0 means 5.
	MaxAttempts int
	// HTTPClient replaces the SDK's HTTP client (e.g. to count requests in
	// benchmarks); nil keeps the default.
	HTTPClient aws.HTTPClient
	// Logger receives the SDK's own log lines (SDKLogger), at debug level;
	// nil drops them. The SDK never writes to stderr itself.
	Logger *slog.Logger
}

// SDKLogger is the logger NewS3Client gives the AWS SDK in place of its
// default, which writes raw lines to stderr ("SDK 2026/01/02 WARN ...")
// before timelake's own message about the same problem (credentials that
// are empty, a body not closed): each line goes to l at debug level with
// from=aws-sdk and the SDK's level (sdk_level=WARN), so --log-level debug
// shows them in timelake's format. A nil l drops them.
func SDKLogger(l *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		if l == nil {
			return
		}
		l.Debug(fmt.Sprintf(format, v...), "from", "aws-sdk", "sdk_level", string(c))
	})
}

// ErrInvalidEndpoint is returned for an endpoint that is not an http(s) URL.
var ErrInvalidEndpoint = errors.New("invalid S3 endpoint")

// IsTigrisEndpoint reports whether endpoint is one of Tigris's hosts
// (t3.storage.dev, fly.storage.tigris.dev and their subdomains).
func IsTigrisEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return false
	}
	h := strings.ToLower(u.Hostname())
	return h == "storage.dev" || strings.HasSuffix(h, ".storage.dev") ||
		h == "tigris.dev" || strings.HasSuffix(h, ".tigris.dev")
}

// NewS3Client builds the S3 client of cfg. It does no I/O beyond reading
// the shared config files.
func NewS3Client(ctx context.Context, cfg S3Config) (*S3Client, error) {
	c, err := NewSDKClient(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &S3Client{c: c}, nil
}

// NewSDKClient builds the AWS SDK's client NewS3Client wraps, for the test
// helpers that call the SDK themselves (a proxied client with shorter
// retry waits); the program uses NewS3Client.
func NewSDKClient(ctx context.Context, cfg S3Config) (*s3.Client, error) {
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w %q: expected a URL such as https://t3.storage.dev", ErrInvalidEndpoint, cfg.Endpoint)
		}
	}
	attempts := cfg.MaxAttempts
	if attempts <= 0 {
		attempts = 5
	}
	opts := []func(*config.LoadOptions) error{
		config.WithLogger(SDKLogger(cfg.Logger)),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = attempts })
		}),
	}
	if cfg.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cfg.Profile))
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)))
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.Endpoint != "" && cfg.AccessKeyID == "" && !profileUsesInstanceMetadata(ctx, cfg.Profile, cfg.Logger) {
		// An S3-compatible endpoint never takes EC2 instance-role
		// credentials: without keys, the default chain would end in
		// requests to the instance metadata service (a warning and a
		// timeout off EC2) instead of "no credentials found".
		opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}

	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
		if IsTigrisEndpoint(cfg.Endpoint) {
			awsCfg.Region = "auto"
		}
	}
	return s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		o.HTTPClient = NewHTTPClient()
		if cfg.HTTPClient != nil {
			o.HTTPClient = cfg.HTTPClient
		}
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
			o.UsePathStyle = !cfg.VirtualHosted
		}
		// Only send checksums when an operation requires them: several
		// S3-compatible servers reject the newer default trailing checksums.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}), nil
}

// MaxIdleConnsPerHost is the idle connection pool of NewHTTPClient per
// host: at least the requests timelake runs at once against one endpoint
// (ingest: its workers, the commit's manifest writes, the parallel deletes
// and the lease).
const MaxIdleConnsPerHost = 64

// NewHTTPClient returns the HTTP client NewS3Client uses by default: the
// SDK's buildable client with an idle pool of MaxIdleConnsPerHost
// connections per host. The SDK keeps 10 and Go's default transport 2; with
// more requests in flight than that, connections are closed after each
// burst and dialled again.
func NewHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
		t.MaxIdleConns = max(t.MaxIdleConns, 2*MaxIdleConnsPerHost)
		t.ResponseHeaderTimeout = responseHeaderTimeout
	})
}

// responseHeaderTimeout bounds the wait for a response's headers once a
// request is sent whole (a large upload's body does not count): a server
// that accepts connections and never answers (a hung proxy, a stopped
// process behind a load balancer) fails the request as a network error,
// which the retryer tries again and the run then reports with its fix,
// instead of a run that waits forever. Object storage answers in
// milliseconds, a multipart upload's completion in seconds.
var responseHeaderTimeout = 60 * time.Second

// profileUsesInstanceMetadata reports whether the shared-config profile
// (profile, else AWS_PROFILE, else "default"), or a profile it sources its
// credentials from, says credential_source = Ec2InstanceMetadata: the only
// case in which a custom endpoint may use instance-role credentials.
func profileUsesInstanceMetadata(ctx context.Context, profile string, logger *slog.Logger) bool {
	if profile == "" {
		profile = os.Getenv("AWS_PROFILE")
	}
	if profile == "" {
		profile = "default"
	}
	sc, err := config.LoadSharedConfigProfile(ctx, profile, func(o *config.LoadSharedConfigOptions) {
		o.Logger = SDKLogger(logger)
		// The SDK's own environment variables for the files' places.
		if f := os.Getenv("AWS_CONFIG_FILE"); f != "" {
			o.ConfigFiles = []string{f}
		}
		if f := os.Getenv("AWS_SHARED_CREDENTIALS_FILE"); f != "" {
			o.CredentialsFiles = []string{f}
		}
	})
	if err != nil {
		return false
	}
	for p := &sc; p != nil; p = p.Source {
		if p.CredentialSource == "Ec2InstanceMetadata" {
			return true
		}
	}
	return false
}
