package storage_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/timelake/timelake/internal/storage"
)

// The S3 client answers env check's questions and gives the REST catalog
// its SigV4 configuration without the SDK's client leaving storage.
func TestS3ClientCredentialsAndSigV4Config(t *testing.T) {
	ctx := context.Background()
	c, err := storage.NewS3Client(ctx, storage.S3Config{Endpoint: "http://127.0.0.1:1", Region: "eu-central-1",
		AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Region(); r != "eu-central-1" {
		t.Errorf("Region = %q", r)
	}
	cr, err := c.Credentials(ctx)
	if err != nil || cr.AccessKeyID != "AKIDEXAMPLE" {
		t.Errorf("Credentials = %+v, %v", cr, err)
	}
	for region, want := range map[string]string{"": "eu-central-1", "us-west-2": "us-west-2"} {
		cfg, err := storage.SigV4Config(c, region)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Region != want {
			t.Errorf("SigV4Config(%q).Region = %q, want %q", region, cfg.Region, want)
		}
		v, err := cfg.Credentials.Retrieve(ctx)
		if err != nil || v.AccessKeyID != "AKIDEXAMPLE" || v.SecretAccessKey != "secret" {
			t.Errorf("SigV4Config(%q) credentials = %v, %v", region, v.AccessKeyID, err)
		}
	}
	sdk, err := storage.NewSDKClient(ctx, storage.S3Config{Region: "us-east-1", AccessKeyID: "k", SecretAccessKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := storage.SigV4Config(sdk, ""); err != nil || cfg.Region != "us-east-1" {
		t.Errorf("SigV4Config of the SDK's client = %v, %v", cfg.Region, err)
	}
	if _, err := storage.SigV4Config(nil, ""); err == nil {
		t.Error("SigV4Config(nil) succeeded")
	}
	if got := storage.ErrorCode(fmt.Errorf("list: %w", &smithy.GenericAPIError{Code: "AccessDenied"})); got != "AccessDenied" {
		t.Errorf("ErrorCode of an S3 answer = %q", got)
	}
	if got := storage.ErrorCode(errors.New("dial tcp: refused")); got != "" {
		t.Errorf("ErrorCode of a network error = %q", got)
	}
}

// Without an endpoint setting, the client's requests go to the AWS S3
// endpoint of its region.
func TestS3ClientServiceURL(t *testing.T) {
	ctx := context.Background()
	c, err := storage.NewS3Client(ctx, storage.S3Config{Region: "eu-central-1", AccessKeyID: "k", SecretAccessKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := c.ServiceURL(ctx)
	if err != nil || u != "https://s3.eu-central-1.amazonaws.com" {
		t.Errorf("ServiceURL = %q, %v", u, err)
	}
}
