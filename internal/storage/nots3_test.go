package storage_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/timelake/timelake/internal/storage"
)

// TestListAnsweredNotS3: an endpoint that answers 404 Not Found without an
// S3 error code (a web site, a URL with a path) is ErrNotS3 for a listing
// and for the credentials probe, which Diagnose explains with the endpoint
// setting to fix; a listing answered NoSuchBucket and an object's 404 stay
// ErrNotExist.
func TestListAnsweredNotS3(t *testing.T) {
	var noSuchBucket atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if noSuchBucket.Load() {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>`))
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		if r.Method != http.MethodHead {
			w.Write([]byte("<html><body>404 Not Found</body></html>"))
		}
	}))
	defer srv.Close()
	client, err := storage.NewS3Client(t.Context(), storage.S3Config{Endpoint: srv.URL, Region: "us-east-1", AccessKeyID: "k", SecretAccessKey: "s", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := storage.NewS3Store(client, "landing", "", storage.S3StoreOptions{})
	names := storage.Names{Endpoint: srv.URL, EndpointSetting: "AWS_ENDPOINT_URL_S3 (env file)"}

	err = s.List(t.Context(), "", func(storage.ObjectInfo) error { return nil })
	if !errors.Is(err, storage.ErrNotS3) || errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("list: %v, want ErrNotS3 (and not ErrNotExist)", err)
	}
	p := storage.Diagnose(err, storage.Where{What: "landing bucket"}, names)
	if p == nil || p.Kind != storage.ProblemEndpoint || !p.Permanent || !strings.Contains(p.Reason, srv.URL) ||
		!strings.Contains(p.Fix, "AWS_ENDPOINT_URL_S3 (env file)") || !strings.Contains(p.Fix, "without a bucket or path") {
		t.Errorf("diagnosis of the listing: %+v", p)
	}
	if err := client.ProbeAuth(t.Context()); !errors.Is(err, storage.ErrNotS3) {
		t.Errorf("ProbeAuth: %v, want ErrNotS3", err)
	}
	// An object's 404 is a missing object, whatever the body.
	if _, err := s.Stat(t.Context(), "gw/a.csv"); !errors.Is(err, storage.ErrNotExist) || errors.Is(err, storage.ErrNotS3) {
		t.Errorf("stat: %v, want ErrNotExist", err)
	}

	noSuchBucket.Store(true)
	err = s.List(t.Context(), "", func(storage.ObjectInfo) error { return nil })
	if !errors.Is(err, storage.ErrNotExist) || errors.Is(err, storage.ErrNotS3) {
		t.Fatalf("list of a missing bucket: %v, want ErrNotExist", err)
	}
	if p := storage.Diagnose(err, storage.Where{}, names); p == nil || p.Kind != storage.ProblemMissingBucket {
		t.Errorf("diagnosis of a missing bucket: %+v", p)
	}
}
