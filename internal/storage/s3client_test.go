package storage_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/smithy-go/logging"

	"github.com/timelake/timelake/internal/storage"
)

// TestNoInstanceMetadataWithAnEndpoint: with a custom endpoint and no keys,
// the client never asks the EC2 instance metadata service for credentials
// (the error is "no S3 credentials found"), unless the AWS profile's
// credential_source says Ec2InstanceMetadata.
func TestNoInstanceMetadataWithAnEndpoint(t *testing.T) {
	var imdsHits atomic.Int32
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		imdsHits.Add(1)
		http.Error(w, "no role", http.StatusNotFound)
	}))
	defer imds.Close()
	s3srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unexpected", http.StatusTeapot)
	}))
	defer s3srv.Close()

	home := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_EC2_METADATA_DISABLED", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("HOME", home)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)

	list := func() error {
		c, err := storage.NewS3Client(context.Background(), storage.S3Config{Endpoint: s3srv.URL, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		return storage.NewS3Store(c, "bucket", "", storage.S3StoreOptions{}).List(context.Background(), "", func(storage.ObjectInfo) error { return nil })
	}

	err := list()
	p := storage.Diagnose(err, storage.Where{}, storage.Names{})
	if p == nil || p.Kind != storage.ProblemCredentials {
		t.Fatalf("error %v: diagnosed as %+v, want no credentials", err, p)
	}
	if n := imdsHits.Load(); n != 0 {
		t.Fatalf("the instance metadata service was asked %d times", n)
	}

	if err := os.WriteFile(filepath.Join(home, "config"), []byte("[profile ec2]\nrole_arn = arn:aws:iam::123456789012:role/r\ncredential_source = Ec2InstanceMetadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_PROFILE", "ec2")
	_ = list() // fails: the fake metadata service has no role
	if imdsHits.Load() == 0 {
		t.Fatal("a profile with credential_source = Ec2InstanceMetadata did not reach the instance metadata service")
	}
}

// TestNoRawSDKLines: with static keys whose secret is empty (a misspelled
// AWS_SECRET_ACCESS_KEY), the client's requests fail with the SDK's
// error, and the SDK writes nothing to stderr itself: its lines go to
// timelake's logger at debug level (storage.SDKLogger).
func TestNoRawSDKLines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unexpected", http.StatusForbidden)
	}))
	defer srv.Close()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))

	stderr, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = stderr
	defer func() { os.Stderr = saved }()

	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	c, err := storage.NewS3Client(ctx, storage.S3Config{Endpoint: srv.URL, Region: "auto", AccessKeyID: "abcd", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	st := storage.NewS3Store(c, "landing", "", storage.S3StoreOptions{})
	if _, err := st.Stat(ctx, "a.csv"); err == nil || !strings.Contains(err.Error(), "static credentials are empty") {
		t.Errorf("stat with an empty secret: %v", err)
	}
	if err := st.List(ctx, "", func(storage.ObjectInfo) error { return nil }); err == nil {
		t.Error("list with an empty secret: no error")
	}
	os.Stderr = saved
	raw, err := os.ReadFile(stderr.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 0 {
		t.Errorf("the SDK wrote to stderr itself:\n%s", raw)
	}

	storage.SDKLogger(logger).Logf(logging.Warn, "static credentials are %s", "empty")
	if want := `level=DEBUG msg="static credentials are empty" from=aws-sdk sdk_level=WARN`; !strings.Contains(logged.String(), want) {
		t.Errorf("SDK line logged as %q, want %q", logged.String(), want)
	}
	storage.SDKLogger(nil).Logf(logging.Warn, "dropped") // no logger: nothing, no panic
}
