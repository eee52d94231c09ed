package tables_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/commands/cmdutil"
)

// TestTablesRollback: a delete is undone by its snapshot id, the rows back
// and the rows loaded after it kept; a dry run changes nothing; a second
// undo, a snapshot that is no delete and an id that is no number are
// refused (exit 2).
func TestTablesRollback(t *testing.T) {
	landing, _ := copyLanding(t, "gateway-1/")
	wh := filepath.Join(t.TempDir(), "lake")
	env := map[string]string{"TIMELAKE_WAREHOUSE": wh, "LANDING_BUCKET": landing, "TIMELAKE_TABLE": "iot.readings"}
	mustRun(t, env, false, "ingest", "--series-key", "device_id")
	total, of := deviceRows(t, wh, "dev-01-01")
	type deleteReport struct {
		Rows       int64  `json:"rows"`
		SnapshotID *int64 `json:"snapshot_id"`
	}
	del := decode[deleteReport](t, mustRun(t, env, false, "tables", "delete", "iot.readings", "--where", "device_id=dev-01-01", "--yes", "--json"))
	if del.Rows != of || del.SnapshotID == nil {
		t.Fatalf("delete: %+v, want %d rows", del, of)
	}
	id := strconv.FormatInt(*del.SnapshotID, 10)

	// A file loaded after the delete.
	more, _ := copyLanding(t, "gateway-2/")
	env2 := map[string]string{"TIMELAKE_WAREHOUSE": wh, "LANDING_BUCKET": more, "TIMELAKE_TABLE": "iot.readings"}
	mustRun(t, env2, false, "ingest", "--series-key", "device_id")
	grown, _ := deviceRows(t, wh, "dev-01-01")
	if grown <= total-of {
		t.Fatalf("gateway-2's rows did not load: %d rows", grown)
	}

	out := mustRun(t, env, false, "tables", "rollback", "iot.readings", id, "--dry-run")
	if want := "would restore " + plural(of, "row") + " of iot.readings that snapshot " + id + " deleted where device_id = \"dev-01-01\": "; !strings.HasPrefix(out, want) {
		t.Errorf("dry run: %q, want %q...", out, want)
	}
	if n, gotOf := deviceRows(t, wh, "dev-01-01"); n != grown || gotOf != 0 {
		t.Fatalf("the dry run changed the table: %d rows, %d of dev-01-01", n, gotOf)
	}

	type report struct {
		Delete     int64  `json:"delete_snapshot_id"`
		Rows       int64  `json:"rows"`
		SnapshotID *int64 `json:"snapshot_id"`
	}
	rep := decode[report](t, mustRun(t, env, false, "tables", "rollback", "iot.readings", id, "--json"))
	if rep.Delete != *del.SnapshotID || rep.Rows != of || rep.SnapshotID == nil {
		t.Fatalf("rollback: %+v", rep)
	}
	if n, gotOf := deviceRows(t, wh, "dev-01-01"); n != grown+of || gotOf != of {
		t.Fatalf("after the rollback: %d rows (want %d), %d of dev-01-01 (want %d)", n, grown+of, gotOf, of)
	}
	if got := decode[[]historyJSON](t, mustRun(t, env, false, "tables", "history", "--status", "deleted", "--json")); len(got) != 0 {
		t.Errorf("history lists an undone delete: %+v", got)
	}
	restored := decode[[]historyJSON](t, mustRun(t, env, false, "tables", "history", "--status", "restored", "--json"))
	if len(restored) != 1 || restored[0].Rows != of || restored[0].SnapshotID == nil || *restored[0].SnapshotID != *rep.SnapshotID ||
		restored[0].Reason == nil || *restored[0].Reason != "undid the delete of snapshot "+id ||
		restored[0].Predicate == nil || *restored[0].Predicate != `device_id = "dev-01-01"` {
		t.Errorf("history of the undo: %+v", restored)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tables", "rollback", "iot.readings", id}, "undid it already"},
		{[]string{"tables", "rollback", "iot.readings", strconv.FormatInt(*rep.SnapshotID, 10)}, "is an append (the undo of the delete of snapshot " + id + "), not a delete of rows"},
		{[]string{"tables", "rollback", "iot.readings", "last"}, "expected a snapshot id"},
		{[]string{"tables", "rollback", "iot.readings"}, "expected NAME SNAPSHOT_ID"},
	} {
		if r := timelake(t, env, false, tc.args...); r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, tc.want) {
			t.Errorf("%v: exit %d, %s", tc.args, r.code, r.errOut)
		}
	}
	if n, _ := deviceRows(t, wh, "dev-01-01"); n != grown+of {
		t.Fatalf("the refusals changed the table: %d rows", n)
	}
}
