package tables_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/commands/tables"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
)

// deviceRows counts the rows of iot.readings and those of device, through
// iceberg-go's scan of the current snapshot.
func deviceRows(t *testing.T, wh, device string) (total, of int64) {
	t.Helper()
	ctx := context.Background()
	l, err := lake.Open(ctx, wh, lake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := l.LoadTable(ctx, lake.TableName{Namespace: "iot", Name: "readings"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Iceberg().Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	col := at.Schema().FieldIndices("device_id")[0]
	rr := array.NewTableReader(at, 1024)
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		ids := rec.Column(col).(*array.String)
		for i := range ids.Len() {
			total++
			if ids.Value(i) == device {
				of++
			}
		}
	}
	return total, of
}

// answered runs the CLI with stdin a terminal that answers answer.
func answered(env map[string]string, answer string, args ...string) result {
	ios, out, errOut := iostreams.Test()
	ios.In = bytes.NewBufferString(answer)
	ios.SetStdinTTY(true)
	code := commands.Execute(context.Background(), args, ios, func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
	return result{code, out.String(), errOut.String()}
}

func TestTablesDelete(t *testing.T) {
	landing, _ := copyLanding(t, "gateway-1/")
	wh := filepath.Join(t.TempDir(), "lake")
	env := map[string]string{"TIMELAKE_WAREHOUSE": wh, "LANDING_BUCKET": landing, "TIMELAKE_TABLE": "iot.readings"}
	mustRun(t, env, false, "ingest", "--series-key", "device_id")
	total, of := deviceRows(t, wh, "dev-01-01")
	if of == 0 || of == total {
		t.Fatalf("%d of %d rows of dev-01-01", of, total)
	}
	unchanged := func(what string) {
		t.Helper()
		if gt, gotOf := deviceRows(t, wh, "dev-01-01"); gt != total || gotOf != of {
			t.Fatalf("%s changed the table: %d rows, %d of dev-01-01", what, gt, gotOf)
		}
	}
	del := []string{"tables", "delete", "iot.readings", "--where", "device_id=dev-01-01"}

	out := mustRun(t, env, false, append(del, "--dry-run")...)
	if !strings.HasPrefix(out, "would delete "+plural(of, "row")+" of iot.readings where device_id = \"dev-01-01\": ") {
		t.Errorf("dry run: %q", out)
	}
	unchanged("--dry-run")

	if r := timelake(t, env, false, "tables", "delete", "iot.readings"); r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "needs a predicate") {
		t.Errorf("no predicate: exit %d, %s", r.code, r.errOut)
	}
	if r := timelake(t, env, false, del...); r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "pass --yes") {
		t.Errorf("stdin not a terminal: exit %d, %s", r.code, r.errOut)
	}
	unchanged("a delete without --yes in a pipe")
	if r := answered(env, "n\n", del...); r.code != cmdutil.ExitFailed || !strings.Contains(r.errOut, "Delete "+plural(of, "row")+" from iot.readings? [y/N]") ||
		!strings.HasPrefix(r.out, "would delete ") {
		t.Errorf("answered no: exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	unchanged("a delete answered no")

	if r := answered(env, "y\n", del...); r.code != cmdutil.ExitOK || !strings.Contains(r.out, "\ndeleted "+plural(of, "row")+" of iot.readings") ||
		!strings.Contains(r.out, "\nundo it with: timelake tables rollback iot.readings ") || !strings.Contains(r.out, "timelake.snapshot-retention, 5m)") {
		t.Errorf("answered yes: exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	if gt, gotOf := deviceRows(t, wh, "dev-01-01"); gt != total-of || gotOf != 0 {
		t.Fatalf("after the delete: %d rows, %d of dev-01-01", gt, gotOf)
	}

	// Answered yes with --json: the preview and the question on stderr,
	// the report alone on stdout.
	if r := answered(env, "yes\n", "tables", "delete", "iot.readings", "--where", "device_id=dev-01-02", "--json"); r.code != cmdutil.ExitOK ||
		!strings.HasPrefix(r.errOut, "would delete ") || !strings.HasPrefix(r.out, "{") {
		t.Errorf("answered yes with --json: exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	if _, gotOf := deviceRows(t, wh, "dev-01-02"); gotOf != 0 {
		t.Errorf("%d rows of dev-01-02 left", gotOf)
	}

	type report struct {
		Rows       int64  `json:"rows"`
		SnapshotID *int64 `json:"snapshot_id"`
	}
	rep := decode[report](t, mustRun(t, env, false, "tables", "delete", "iot.readings", "--where", "device_id=dev-01-01", "--yes", "--json"))
	if rep.Rows != 0 || rep.SnapshotID != nil {
		t.Errorf("deleting again: %+v", rep)
	}
}

func plural(n int64, noun string) string { return iostreams.Plural(n, noun) }

// TestTablesHistoryDeletes: tables history lists each delete of the
// current ancestry as deleted, with its predicate, the rows it removed and
// its snapshot, among the loaded files; --status deleted keeps only them,
// a --prefix leaves them out.
func TestTablesHistoryDeletes(t *testing.T) {
	landing, _ := copyLanding(t, "gateway-1/")
	wh := filepath.Join(t.TempDir(), "lake")
	env := map[string]string{"TIMELAKE_WAREHOUSE": wh, "LANDING_BUCKET": landing, "TIMELAKE_TABLE": "iot.readings"}
	mustRun(t, env, false, "ingest", "--series-key", "device_id")
	type report struct {
		Rows       int64  `json:"rows"`
		SnapshotID *int64 `json:"snapshot_id"`
	}
	var reps []report
	for _, dev := range []string{"dev-01-01", "dev-01-02"} {
		_, of := deviceRows(t, wh, dev)
		r := decode[report](t, mustRun(t, env, false, "tables", "delete", "iot.readings", "--where", "device_id="+dev, "--yes", "--json"))
		if r.Rows != of || r.SnapshotID == nil {
			t.Fatalf("delete %s: %+v, want %d rows", dev, r, of)
		}
		reps = append(reps, r)
	}
	history := func(args ...string) []historyJSON {
		t.Helper()
		return decode[[]historyJSON](t, mustRun(t, env, false, append([]string{"tables", "history", "--json"}, args...)...))
	}
	all := history()
	var loaded int
	for _, r := range all {
		if r.Status == "loaded" {
			loaded++
		}
	}
	if loaded == 0 || len(all) != loaded+2 || all[0].Status != "deleted" || all[1].Status != "deleted" {
		t.Fatalf("history: %+v", all)
	}
	for i, r := range []historyJSON{all[1], all[0]} {
		dev := []string{"dev-01-01", "dev-01-02"}[i]
		if r.Key != "" || r.Rows != reps[i].Rows || r.SnapshotID == nil || *r.SnapshotID != *reps[i].SnapshotID ||
			r.Predicate == nil || *r.Predicate != `device_id = "`+dev+`"` {
			t.Errorf("the delete of %s: %+v", dev, r)
		}
	}
	if got := history("--status", "deleted"); len(got) != 2 {
		t.Errorf("--status deleted: %+v", got)
	}
	if got := history("--prefix", "gateway-1/", "--status", "deleted"); len(got) != 0 {
		t.Errorf("--prefix with --status deleted: %+v", got)
	}
	if got := history("--status", "loaded"); len(got) != loaded {
		t.Errorf("--status loaded: %d rows, want %d", len(got), loaded)
	}
	tty := mustRun(t, env, true, "tables", "history", "--status", "deleted", "--limit", "1")
	if lines := strings.Split(strings.TrimSpace(tty), "\n"); len(lines) != 2 || !strings.Contains(lines[1], " deleted ") ||
		!strings.HasSuffix(lines[1], `where device_id = "dev-01-02"`) {
		t.Errorf("terminal:\n%s", tty)
	}
	pipe := mustRun(t, env, false, "tables", "history", "--status", "deleted")
	if lines := strings.Split(strings.TrimSpace(pipe), "\n"); len(lines) != 3 || !strings.HasSuffix(lines[0], "\treason\tpredicate") ||
		strings.Split(lines[1], "\t")[5] != "" ||
		!strings.HasSuffix(lines[1], "\t"+`device_id = "dev-01-02"`) {
		t.Errorf("pipe:\n%s", pipe)
	}
}

// TestTablesDeleteBatchID: --batch-id removes the rows of one landing file
// through the table's source column; on a table without one, by dropping
// the batch's files while they are its own, and a batch whose files are
// not is refused (exit 2), changing nothing.
func TestTablesDeleteBatchID(t *testing.T) {
	landing, keys := copyLanding(t, "gateway-1/")
	wh := filepath.Join(t.TempDir(), "lake")
	env := map[string]string{"TIMELAKE_WAREHOUSE": wh, "LANDING_BUCKET": landing, "TIMELAKE_TABLE": "iot.readings"}
	mustRun(t, env, false, "ingest", "--series-key", "device_id", "--source-column", "_source")
	if len(keys) < 2 {
		t.Fatalf("keys %v", keys)
	}
	type batch struct {
		Rows int64 `json:"rows"`
	}
	loaded := decode[batch](t, mustRun(t, env, false, "tables", "batch", "iot.readings", keys[0], "--json"))
	total, _ := deviceRows(t, wh, "")
	type report struct {
		Predicate string `json:"predicate"`
		Rows      int64  `json:"rows"`
	}
	rep := decode[report](t, mustRun(t, env, false, "tables", "delete", "iot.readings", "--batch-id", keys[0], "--yes", "--json"))
	if loaded.Rows == 0 || rep.Rows != loaded.Rows || rep.Predicate != `_source = "`+keys[0]+`"` {
		t.Fatalf("delete --batch-id %s: %+v, the batch loaded %d rows", keys[0], rep, loaded.Rows)
	}
	if left, _ := deviceRows(t, wh, ""); left != total-loaded.Rows {
		t.Fatalf("%d rows left of %d", left, total)
	}

	wh2 := filepath.Join(t.TempDir(), "lake")
	landing2, _ := copyLanding(t, "gateway-1/")
	env2 := map[string]string{"TIMELAKE_WAREHOUSE": wh2, "LANDING_BUCKET": landing2, "TIMELAKE_TABLE": "iot.readings"}
	mustRun(t, env2, false, "ingest", "--series-key", "device_id")
	rep = decode[report](t, mustRun(t, env2, false, "tables", "delete", "iot.readings", "--batch-id", keys[0], "--yes", "--json"))
	if rep.Rows != loaded.Rows || rep.Predicate != `batch-id = "`+keys[0]+`"` {
		t.Fatalf("delete --batch-id %s without a source column: %+v, the batch loaded %d rows", keys[0], rep, loaded.Rows)
	}
	before, _ := deviceRows(t, wh2, "")
	if before != total-loaded.Rows {
		t.Fatalf("%d rows left of %d", before, total)
	}
	if r := timelake(t, env2, false, "tables", "delete", "iot.readings", "--batch-id", "gateway-1/never.csv", "--yes"); r.code != cmdutil.ExitUsage ||
		!strings.Contains(r.errOut, "no such batch: gateway-1/never.csv") {
		t.Errorf("without a source column: exit %d, %s", r.code, r.errOut)
	}
	if after, _ := deviceRows(t, wh2, ""); after != before {
		t.Errorf("the refused delete changed the table: %d rows, %d before", after, before)
	}
}

// TestTablesDeleteProgress: on a terminal, a delete that reads enough shows
// its progress (files read, rows matched) on stderr and clears it; in a
// pipe it shows none.
func TestTablesDeleteProgress(t *testing.T) {
	landing, _ := copyLanding(t, "gateway-1/")
	wh := filepath.Join(t.TempDir(), "lake")
	env := map[string]string{"TIMELAKE_WAREHOUSE": wh, "LANDING_BUCKET": landing, "TIMELAKE_TABLE": "iot.readings"}
	mustRun(t, env, false, "ingest", "--series-key", "device_id")
	ctx := context.Background()
	l, err := lake.Open(ctx, wh, lake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	where, _ := lake.ParseWhere([]string{"device_id=dev-01-01"})
	for _, tty := range []bool{true, false} {
		ios, out, errOut := iostreams.Test()
		ios.SetStderrTTY(tty)
		opts := &tables.DeleteOptions{Output: tables.Output{IO: ios}, Lake: l, Table: lake.TableName{Namespace: "iot", Name: "readings"},
			Predicate: lake.DeletePredicate{Where: where}, DryRun: true, ProgressMinBytes: 1}
		if err := tables.RunDelete(ctx, opts); err != nil {
			t.Fatal(err)
		}
		shown := strings.Contains(errOut.String(), " files read, ")
		if shown != tty || !strings.HasPrefix(out.String(), "would delete ") {
			t.Errorf("stderr a terminal: %v; stderr %q, stdout %q", tty, errOut.String(), out.String())
		}
	}
}
