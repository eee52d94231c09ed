// Package s3test gives tests access to the real S3-compatible test server started by
// scripts/s3-server.sh (or scripts/test.sh), described by the TIMELAKE_TEST_S3_*
// environment variables. It is only meant to be imported from _test.go files.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Environment variables read by FromEnv.
const (
	EnvEndpoint  = "TIMELAKE_TEST_S3_ENDPOINT"
	EnvAccessKey = "TIMELAKE_TEST_S3_ACCESS_KEY"
	EnvSecretKey = "TIMELAKE_TEST_S3_SECRET_KEY"
	EnvRegion    = "TIMELAKE_TEST_S3_REGION"
	// EnvRequired set to "1" turns a missing server into a test failure instead of a skip.
	EnvRequired = "TIMELAKE_TEST_S3_REQUIRED"
)

// Server describes the test S3 server from the TIMELAKE_TEST_S3_* environment.
type Server struct{ Endpoint, AccessKey, SecretKey, Region string }

// FromEnv returns the server, or skips the test when TIMELAKE_TEST_S3_ENDPOINT is unset,
// and fails it instead when TIMELAKE_TEST_S3_REQUIRED=1 (so CI can never silently skip).
func FromEnv(t testing.TB) Server {
	t.Helper()
	s := Server{
		Endpoint:  os.Getenv(EnvEndpoint),
		AccessKey: os.Getenv(EnvAccessKey),
		SecretKey: os.Getenv(EnvSecretKey),
		Region:    os.Getenv(EnvRegion),
	}
	if s.Endpoint == "" {
		if os.Getenv(EnvRequired) == "1" {
			t.Fatalf("%s=1 but %s is unset: start the server with scripts/s3-server.sh or run ./scripts/test.sh", EnvRequired, EnvEndpoint)
		}
		t.Skipf("%s unset: no test S3 server (run ./scripts/test.sh)", EnvEndpoint)
	}
	if s.AccessKey == "" || s.SecretKey == "" {
		t.Fatalf("%s is set but %s or %s is empty", EnvEndpoint, EnvAccessKey, EnvSecretKey)
	}
	if s.Region == "" {
		s.Region = "us-east-1"
	}
	return s
}

// Client returns an aws-sdk-go-v2 *s3.Client for the server (static credentials, path-style, region).
func (s Server) Client(t testing.TB) *s3.Client {
	t.Helper()
	if s.Endpoint == "" {
		t.Fatal("s3test: Server has no Endpoint; use FromEnv")
	}
	// s3.New with explicit options (not config.LoadDefaultConfig) so that the
	// developer's AWS_* variables and ~/.aws files cannot leak into tests.
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// NewBucket creates a uniquely named DNS-valid bucket (prefix "tl-" + lowercased test name
// sanitised + random suffix, <= 63 chars) and registers t.Cleanup that empties
// (paginated list + delete) and deletes it.
func (s Server) NewBucket(t testing.TB) string {
	t.Helper()
	client := s.Client(t)
	name := UniqueBucketName(t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("s3test: create bucket %q at %s: %v", name, s.Endpoint, err)
	}
	t.Cleanup(func() {
		// Not t.Context(): it is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := emptyAndDeleteBucket(ctx, client, name); err != nil {
			t.Errorf("s3test: cleanup of bucket %q: %v", name, err)
		}
	})
	return name
}

// UniqueBucketName builds "tl-<sanitised test name>-<8 hex>", at most 63 characters, using
// only [a-z0-9-] and starting and ending with a letter or digit: a valid name of an S3
// bucket and of a table bucket.
func UniqueBucketName(testName string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(testName) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	const prefix, suffixLen = "tl-", 1 + 8 // "-" + 8 hex digits
	mid := strings.Trim(b.String(), "-")
	if maxMid := 63 - len(prefix) - suffixLen; len(mid) > maxMid {
		mid = strings.TrimRight(mid[:maxMid], "-")
	}
	if mid == "" {
		mid = "test"
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:]) // crypto/rand.Read never fails
	return prefix + mid + "-" + hex.EncodeToString(rnd[:])
}

func emptyAndDeleteBucket(ctx context.Context, client *s3.Client, bucket string) error {
	var errs []error

	// Unfinished multipart uploads keep a bucket non-empty on some servers.
	uploads, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err == nil {
		for _, u := range uploads.Uploads {
			_, err := client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(bucket), Key: u.Key, UploadId: u.UploadId,
			})
			if err != nil {
				errs = append(errs, err)
			}
		}
	}

	// Deleting while paginating can shift pages on some servers, so list all keys first.
	var keys []string
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	for _, key := range keys {
		if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			errs = append(errs, err)
		}
	}

	if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		var nf *types.NoSuchBucket
		if !errors.As(err, &nf) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
