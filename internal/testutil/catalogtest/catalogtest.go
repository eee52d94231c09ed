// Package catalogtest gives tests access to the real Iceberg REST catalog started by
// scripts/catalog-server.sh (or scripts/test.sh): SeaweedFS's `weed mini`, whose S3
// server holds the tables' files, described by the TIMELAKE_TEST_CATALOG_* environment
// variables. It is only meant to be imported from _test.go files.
package catalogtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/testutil/s3test"
)

// Environment variables read by FromEnv.
const (
	EnvURI        = "TIMELAKE_TEST_CATALOG_URI"
	EnvWarehouse  = "TIMELAKE_TEST_CATALOG_WAREHOUSE"
	EnvS3Endpoint = "TIMELAKE_TEST_CATALOG_S3_ENDPOINT"
	EnvAccessKey  = "TIMELAKE_TEST_CATALOG_ACCESS_KEY"
	EnvSecretKey  = "TIMELAKE_TEST_CATALOG_SECRET_KEY"
	EnvRegion     = "TIMELAKE_TEST_CATALOG_REGION"
	// EnvRequired set to "1" turns a missing server into a test failure instead of a skip.
	EnvRequired = "TIMELAKE_TEST_CATALOG_REQUIRED"
)

// Server describes the test catalog: its REST URI, the warehouse (table bucket)
// scripts/catalog-server.sh created, and the S3 endpoint and keys of its storage. The
// keys are also the catalog's OAuth2 client credentials (Credential) and SigV4 keys.
type Server struct {
	URI, Warehouse                           string
	S3Endpoint, AccessKey, SecretKey, Region string
}

// FromEnv returns the server, or skips the test when TIMELAKE_TEST_CATALOG_URI is unset,
// and fails it instead when TIMELAKE_TEST_CATALOG_REQUIRED=1 (so CI can never silently
// skip).
func FromEnv(t testing.TB) Server {
	t.Helper()
	s := Server{
		URI: os.Getenv(EnvURI), Warehouse: os.Getenv(EnvWarehouse),
		S3Endpoint: os.Getenv(EnvS3Endpoint), AccessKey: os.Getenv(EnvAccessKey),
		SecretKey: os.Getenv(EnvSecretKey), Region: os.Getenv(EnvRegion),
	}
	if s.URI == "" {
		if os.Getenv(EnvRequired) == "1" {
			t.Fatalf("%s=1 but %s is unset: start the catalog with scripts/catalog-server.sh or run ./scripts/test.sh", EnvRequired, EnvURI)
		}
		t.Skipf("%s unset: no test REST catalog (run ./scripts/test.sh)", EnvURI)
	}
	if s.Warehouse == "" || s.S3Endpoint == "" || s.AccessKey == "" || s.SecretKey == "" {
		t.Fatalf("%s is set but %s, %s, %s or %s is empty", EnvURI, EnvWarehouse, EnvS3Endpoint, EnvAccessKey, EnvSecretKey)
	}
	if s.Region == "" {
		s.Region = "us-east-1"
	}
	return s
}

// Credential is the OAuth2 client credentials of the server's identity,
// client_id:client_secret.
func (s Server) Credential() string { return s.AccessKey + ":" + s.SecretKey }

// S3Client returns an *s3.Client for the catalog's S3 server (static credentials,
// path-style), at endpoint when given (a fault proxy), else at the server's.
func (s Server) S3Client(endpoint ...string) *s3.Client {
	ep := s.S3Endpoint
	if len(endpoint) > 0 && endpoint[0] != "" {
		ep = endpoint[0]
	}
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(ep),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		// Only send checksums when an operation requires them, as timelake's client.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// NewWarehouse creates a table bucket of its own for the test (a catalog of its own:
// its tables' names cannot meet another test's) through the S3 Tables API
// (CreateTableBucket, SigV4 service s3tables) and returns its URI, s3://<bucket>. The
// bucket is left to the server's folder, which the test script removes.
func (s Server) NewWarehouse(t testing.TB) string {
	t.Helper()
	name := s3test.UniqueBucketName(t.Name())
	body := []byte(fmt.Sprintf(`{"name":%q}`, name))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(s.S3Endpoint, "/")+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", "S3Tables.CreateTableBucket")
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	creds := aws.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hash, "s3tables", s.Region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("catalogtest: create table bucket %s: %v", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("catalogtest: create table bucket %s: %s: %s", name, resp.Status, b)
	}
	return "s3://" + name
}
