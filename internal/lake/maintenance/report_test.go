package maintenance

import (
	"encoding/json"
	"testing"
	"time"
)

// TestReportJSON: a round's JSON is the maintenance object of
// ingest --json and serve's lines (docs/exit-codes.md, "JSON report"): the
// round's sums, the orphan check times only when they were not due, and
// what a commit of retention dropped.
func TestReportJSON(t *testing.T) {
	at := time.Date(2026, 1, 5, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		rep  Report
		want string
	}{
		{Report{},
			`{"files_in":0,"bytes_in":0,"files_out":0,"snapshots_expired":0,"keys_remembered":0,"files_deleted":0,"orphans_removed":0,"pending":false,"seconds":0}`},
		{Report{Took: 1500 * time.Millisecond, Pending: true, Skipped: "a <b> & c"},
			`{"files_in":0,"bytes_in":0,"files_out":0,"snapshots_expired":0,"keys_remembered":0,"files_deleted":0,"orphans_removed":0,"pending":true,"skipped":"a \u003cb\u003e \u0026 c","seconds":1.5}`},
		{Report{Compacted: CompactResult{Version: 2, Idle: "idle", Deferred: 2,
			Groups: []Group{{FilesIn: 3, BytesIn: 100, FilesOut: 1, Replaced: 4}, {FilesIn: 2, BytesIn: 50, FilesOut: 1}}},
			Retention: &RetentionResult{SnapshotID: 5, Partitions: []string{"p=1", "p=2"}, Rows: 9},
			Expired:   ExpireResult{Expired: make([]ExpiredSnapshot, 3), Remembered: 7, FilesDeleted: 8},
			Orphans:   &OrphanResult{Files: []string{"a"}}, OrphansCheckedAt: at, Took: 123456789},
			`{"files_in":5,"bytes_in":150,"files_out":2,"rows_replaced":4,"partitions_dropped":["p=1","p=2"],"rows_dropped":9,"snapshots_expired":3,"keys_remembered":7,"files_deleted":8,"orphans_removed":1,"pending":false,"compaction_deferred":2,"compaction_idle":"idle","seconds":0.123456789}`},
		{Report{Compacted: CompactResult{Version: 2, Skipped: "delete files", Idle: "no"},
			Retention: &RetentionResult{Partitions: []string{"x"}, Rows: 3}, OrphansNext: at, OrphansCheckedAt: at},
			`{"files_in":0,"bytes_in":0,"files_out":0,"snapshots_expired":0,"keys_remembered":0,"files_deleted":0,"orphans_removed":0,"pending":false,"compaction_skipped":"delete files","orphans_last_checked":"2026-01-05T09:00:00Z","orphans_next_check":"2026-01-05T09:00:00Z","seconds":0}`},
		{Report{OrphansNext: at, Error: "boom"},
			`{"files_in":0,"bytes_in":0,"files_out":0,"snapshots_expired":0,"keys_remembered":0,"files_deleted":0,"orphans_removed":0,"pending":false,"orphans_next_check":"2026-01-05T09:00:00Z","error":"boom","seconds":0}`},
	} {
		b, err := json.Marshal(&tc.rep)
		if err != nil || string(b) != tc.want {
			t.Errorf("got  %s (%v)\nwant %s", b, err, tc.want)
		}
	}
}
