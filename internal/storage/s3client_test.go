package storage_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

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
