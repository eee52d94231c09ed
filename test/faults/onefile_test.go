package faults

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/testutil/s3fault"
)

// TestOneFileFails: a landing file whose every request of one kind fails,
// run after run, affects that file only. Each run loads the others, reports
// the file as failed with its reason (never as already loaded: it was never
// fetched), leaves it in the landing bucket and is partial; once the fault
// is gone the next run settles it.
func TestOneFileFails(t *testing.T) {
	const broken = "gw-1/0003.csv"
	for _, tc := range []struct {
		name   string
		rule   func(e *env) s3fault.Rule
		reason string
		bad    bool // the file must be quarantined
		after  ingest.Status
	}{
		{"GET fails with 500", func(e *env) s3fault.Rule {
			return s3fault.Rule{Name: "broken", Method: http.MethodGet, Bucket: e.landingBucket, Key: broken,
				Action: s3fault.Fail, Status: http.StatusInternalServerError, Code: "InternalError"}
		}, "cannot be fetched", false, ingest.Loaded},
		{"GET says 404 for a listed key", func(e *env) s3fault.Rule {
			return s3fault.Rule{Name: "broken", Method: http.MethodGet, Bucket: e.landingBucket, Key: broken,
				Action: s3fault.Fail, Status: http.StatusNotFound, Code: "NoSuchKey"}
		}, "listed in the landing bucket but cannot be fetched", false, ingest.Loaded},
		{"GET of one object denied", func(e *env) s3fault.Rule {
			return s3fault.Rule{Name: "broken", Method: http.MethodGet, Bucket: e.landingBucket, Key: broken,
				Action: s3fault.Fail, Status: http.StatusForbidden, Code: "AccessDenied"}
		}, "AccessDenied", false, ingest.Loaded},
		{"quarantine copy fails", func(e *env) s3fault.Rule {
			return s3fault.Rule{Name: "broken", Method: http.MethodPut, Bucket: e.landingBucket, Key: "_rejected/" + broken,
				Header: "X-Amz-Copy-Source", Action: s3fault.Fail, Status: http.StatusInternalServerError, Code: "InternalError"}
		}, "could not be quarantined", true, ingest.Quarantined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, firstSeed())
			want := e.dropFiles(t, "", 0, 6, 5)
			var brokenIDs []string
			if tc.bad {
				e.putDirect(t, e.landingBucket, broken, badFile())
			} else {
				_, brokenIDs = gatewayFile(3, 5)
			}
			want = slices.DeleteFunc(want, func(id string) bool { return strings.HasPrefix(id, "f0003-") })
			e.proxy.Add(tc.rule(e))
			cfg := ingest.Config{Landing: e.landing, Lake: e.lake, Table: e.table, Holder: deadHolder(t), Logger: quiet}
			for run := 1; run <= 2; run++ {
				rep, err := ingest.Run(ctx, cfg)
				if err != nil || rep.Failed != 1 || rep.AlreadyLoaded != 0 || !rep.Partial() || run == 1 && rep.Loaded != 5 {
					t.Fatalf("run %d: %+v, %v", run, rep, err)
				}
				f := rep.Files[slices.IndexFunc(rep.Files, func(f ingest.FileResult) bool { return f.Key == broken })]
				if f.Status != ingest.Failed || !strings.Contains(f.Reason, tc.reason) || !strings.Contains(f.Reason, "stays in the landing bucket") {
					t.Fatalf("run %d: %+v", run, f)
				}
				if !slices.Equal(e.waitingFiles(t), []string{broken}) {
					t.Fatalf("run %d: landing bucket %v", run, e.waitingFiles(t))
				}
			}
			checkRows(t, e.read(t), want)
			if e.proxy.Counts("broken").Injected == 0 {
				t.Fatal("no fault injected")
			}

			// The fault is gone: the next run loads (or quarantines) it.
			record("one file fails: "+tc.name, 2, 0, e.proxy, len(want), 0)
			e.proxy.Clear()
			rep, err := ingest.Run(ctx, cfg)
			if err != nil || len(rep.Files) != 1 || rep.Files[0].Status != tc.after {
				t.Fatalf("run after the fault: %+v, %v", rep, err)
			}
			checkRows(t, e.read(t), slices.Sorted(slices.Values(append(want, brokenIDs...))))
		})
	}
}
