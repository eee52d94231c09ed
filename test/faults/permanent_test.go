package faults

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3fault"
)

// TestPermanentErrorsAreNotRetried: an answer that no retry can change
// (403 AccessDenied: the key lacks a permission) ends the run at once with
// env check's reason and fix, instead of being retried for minutes. A read
// of a landing file that is refused ends it when the run's own lease reads
// the same way (a read refused for one object only is that file's:
// TestOneFileFails).
func TestPermanentErrorsAreNotRetried(t *testing.T) {
	denied := func(name, bucket, method, key string) s3fault.Rule {
		return s3fault.Rule{Name: name, Bucket: bucket, Method: method, Key: key,
			Action: s3fault.Fail, Status: http.StatusForbidden, Code: "AccessDenied"}
	}
	for _, tc := range []struct {
		name  string
		rule  func(e *env) s3fault.Rule
		extra func(e *env) s3fault.Rule
	}{
		{"landing read", func(e *env) s3fault.Rule { return denied("denied", e.landingBucket, http.MethodGet, "gw-*") },
			func(e *env) s3fault.Rule { return denied("lease read", e.landingBucket, http.MethodGet, "_timelake/*") }},
		{"lease write", func(e *env) s3fault.Rule {
			return denied("denied", e.landingBucket, http.MethodPut, "_timelake/lease/*")
		}, nil},
		{"landing delete", func(e *env) s3fault.Rule { return denied("denied", e.landingBucket, http.MethodDelete, "gw-*") }, nil},
		{"data file write", func(e *env) s3fault.Rule { return denied("denied", e.lakeBucket, http.MethodPut, "*/data/*") }, nil},
		{"metadata commit", func(e *env) s3fault.Rule {
			return denied("denied", e.lakeBucket, http.MethodPut, "*/metadata/v*.metadata.json")
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, firstSeed())
			// The table exists, as it does on every run but the first.
			e.dropFiles(t, "", 0, 1, 5)
			if _, err := ingest.Run(context.Background(), ingest.Config{Landing: e.landing, Lake: e.lake, Table: e.table, Logger: quiet}); err != nil {
				t.Fatal(err)
			}
			e.dropFiles(t, "", 10, 3, 5)
			e.proxy.Add(tc.rule(e))
			if tc.extra != nil {
				e.proxy.Add(tc.extra(e))
			}
			// One file at a time, so that the denied request is sent once
			// unless something retries it.
			_, err := ingest.Run(context.Background(), ingest.Config{Landing: e.landing, Lake: e.lake, Table: e.table,
				Parallel: 1, FilesPerCommit: 1, Holder: deadHolder(t), Logger: quiet})
			var p *storage.Problem
			if !errors.As(err, &p) || p.Kind != storage.ProblemPermission || p.Fix == "" {
				t.Fatalf("error %v, want a permission problem with its fix", err)
			}
			if n := e.proxy.Counts("denied").Matched; n > 1 {
				t.Fatalf("the denied request was sent %d times", n)
			}
			record("permanent error: "+tc.name, 1, 1, e.proxy, 0, 0)
		})
	}
}
