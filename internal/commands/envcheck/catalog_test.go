package envcheck_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/commands/envcheck"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/testutil/catalogtest"
)

// catalogEnv returns the settings of a poller whose tables are in the test
// REST catalog (a table bucket of the test's own) with a local landing
// folder.
func catalogEnv(t *testing.T) (map[string]string, catalogtest.Server, string) {
	t.Helper()
	srv := catalogtest.FromEnv(t)
	wh := srv.NewWarehouse(t)
	return map[string]string{
		"AWS_ENDPOINT_URL_S3":         srv.S3Endpoint,
		"AWS_REGION":                  srv.Region,
		"AWS_ACCESS_KEY_ID":           srv.AccessKey,
		"AWS_SECRET_ACCESS_KEY":       srv.SecretKey,
		"LANDING_BUCKET":              t.TempDir(),
		"TIMELAKE_WAREHOUSE":          wh,
		"TIMELAKE_TABLE":              "iot.readings",
		"TIMELAKE_CATALOG":            "rest",
		"TIMELAKE_CATALOG_URI":        srv.URI,
		"TIMELAKE_CATALOG_CREDENTIAL": srv.Credential(),
	}, srv, wh
}

// TestCheckCatalogAllOK: with the REST catalog's settings right, every
// catalog row passes (the scratch table is created, committed, refused a
// stale commit, and dropped again), before and after the table exists.
func TestCheckCatalogAllOK(t *testing.T) {
	env, srv, wh := catalogEnv(t)
	r := checkJSON(t, env)
	r.noFailures(t, localOnlySkips[3:]...) // connect, clock, auth of the landing folder's S3 checks run: the warehouse is S3
	r.expect(t, envcheck.CheckCatalog, envcheck.OK, "REST catalog "+srv.URI, "OAuth2 client credentials from TIMELAKE_CATALOG_CREDENTIAL")
	r.expect(t, envcheck.CheckCatalogConfig, envcheck.OK, "/v1/config answered")
	r.expect(t, envcheck.CheckCatalogAuth, envcheck.OK, "accepted", "0 namespaces")
	r.expect(t, envcheck.CheckCatalogNS, envcheck.OK, "does not exist yet")
	r.expect(t, envcheck.CheckCatalogCommit, envcheck.OK, "committed", "stale commit refused (409)", "dropped")
	r.expect(t, envcheck.CheckLakeCommit, envcheck.OK, "catalog-commit")
	r.expect(t, envcheck.CheckTable, envcheck.OK, "does not exist yet in the REST catalog")

	// The scratch table and its namespace are gone; nothing is left in the
	// table bucket but the probe-free warehouse.
	l, err := lake.Open(context.Background(), wh, lake.Options{S3: srv.S3Client(),
		Catalog: &lake.RESTCatalog{URI: srv.URI, Credential: srv.Credential()}})
	if err != nil {
		t.Fatal(err)
	}
	if names, err := l.ListTables(context.Background()); err != nil || len(names) != 0 {
		t.Errorf("tables left: %v, %v", names, err)
	}
	out, err := srv.S3Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(strings.TrimPrefix(wh, "s3://"))})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		if strings.Contains(aws.ToString(o.Key), "probe") {
			t.Errorf("probe left behind: %s", aws.ToString(o.Key))
		}
	}

	createTable(t, l, 3, nil)
	r = checkJSON(t, env)
	r.noFailures(t, localOnlySkips[3:]...)
	r.expect(t, envcheck.CheckCatalogNS, envcheck.OK, "namespace iot exists")
	r.expect(t, envcheck.CheckTable, envcheck.OK, "metadata v2", "3 rows")
}

// TestCheckCatalogFailures: each wrong catalog setting fails its row with
// its fix, and the rows after it are skipped.
func TestCheckCatalogFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name  string
		set   map[string]string
		check string
		want  []string
	}{
		{"no uri", map[string]string{"TIMELAKE_CATALOG_URI": ""}, envcheck.CheckCatalog, []string{"no catalog URI", "TIMELAKE_CATALOG_URI="}},
		{"local warehouse", map[string]string{"TIMELAKE_WAREHOUSE": "/srv/lake"}, envcheck.CheckCatalog, []string{"local folder", "s3://bucket/prefix"}},
		{"nothing listens", map[string]string{"TIMELAKE_CATALOG_URI": closed}, envcheck.CheckCatalogConfig, []string{closed, "nothing answers"}},
		// The client fetches its token before /v1/config.
		{"wrong secret", map[string]string{"TIMELAKE_CATALOG_CREDENTIAL": "timelake-test:wrong"}, envcheck.CheckCatalogConfig, []string{"token endpoint refused", "TIMELAKE_CATALOG_CREDENTIAL"}},
		{"no credentials", map[string]string{"TIMELAKE_CATALOG_CREDENTIAL": ""}, envcheck.CheckCatalogAuth, []string{"no credentials", "TIMELAKE_CATALOG_CREDENTIAL"}},
		{"unknown warehouse", map[string]string{"TIMELAKE_CATALOG_WAREHOUSE": "s3://no-such-table-bucket"}, envcheck.CheckCatalogAuth, []string{"--catalog-warehouse"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, _, _ := catalogEnv(t)
			for k, v := range tc.set {
				env[k] = v
			}
			r := checkJSON(t, env, "--timeout", "3s")
			r.expect(t, tc.check, envcheck.Fail, tc.want...)
			r.expect(t, envcheck.CheckTable, envcheck.Skip)
			if r.code != cmdutil.ExitFailed {
				t.Errorf("exit code %d, want 1", r.code)
			}
			if strings.Contains(r.out+r.errOut, "timelake-test-secret") || strings.Contains(r.out+r.errOut, "timelake-test:wrong") {
				t.Error("a catalog secret was printed")
			}
		})
	}
}
