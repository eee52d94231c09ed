package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

func TestDiagnose(t *testing.T) {
	landing := storage.Where{What: "landing bucket", Location: storage.Location{Bucket: "my-landing"}, Setting: "LANDING_BUCKET (env file)"}
	names := storage.Names{Endpoint: "https://t3.storage.dev", Region: "auto", KeyID: "tid_****",
		SecretKeyVar: "AWS_SECRET_ACCESS_KEY (env file)"}
	api := func(code string) error {
		return fmt.Errorf("list: %w", &smithy.GenericAPIError{Code: code, Message: "m"})
	}
	for _, tc := range []struct {
		name      string
		err       error
		kind      storage.ProblemKind
		reason    string // substring
		fix       string // substring
		permanent bool
	}{
		{"no such bucket", api("NoSuchBucket"), storage.ProblemMissingBucket,
			"landing bucket s3://my-landing: bucket my-landing does not exist", "create bucket my-landing (docs/tigris.md) or fix LANDING_BUCKET (env file)", true},
		{"access denied", api("AccessDenied"), storage.ProblemPermission, "access denied to key tid_****", "s3:PutObject", true},
		{"unknown key", api("InvalidAccessKeyId"), storage.ProblemCredentials, "does not know access key id tid_****", "AWS_ACCESS_KEY_ID", true},
		{"wrong secret", api("SignatureDoesNotMatch"), storage.ProblemCredentials, "the secret key does not match", "AWS_SECRET_ACCESS_KEY (env file)", true},
		{"clock", api("RequestTimeTooSkewed"), storage.ProblemClock, "15 minutes", "timedatectl", true},
		{"region", api("AuthorizationHeaderMalformed"), storage.ProblemRegion, `wrong signing region "auto"`, "AWS_REGION to the region the server expects (Tigris: auto)", true},
		{"region named by the message", fmt.Errorf("list: %w", &smithy.GenericAPIError{Code: "AuthorizationHeaderMalformed",
			Message: "The authorization header is malformed; the region 'auto' is wrong; expecting 'eu-west-1'"}),
			storage.ProblemRegion, `wrong signing region "auto" (AuthorizationHeaderMalformed): the server expects "eu-west-1"`, "AWS_REGION=eu-west-1, the region the server expects", true},
		{"region named by the header", regionAnswer("eu-central-1"), storage.ProblemRegion,
			`wrong signing region "auto" (PermanentRedirect): the server expects "eu-central-1"`, "AWS_REGION=eu-central-1", true},
		{"token", api("ExpiredToken"), storage.ProblemCredentials, "session token", "refresh", true},
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, storage.ProblemEndpoint, "connection refused: nothing listens on t3.storage.dev", "check the port", false},
		{"dns", &net.DNSError{Name: "t3.storag.dev", Err: "no such host", IsNotFound: true}, storage.ProblemEndpoint, "DNS lookup of t3.storag.dev failed", "host name", true},
		{"read-only", &fs.PathError{Op: "open", Path: "/lake/x", Err: syscall.EROFS}, storage.ProblemReadOnly, "read-only file system", "read-write", true},
		{"permission", &fs.PathError{Op: "open", Path: "/lake/x", Err: syscall.EACCES}, storage.ProblemPermission, "permission denied", "chown", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := storage.Diagnose(tc.err, landing, names)
			if p == nil {
				t.Fatalf("Diagnose(%v) = nil", tc.err)
			}
			if p.Kind != tc.kind || !strings.Contains(p.Reason, tc.reason) || !strings.Contains(p.Fix, tc.fix) || p.Permanent != tc.permanent {
				t.Errorf("got %s %q fix %q permanent %v; want %s %q fix %q permanent %v",
					p.Kind, p.Reason, p.Fix, p.Permanent, tc.kind, tc.reason, tc.fix, tc.permanent)
			}
			if !errors.Is(p, tc.err) {
				t.Errorf("the problem does not wrap the original error")
			}
			if storage.IsPermanent(tc.err) != tc.permanent {
				t.Errorf("IsPermanent = %v", !tc.permanent)
			}
		})
	}
	for _, err := range []error{
		api("SlowDown"), api("InternalError"), fmt.Errorf("put: %w", storage.ErrPreconditionFailed),
		fmt.Errorf("get: %w", storage.ErrNotExist), context.Canceled,
	} {
		if p := storage.Diagnose(err, landing, names); p != nil {
			t.Errorf("Diagnose(%v) = %q, want nil (not a setup problem)", err, p.Reason)
		}
		if storage.IsPermanent(err) {
			t.Errorf("IsPermanent(%v) = true", err)
		}
	}
}

// regionAnswer is the SDK's error of an S3 answer PermanentRedirect whose
// x-amz-bucket-region header names the bucket's region.
func regionAnswer(region string) error {
	resp := &http.Response{StatusCode: http.StatusMovedPermanently, Header: http.Header{"X-Amz-Bucket-Region": {region}}}
	return fmt.Errorf("list: %w", &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp},
			Err: &smithy.GenericAPIError{Code: "PermanentRedirect", Message: "The bucket you are attempting to access must be addressed using the specified endpoint."}}})
}

// TestDiagnoseRealServer checks the codes a real S3 server answers, through
// S3Store's error classification: a wrong secret, an unknown key id and a
// missing bucket.
func TestDiagnoseRealServer(t *testing.T) {
	srv := s3test.FromEnv(t)
	bucket := srv.NewBucket(t)
	ctx := context.Background()
	client := func(id, secret string, region ...string) *s3.Client {
		return s3.New(s3.Options{Region: append(region, srv.Region)[0], BaseEndpoint: aws.String(srv.Endpoint), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(id, secret, "")})
	}
	for _, tc := range []struct {
		name   string
		store  *storage.S3Store
		kind   storage.ProblemKind
		reason string
	}{
		{"wrong secret", storage.NewS3Store(client(srv.AccessKey, srv.SecretKey+"x"), bucket, "", storage.S3StoreOptions{}),
			storage.ProblemCredentials, "the secret key does not match"},
		{"unknown key id", storage.NewS3Store(client("nobody", "nothing"), bucket, "", storage.S3StoreOptions{}),
			storage.ProblemCredentials, "does not know access key id"},
		{"missing bucket", storage.NewS3Store(srv.Client(t), bucket+"-missing", "", storage.S3StoreOptions{}),
			storage.ProblemMissingBucket, "does not exist"},
		{"wrong region", storage.NewS3Store(client(srv.AccessKey, srv.SecretKey, "eu-north-9"), bucket, "", storage.S3StoreOptions{}),
			storage.ProblemRegion, fmt.Sprintf(`wrong signing region "eu-north-9" (AuthorizationHeaderMalformed): the server expects %q`, srv.Region)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.store.List(ctx, "", func(storage.ObjectInfo) error { return nil })
			loc, _ := storage.ParseLocation(tc.store.URI(), true)
			p := storage.Diagnose(err, storage.Where{What: "landing bucket", Location: loc}, storage.Names{Endpoint: srv.Endpoint, Region: "eu-north-9"})
			if p == nil || p.Kind != tc.kind || !strings.Contains(p.Reason, tc.reason) {
				t.Fatalf("Diagnose(%v) = %+v, want %s %q", err, p, tc.kind, tc.reason)
			}
		})
	}
}
