package envcheck_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/commands/envcheck"
	"github.com/timelake/timelake/internal/commands/gateway"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// s3Env returns the settings of a poller on the test S3 server, with a
// fresh landing bucket and a fresh lake bucket.
func s3Env(t *testing.T) (map[string]string, s3test.Server, string, string) {
	t.Helper()
	srv := s3test.FromEnv(t)
	landing, lakeBucket := srv.NewBucket(t), srv.NewBucket(t)
	return map[string]string{
		"AWS_ENDPOINT_URL_S3":   srv.Endpoint,
		"AWS_REGION":            srv.Region,
		"AWS_ACCESS_KEY_ID":     srv.AccessKey,
		"AWS_SECRET_ACCESS_KEY": srv.SecretKey,
		"LANDING_BUCKET":        landing,
		"TIMELAKE_WAREHOUSE":    "s3://" + lakeBucket + "/warehouse",
		"TIMELAKE_TABLE":        "iot.readings",
	}, srv, landing, lakeBucket
}

// assertNoProbes fails if a probe object is left in bucket.
func assertNoProbes(t *testing.T, srv s3test.Server, bucket string) {
	t.Helper()
	out, err := srv.Client(t).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		if strings.Contains(aws.ToString(o.Key), "_timelake/probe/") {
			t.Errorf("probe left behind in %s: %s", bucket, aws.ToString(o.Key))
		}
	}
}

func TestCheckS3AllOK(t *testing.T) {
	for _, rows := range []int{-1, 3} { // -1: no table yet
		name := "no table"
		if rows >= 0 {
			name = "table with rows"
		}
		t.Run(name, func(t *testing.T) {
			env, srv, landing, lakeBucket := s3Env(t)
			if rows >= 0 {
				l, err := lake.Open(context.Background(), env["TIMELAKE_WAREHOUSE"], lake.Options{S3: srv.Client(t)})
				if err != nil {
					t.Fatal(err)
				}
				createTable(t, l, rows, nil)
			}
			r := checkJSON(t, env)
			r.noFailures(t)
			r.expect(t, envcheck.CheckConnect, envcheck.OK, srv.Endpoint, "HTTP")
			r.expect(t, envcheck.CheckAuth, envcheck.OK, "accepted")
			r.expect(t, envcheck.CheckLandingBucket, envcheck.OK, "s3://"+landing, "0 files wait", "put/get/delete")
			r.expect(t, envcheck.CheckLandingLease, envcheck.OK, "412")
			r.expect(t, envcheck.CheckLakeCommit, envcheck.OK, "412")
			if rows >= 0 {
				r.expect(t, envcheck.CheckTable, envcheck.OK, "metadata v2", "3 rows")
			} else {
				r.expect(t, envcheck.CheckTable, envcheck.OK, "does not exist yet")
			}
			assertNoProbes(t, srv, landing)
			assertNoProbes(t, srv, lakeBucket)
		})
	}
}

func TestCheckS3WrongSecret(t *testing.T) {
	env, _, _, _ := s3Env(t)
	const wrong = "wrong-secret-0123456789abcdef"
	env["AWS_SECRET_ACCESS_KEY"] = wrong
	for _, tc := range []struct {
		name string
		args []string
	}{{"json", []string{"env", "check", "--json"}}, {"text", []string{"env", "check"}}} {
		t.Run(tc.name, func(t *testing.T) {
			r := execute(t, env, false, tc.args...)
			if r.code != cmdutil.ExitFailed {
				t.Errorf("exit code %d, want 1", r.code)
			}
			if all := r.out + r.errOut; strings.Contains(all, wrong) {
				t.Errorf("the secret key was printed:\n%s", all)
			}
			if tc.name != "json" {
				if !strings.Contains(r.out, "auth\tfail\t") {
					t.Errorf("no failed auth row:\n%s", r.out)
				}
				return
			}
			r.expect(t, envcheck.CheckAuth, envcheck.Fail, "SignatureDoesNotMatch",
				"copy the secret access key again into AWS_SECRET_ACCESS_KEY (environment)")
			r.expect(t, envcheck.CheckConnect, envcheck.OK)
			r.expect(t, envcheck.CheckCredentials, envcheck.OK, "secret set (29 characters)")
			r.expect(t, envcheck.CheckLandingBucket, envcheck.Skip, "credentials rejected")
			r.expect(t, envcheck.CheckTable, envcheck.Skip, "credentials rejected")
		})
	}
}

func TestCheckS3UnknownAccessKey(t *testing.T) {
	env, _, _, _ := s3Env(t)
	env["AWS_ACCESS_KEY_ID"] = "nobody-knows-me"
	r := checkJSON(t, env)
	// versitygw answers XAdminUserNotFound where AWS answers InvalidAccessKeyId.
	r.expect(t, envcheck.CheckAuth, envcheck.Fail, "does not know access key id nobo********",
		"copy the access key id again into AWS_ACCESS_KEY_ID (environment)")
}

func TestCheckS3MissingLandingBucket(t *testing.T) {
	env, srv, _, lakeBucket := s3Env(t)
	env["LANDING_BUCKET"] = "tl-no-such-bucket-for-env-check"
	r := checkJSON(t, env)
	r.expect(t, envcheck.CheckLandingBucket, envcheck.Fail, "tl-no-such-bucket-for-env-check", "does not exist",
		"create bucket tl-no-such-bucket-for-env-check", "LANDING_BUCKET (environment)")
	r.expect(t, envcheck.CheckLandingLease, envcheck.Skip)
	// The others still ran.
	r.expect(t, envcheck.CheckAuth, envcheck.OK)
	r.expect(t, envcheck.CheckLakeBucket, envcheck.OK)
	r.expect(t, envcheck.CheckLakeCommit, envcheck.OK)
	r.expect(t, envcheck.CheckTable, envcheck.OK)
	if r.code != cmdutil.ExitFailed || r.report.Failed != 1 {
		t.Errorf("exit code %d, %d failed; want 1 and 1", r.code, r.report.Failed)
	}
	assertNoProbes(t, srv, lakeBucket)
}

// TestGatewayCheckS3: the gateway binary's env check passes on S3,
// probes below the gateway's keys only (no _timelake/ probe) and leaves
// the bucket as it found it.
func TestGatewayCheckS3(t *testing.T) {
	env, srv, landing, _ := s3Env(t)
	delete(env, "TIMELAKE_WAREHOUSE")
	delete(env, "TIMELAKE_TABLE")
	env["TIMELAKE_GATEWAY"] = "gateway-7"
	client := srv.Client(t)
	waiting := "gateway-6/20260105T100000Z-1a2b3c4d.csv"
	if _, err := client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(landing), Key: aws.String(waiting),
		Body: strings.NewReader("time\n")}); err != nil {
		t.Fatal(err)
	}
	ios, out, errOut := iostreams.Test()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := gateway.Execute(ctx, []string{"env", "check", "--json", "--prefix", "site-3"}, ios,
		func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	r := result{code: code, out: out.String()}
	if err := json.Unmarshal(out.Bytes(), &r.report); err != nil {
		t.Fatal(err)
	}
	r.noFailures(t)
	r.expect(t, envcheck.CheckUploadKeys, envcheck.OK, "s3://"+landing+"/site-3/gateway-7/", "TIMELAKE_GATEWAY (environment)", "--prefix")
	r.expect(t, envcheck.CheckUploadPut, envcheck.OK, "put/HEAD/delete of site-3/gateway-7/"+envcheck.UploadProbeName)
	r.expect(t, envcheck.CheckUploadConditional, envcheck.OK, "412")
	listed, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(landing)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range listed.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	if len(keys) != 1 || keys[0] != waiting {
		t.Errorf("after the check the landing bucket holds %q, want only %s", keys, waiting)
	}
}

// TestCheckEndpointNotS3: an endpoint that answers 404 Not Found without
// an S3 error code (a web site, a URL with a path) fails auth with the
// endpoint to fix, not the credentials, and the bucket checks say why
// they did not run.
func TestCheckEndpointNotS3(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("<html><body>404 Not Found</body></html>"))
	}))
	defer web.Close()
	env := map[string]string{
		"AWS_ENDPOINT_URL_S3":   web.URL,
		"AWS_REGION":            "us-east-1",
		"AWS_ACCESS_KEY_ID":     "AKIAEXAMPLEKEY",
		"AWS_SECRET_ACCESS_KEY": "example-secret-0123456789",
		"LANDING_BUCKET":        "s3://landing",
		"TIMELAKE_WAREHOUSE":    "s3://lake/warehouse",
		"TIMELAKE_TABLE":        "iot.readings",
	}
	r := checkJSON(t, env)
	if r.code != cmdutil.ExitFailed {
		t.Errorf("exit code %d, want 1", r.code)
	}
	r.expect(t, envcheck.CheckAuth, envcheck.Fail, "404 Not Found and no S3 error",
		"set AWS_ENDPOINT_URL_S3 (environment) to the S3 service's URL, without a bucket or path")
	r.expect(t, envcheck.CheckLandingBucket, envcheck.Skip, "the endpoint does not answer as S3")
	r.expect(t, envcheck.CheckTable, envcheck.Skip, "the endpoint does not answer as S3")
}
