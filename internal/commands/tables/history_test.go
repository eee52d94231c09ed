package tables_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/monitortest"
)

type historyJSON struct {
	At            string  `json:"at"`
	Status        string  `json:"status"`
	Key           string  `json:"key"`
	Rows          int64   `json:"rows"`
	SnapshotID    *int64  `json:"snapshot_id"`
	LandedAt      *string `json:"landed_at"`
	MaxRowTime    *string `json:"max_row_time"`
	LoadedBy      *string `json:"loaded_by"`
	SameAs        *string `json:"same_as"`
	QuarantinedTo *string `json:"quarantined_to"`
	Reason        *string `json:"reason"`
	Predicate     *string `json:"predicate"`
}

// TestTablesHistory, on a local landing folder and warehouse and on S3:
// loaded files (from the snapshots and, once expired, from the load
// history), a duplicate by key and one by content, and a rejected file
// with its reason, newest first, selected by --status, --prefix and
// --since.
func TestTablesHistory(t *testing.T) {
	const header = "time,device_id,temperature_c\n"
	monitortest.Stores(t, func(t *testing.T, env map[string]string, st storage.Store) {
		env["TIMELAKE_TABLE"], env["TIMELAKE_SERIES_KEY"], env["TIMELAKE_CACHE_DIR"] = "iot.readings", "device_id", "off"
		put := func(key, body string) { monitortest.Put(t, env, st, key, body) }
		ingest := func(code cmdutil.ExitCode) {
			t.Helper()
			if r := timelake(t, env, false, "ingest"); r.code != code {
				t.Fatalf("ingest: exit %d, want %d\n%s%s", r.code, code, r.out, r.errOut)
			}
		}
		good := header + "2026-01-05T10:00:00Z,a,1.5\n"
		put("gw-1/a.csv", good)
		put("gw-2/b.csv", header+"2026-01-05T11:00:00Z,b,2.5\n")
		ingest(cmdutil.ExitOK)
		mustRun(t, env, false, "tables", "expire", "--older-than", "1ms", "--retain-last", "1")
		put("gw-1/a.csv", good)                                         // the same key again
		put("gw-1/copy.csv", good)                                      // the same content, another key
		put("gw-3/bad.csv", "time;device_id\n2026-01-05T10:00:00Z;c\n") // another delimiter
		ingest(cmdutil.ExitPartial)

		history := func(args ...string) []historyJSON {
			t.Helper()
			out := mustRun(t, env, false, append([]string{"tables", "history", "--json"}, args...)...)
			var rows []historyJSON
			if err := json.Unmarshal([]byte(out), &rows); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			return rows
		}
		rows := history()
		var got []string
		for _, r := range rows {
			got = append(got, r.Status+" "+r.Key)
		}
		if len(rows) != 5 {
			t.Fatalf("history %v, want 2 loaded, 2 duplicates, 1 rejected", got)
		}
		by := map[string]historyJSON{}
		for _, r := range rows {
			by[r.Status+" "+r.Key] = r
		}
		a, b := by["loaded gw-1/a.csv"], by["loaded gw-2/b.csv"]
		if a.Rows != 1 || a.SnapshotID == nil || a.MaxRowTime == nil || *a.MaxRowTime != "2026-01-05T10:00:00.000Z" ||
			a.LandedAt == nil || a.LoadedBy == nil || *a.LoadedBy != "poll" || b.Rows != 1 {
			t.Errorf("loaded: %+v %+v", a, b)
		}
		if d := by["duplicate gw-1/a.csv"]; d.SnapshotID == nil || *d.SnapshotID != *a.SnapshotID || d.SameAs != nil {
			t.Errorf("duplicate by key: %+v", d)
		}
		if d := by["duplicate gw-1/copy.csv"]; d.SameAs == nil || *d.SameAs != "gw-1/a.csv" {
			t.Errorf("duplicate by content: %+v", d)
		}
		if r := by["rejected gw-3/bad.csv"]; r.Reason == nil || !strings.Contains(*r.Reason, "--csv-delimiter") || r.QuarantinedTo == nil ||
			*r.QuarantinedTo != "_rejected/gw-3/bad.csv" || r.SnapshotID != nil {
			t.Errorf("rejected: %+v", r)
		}
		for i := 1; i < len(rows); i++ {
			if rows[i].At > rows[i-1].At {
				t.Errorf("not newest first: %v", got)
			}
		}
		if rows := history("--status", "rejected"); len(rows) != 1 || rows[0].Key != "gw-3/bad.csv" {
			t.Errorf("--status rejected: %+v", rows)
		}
		if rows := history("--status", "duplicate", "--prefix", "gw-1/c"); len(rows) != 1 || rows[0].Key != "gw-1/copy.csv" {
			t.Errorf("--status duplicate --prefix gw-1/c: %+v", rows)
		}
		if rows := history("--since", "2999-01-01"); len(rows) != 0 {
			t.Errorf("--since in the future: %+v", rows)
		}
		if rows := history("--limit", "2"); len(rows) != 2 {
			t.Errorf("--limit 2: %d rows", len(rows))
		}
		pipe := mustRun(t, env, false, "tables", "history", "--status", "rejected")
		if !strings.HasPrefix(pipe, "at\tstatus\tkey\trows\tsnapshot_id\tsize_bytes\tsha256\tlanded_at\tmax_row_time\tloaded_by\tsame_as\tquarantined_to\treason\tpredicate\n") ||
			!strings.Contains(pipe, "\trejected\tgw-3/bad.csv\t0\t\t38\t") {
			t.Errorf("pipe:\n%s", pipe)
		}
		if r := timelake(t, env, false, "tables", "history", "--status", "lost"); r.code != cmdutil.ExitUsage {
			t.Errorf("--status lost: exit %d", r.code)
		}
	})
}
