package fleet

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
)

// finding returns rep's finding of kind and its files' keys.
func finding(t *testing.T, rep *AuditReport, kind string) (Finding, []string) {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Kind == kind {
			var keys []string
			for _, x := range f.Files {
				keys = append(keys, x.Key)
			}
			return f, keys
		}
	}
	t.Fatalf("no finding %s in %+v", kind, rep.Findings)
	return Finding{}, nil
}

// TestAudit finds, on a local folder and on S3: a file whose history
// segment was deleted by hand (the segment, and the re-sent file no
// longer known), files changed after their load (other size, same size
// and other bytes), a file a stopped poller left (never loaded) and one
// it loaded without deleting, quarantined files by reason, and a file
// serve's sweep loaded; a young file waits without being a finding.
func TestAudit(t *testing.T) {
	forEachStore(t, func(t *testing.T, s stores) {
		ctx := context.Background()
		now := time.Now().UTC()
		later := now.Add(time.Hour) // every file of the landing bucket is an hour old
		tbl := newTable(t, s.lake)
		row := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)

		// Deleted by hand from the table's history: gw-1/old.csv was
		// loaded, its snapshot expired into a segment, the segment was
		// deleted, and the gateway sends the file again.
		load(t, tbl, "gw-1/old.csv", "one", row, now, lake.LoadedByPoll)
		load(t, tbl, "gw-1/keep.csv", "two", row, now, lake.LoadedByPoll)
		expireAll(t, tbl)
		props := tbl.Properties()[lake.PropLoadHistory]
		if props == "" || strings.Contains(props, ",") {
			t.Fatalf("load history %q, want one segment", props)
		}

		// Changed after load.
		load(t, tbl, "gw-2/same-size.csv", "v1", row, now, lake.LoadedByPoll)
		s.put(t, "gw-2/same-size.csv", "v2")
		load(t, tbl, "gw-2/bigger.csv", "v1", row, now, lake.LoadedByPoll)
		s.put(t, "gw-2/bigger.csv", "v1 and more")

		// Left by a stopped poller: never loaded, and loaded but not
		// deleted.
		s.put(t, "gw-3/never.csv", "never")
		load(t, tbl, "gw-3/done.csv", "done", row, now, lake.LoadedByPoll)
		s.put(t, "gw-3/done.csv", "done")

		// Quarantined, two reasons.
		quarantine(t, s, "gw-4/a.csv", `gw-4/a.csv: row 2 (line 3), column "t": "x" is not a number`, "x", now)
		quarantine(t, s, "gw-4/b.csv", `gw-4/b.csv: row 9 (line 10), column "t": "y" is not a number`, "y", now)
		quarantine(t, s, "gw-4/c.csv", "gw-4/c.csv: the file is empty", "", now)

		// Loaded by serve: one by its sweep, one after its notification.
		load(t, tbl, "gw-5/swept.csv", "s", row, now, lake.LoadedBySweep)
		load(t, tbl, "gw-5/announced.csv", "n", row, now, lake.LoadedByNotification)

		// The segment goes (loading would stop on it from now on), and the
		// gateway sends the file again.
		if err := deleteWarehouseFile(ctx, s, "iot/readings/metadata/"+props); err != nil {
			t.Fatal(err)
		}
		s.put(t, "gw-1/old.csv", "one")

		// A file that just landed (local only: its time can be set).
		if s.local != "" {
			s.put(t, "gw-6/young.csv", "young")
			s.age(t, "gw-6/young.csv", later.Add(-time.Minute))
		}

		rep, err := Audit(ctx, AuditOptions{Bucket: &landing.Bucket{Store: s.landing}, Table: tbl, TableName: "iot.readings",
			StuckAfter: 30 * time.Minute, Now: later})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Attention {
			t.Error("no attention")
		}
		for _, tc := range []struct {
			kind string
			want []string
		}{
			{FindingStuck, []string{"gw-1/old.csv", "gw-3/never.csv"}},
			{FindingChanged, []string{"gw-2/bigger.csv", "gw-2/same-size.csv"}},
			{FindingLeftAfterLoad, []string{"gw-3/done.csv"}},
			{FindingQuarantined, []string{"gw-4/a.csv", "gw-4/b.csv", "gw-4/c.csv"}},
			{FindingSweepLoaded, []string{"gw-5/swept.csv"}},
			{FindingHistoryMissing, []string{"metadata/" + props}},
		} {
			f, keys := finding(t, rep, tc.kind)
			if !slices.Equal(keys, tc.want) || f.Count != len(tc.want) || !f.Attention {
				t.Errorf("%s: %v (count %d, attention %v), want %v", tc.kind, keys, f.Count, f.Attention, tc.want)
			}
		}
		q, _ := finding(t, rep, FindingQuarantined)
		if len(q.Reasons) != 2 || q.Reasons[0].Count != 2 || q.Reasons[0].Reason != `column "t": "…" is not a number` ||
			q.Reasons[0].Example != "gw-4/a.csv" || q.Reasons[1].Reason != "the file is empty" {
			t.Errorf("reasons %+v", q.Reasons)
		}
		wantWaiting := 0
		if s.local != "" {
			wantWaiting = 1
		}
		if rep.Checked.LandingFiles != 5+wantWaiting || rep.Checked.Waiting != wantWaiting || rep.Checked.Quarantined != 3 {
			t.Errorf("checked %+v", rep.Checked)
		}

		// --limit: every file counted, the first listed.
		rep, err = Audit(ctx, AuditOptions{Bucket: &landing.Bucket{Store: s.landing}, Table: tbl, StuckAfter: 30 * time.Minute,
			Now: later, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if f, keys := finding(t, rep, FindingStuck); f.Count != 2 || !slices.Equal(keys, []string{"gw-1/old.csv"}) {
			t.Errorf("limit 1: %d, %v", f.Count, keys)
		}
	})
}

// TestAuditNothingToSay: a landing bucket its poller keeps up with.
func TestAuditNothingToSay(t *testing.T) {
	forEachStore(t, func(t *testing.T, s stores) {
		ctx := context.Background()
		tbl := newTable(t, s.lake)
		load(t, tbl, "gw-1/a.csv", "a", time.Now(), time.Now(), lake.LoadedByNotification)
		s.put(t, "gw-1/b.csv", "b") // just landed
		rep, err := Audit(ctx, AuditOptions{Bucket: &landing.Bucket{Store: s.landing}, Table: tbl})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Attention || rep.Checked.Waiting != 1 || len(rep.Findings) != len(findingOrder) {
			t.Errorf("report %+v", rep)
		}
		if conds := AuditConditions(rep); len(conds) != 0 {
			t.Errorf("conditions %+v", conds)
		}
	})
}

func deleteWarehouseFile(ctx context.Context, s stores, key string) error {
	return s.warehouse.Delete(ctx, key)
}
