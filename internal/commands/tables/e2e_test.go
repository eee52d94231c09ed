package tables_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

const examples = "../../../examples/landing"

// copyLanding copies the example files whose keys start with prefix into a
// new landing folder and returns it with the copied keys, sorted.
func copyLanding(t *testing.T, prefix string) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "landing")
	var keys []string
	err := filepath.WalkDir(examples, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(examples, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		keys = append(keys, key)
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if len(keys) == 0 {
		t.Fatalf("no example files under %s with prefix %q", examples, prefix)
	}
	return dir, keys
}

type result struct {
	code        cmdutil.ExitCode
	out, errOut string
}

// timelake runs the CLI in-process, as main does, with env as the whole
// environment. The landing files of these tests are complete when they are
// written: ingest's settle time is 0 unless env sets one.
func timelake(t *testing.T, env map[string]string, tty bool, args ...string) result {
	t.Helper()
	ios, out, errOut := iostreams.Test()
	ios.SetStdoutTTY(tty)
	code := commands.Execute(context.Background(), args, ios, func(k string) (string, bool) {
		v, ok := env[k]
		if !ok && k == "TIMELAKE_SETTLE_TIME" {
			return "0", true
		}
		return v, ok
	})
	return result{code, out.String(), errOut.String()}
}

func mustRun(t *testing.T, env map[string]string, tty bool, args ...string) string {
	t.Helper()
	r := timelake(t, env, tty, args...)
	if r.code != cmdutil.ExitOK {
		t.Fatalf("timelake %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.out, r.errOut)
	}
	return r.out
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("output is not the expected JSON: %v\n%s", err, s)
	}
	if dec.More() {
		t.Fatalf("more than one JSON document:\n%s", s)
	}
	return v
}

type batchJSON struct {
	BatchID    string      `json:"batch_id"`
	SnapshotID json.Number `json:"snapshot_id"`
	Rows       int64       `json:"rows"`
	Source     string      `json:"source"`
	SourceSize int64       `json:"source_size"`
	Loaded     *bool       `json:"loaded"` // tables batch only
}

func batchIDs(rows []batchJSON) []string {
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.BatchID)
	}
	slices.Sort(ids)
	return ids
}

// pipeColumn returns column i of a tab-separated output without its header.
func pipeColumn(t *testing.T, out string, i int) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var col []string
	for _, l := range lines[1:] {
		col = append(col, strings.Split(l, "\t")[i])
	}
	return col
}

func TestTablesAfterIngestLocal(t *testing.T) {
	landing, keys := copyLanding(t, "")
	wh := filepath.Join(t.TempDir(), "lake")
	env := map[string]string{"TIMELAKE_WAREHOUSE": wh, "TIMELAKE_TABLE": "iot.readings", "LANDING_BUCKET": landing,
		"TIMELAKE_MAINTENANCE_BUDGET": "0"} // the table as ingest loaded it, not compacted
	mustRun(t, env, false, "ingest", "--series-key", "device_id")

	// batches: exactly the landing keys, in a pipe and as JSON.
	out := mustRun(t, env, false, "tables", "batches")
	if got := pipeColumn(t, out, 0); !slices.Equal(sorted(got), keys) {
		t.Errorf("tables batches listed %v, want %v", got, keys)
	}
	rows := decode[[]batchJSON](t, mustRun(t, env, false, "tables", "batches", "iot.readings", "--json"))
	if got := batchIDs(rows); !slices.Equal(got, keys) {
		t.Errorf("tables batches --json listed %v, want %v", got, keys)
	}
	if got := batchIDs(decode[[]batchJSON](t, mustRun(t, env, false, "tables", "batches", "--prefix", "gateway-2/", "--json"))); !slices.Equal(got,
		[]string{"gateway-2/20260105T1000.csv.gz", "gateway-2/20260105T1100.csv"}) {
		t.Errorf("--prefix gateway-2/: %v", got)
	}

	// batch: one id, loaded with its rows.
	st := decode[batchJSON](t, mustRun(t, env, false, "tables", "batch", "iot.readings", "gateway-1/20260105T1000.csv", "--json"))
	if st.Loaded == nil || !*st.Loaded || st.Rows != 300 || st.SnapshotID == "" {
		t.Errorf("batch gateway-1/20260105T1000.csv: %+v", st)
	}
	out = mustRun(t, env, true, "tables", "batch", "gateway-3/20260105T1000.parquet")
	if !strings.HasPrefix(out, "gateway-3/20260105T1000.parquet: loaded into iot.readings in snapshot ") || !strings.Contains(out, ", 300 rows, 1 data file, ") {
		t.Errorf("batch on a terminal: %q", out)
	}

	// An unknown id: "not loaded", exit 4, and the printed answer is the
	// only message.
	r := timelake(t, env, true, "tables", "batch", "gateway-7/20260105T1000.csv")
	if r.code != cmdutil.ExitNotLoaded || r.errOut != "" ||
		r.out != "gateway-7/20260105T1000.csv: not loaded into iot.readings (neither a snapshot in the current ancestry nor the load history has this batch id)\n" {
		t.Errorf("unknown id: exit %d, stdout %q, stderr %q", r.code, r.out, r.errOut)
	}
	r = timelake(t, env, false, "tables", "batch", "gateway-7/20260105T1000.csv")
	if r.code != 4 || r.errOut != "" || r.out != "batch_id\tstatus\tsnapshot_id\tcommitted_at\trows\tdata_files\tsize_bytes\tsource\tsource_size\tsource_sha256\n"+
		"gateway-7/20260105T1000.csv\tnot-loaded\t\t\t\t\t\t\t\t\n" {
		t.Errorf("unknown id in a pipe: exit %d, stdout %q, stderr %q", r.code, r.out, r.errOut)
	}
	r = timelake(t, env, false, "tables", "batch", "gateway-7/20260105T1000.csv", "--json")
	if st := decode[batchJSON](t, r.out); r.code != 4 || st.Loaded == nil || *st.Loaded {
		t.Errorf("unknown id with --json: exit %d, %+v", r.code, st)
	}

	// show: contract, partition spec and sort order of the table ingest made.
	out = mustRun(t, env, true, "tables", "show")
	for _, want := range []string{
		"Table:             iot.readings\n",
		"Catalog:           metadata files\n",
		"\nPartition spec (id 0)\n  day(time)  (time_day)\n",
		"\nSort order (id 1)\n  device_id asc nulls-first, time asc nulls-first\n",
		"\nTimelake contract\n  timelake.chunk        day\n  timelake.series-key   device_id\n  timelake.time-column  time\n",
		"\nTotals\n  2100 rows in 7 data files, ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tables show lacks %q:\n%s", want, out)
		}
	}
	detail := decode[struct {
		PartitionSpec struct{ Fields []struct{ Expr string } } `json:"partition_spec"`
		SortOrder     struct{ Fields []struct{ Expr string } } `json:"sort_order"`
		Contract      map[string]string                        `json:"contract"`
		Totals        struct{ Rows, DataFiles int64 }          `json:"totals"`
	}](t, mustRun(t, env, false, "tables", "show", "iot.readings", "--json"))
	if len(detail.PartitionSpec.Fields) != 1 || detail.PartitionSpec.Fields[0].Expr != "day(time)" ||
		len(detail.SortOrder.Fields) != 2 || detail.Contract[lake.PropTimeColumn] != "time" ||
		detail.Contract[lake.PropSeriesKey] != "device_id" || detail.Totals.Rows != 2100 {
		t.Errorf("tables show --json: %+v", detail)
	}

	// list and files.
	list := decode[[]struct {
		Table     string
		Rows      int64
		DataFiles int64 `json:"data_files"`
	}](t, mustRun(t, env, false, "tables", "list", "--json"))
	if len(list) != 1 || list[0].Table != "iot.readings" || list[0].Rows != 2100 || list[0].DataFiles != 7 {
		t.Errorf("tables list --json: %+v", list)
	}
	files := decode[[]struct {
		Partition string
		Rows      int64
		Path      string
	}](t, mustRun(t, env, false, "tables", "files", "--json"))
	perPartition := map[string]int{}
	for _, f := range files {
		perPartition[f.Partition]++
		if f.Rows != 300 || !strings.HasPrefix(f.Path, "file://") {
			t.Errorf("file %+v", f)
		}
	}
	if len(files) != 7 || perPartition["time_day=2026-01-05"] != 6 || perPartition["time_day=2026-01-06"] != 1 {
		t.Errorf("tables files --json: %v", perPartition)
	}
	out = mustRun(t, env, true, "tables", "files")
	if !strings.Contains(out, "\n7 data files in 2 partitions, 2100 rows, ") {
		t.Errorf("tables files summary:\n%s", out)
	}

	// Roll the current snapshot back to its parent: the abandoned batch id
	// is not loaded any more.
	ctx := context.Background()
	l, err := lake.Open(ctx, wh, lake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := l.LoadTable(ctx, lake.TableName{Namespace: "iot", Name: "readings"})
	if err != nil {
		t.Fatal(err)
	}
	cur := tbl.Metadata().CurrentSnapshot()
	abandoned := cur.Summary.Properties[lake.SummaryBatchID]
	if err := tbl.RollbackTo(ctx, *cur.ParentSnapshotID); err != nil {
		t.Fatal(err)
	}
	r = timelake(t, env, true, "tables", "batch", abandoned)
	if r.code != cmdutil.ExitNotLoaded || !strings.Contains(r.out, abandoned+": not loaded into iot.readings") {
		t.Errorf("after rollback, %s: exit %d, %q", abandoned, r.code, r.out)
	}
	ids := batchIDs(decode[[]batchJSON](t, mustRun(t, env, false, "tables", "batches", "--json")))
	if want := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == abandoned }); !slices.Equal(ids, want) {
		t.Errorf("after rollback, batches %v, want %v", ids, want)
	}
	snaps := decode[[]struct {
		BatchID *string `json:"batch_id"`
		State   string
	}](t, mustRun(t, env, false, "tables", "snapshots", "--json"))
	if len(snaps) != 7 || *snaps[0].BatchID != abandoned || snaps[0].State != "abandoned" || snaps[1].State != "current" {
		t.Errorf("after rollback, snapshots %+v", snaps)
	}
	if got := decode[[]struct{ State string }](t, mustRun(t, env, false, "tables", "snapshots", "--limit", "1", "--json")); len(got) != 1 {
		t.Errorf("--limit 1: %+v", got)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestTablesCreate(t *testing.T) {
	wh := filepath.Join(t.TempDir(), "lake")
	env := map[string]string{"TIMELAKE_WAREHOUSE": wh}
	sample := filepath.Join(examples, "gateway-1", "20260105T1000.csv")
	out := mustRun(t, env, false, "tables", "create", "iot.sample", "--from-file", sample, "--series-key", "device_id")
	want := "created table iot.sample at file://" + filepath.ToSlash(filepath.Join(wh, "iot", "sample")) + " from " + sample + "\n" +
		"  time column time, partition day(time), series key device_id\n" +
		"  time                 timestamptz not null\n" +
		"  device_id            string\n" +
		"  temperature_c        double\n" +
		"  humidity_pct         double\n" +
		"  battery_v            double\n"
	if out != want {
		t.Errorf("tables create printed:\n%s\nwant:\n%s", out, want)
	}
	show := mustRun(t, env, true, "tables", "show", "iot.sample")
	for _, w := range []string{"  day(time)  (time_day)\n", "  device_id asc nulls-first, time asc nulls-first\n", "  none (no data yet)\n"} {
		if !strings.Contains(show, w) {
			t.Errorf("show of the created table lacks %q:\n%s", w, show)
		}
	}
	// Ingest appends to it: same schema.
	landing, _ := copyLanding(t, "gateway-1/")
	env2 := map[string]string{"TIMELAKE_WAREHOUSE": wh, "TIMELAKE_TABLE": "iot.sample", "LANDING_BUCKET": landing, "TIMELAKE_MAINTENANCE_BUDGET": "0"}
	mustRun(t, env2, false, "ingest", "--no-create")
	if got := pipeColumn(t, mustRun(t, env2, false, "tables", "batches"), 3); !slices.Equal(got, []string{"300", "300"}) {
		t.Errorf("rows of the batches loaded into the created table: %v", got)
	}

	r := timelake(t, env, false, "tables", "create", "iot.sample", "--from-file", sample)
	if r.code != cmdutil.ExitFailed || !strings.Contains(r.errOut, "table already exists") {
		t.Errorf("second create: exit %d, stderr %q", r.code, r.errOut)
	}
	r = timelake(t, env, false, "tables", "create", "iot.other", "--from-file", sample, "--series-key", "site")
	if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, `--series-key site: `) || !strings.Contains(r.errOut, `has no column "site" (its columns: time,`) {
		t.Errorf("create with a missing series key: exit %d, stderr %q", r.code, r.errOut)
	}

	pq := filepath.Join(examples, "gateway-3", "20260105T1000.parquet")
	created := decode[struct {
		Table      string
		TimeColumn string `json:"time_column"`
		Partition  string
		Columns    []struct{ Name, Type string }
	}](t, mustRun(t, env, false, "tables", "create", "iot.hourly", "--from-file", pq, "--partition", "hour", "--json"))
	if created.Table != "iot.hourly" || created.TimeColumn != "time" || created.Partition != "hour" ||
		len(created.Columns) != 5 || created.Columns[0].Type != "timestamptz" {
		t.Errorf("create --json: %+v", created)
	}
	list := pipeColumn(t, mustRun(t, env, false, "tables", "list"), 0)
	if !slices.Equal(list, []string{"iot.hourly", "iot.sample"}) {
		t.Errorf("tables list: %v", list)
	}
}

// Every bad --column value of tables create is a usage error naming the
// value and what was expected.
func TestTablesCreateBadColumn(t *testing.T) {
	env := map[string]string{"TIMELAKE_WAREHOUSE": filepath.Join(t.TempDir(), "lake")}
	sample := filepath.Join(examples, "gateway-1", "20260105T1000.csv")
	for _, tc := range []struct{ column, msg string }{
		{"temprature_c:double", `--column temprature_c:double: 20260105T1000.csv has no column "temprature_c"; did you mean "temperature_c"? (its columns: time, device_id,`},
		{"pressure:double", `--column pressure:double: 20260105T1000.csv has no column "pressure" (its columns: time,`},
		{"temperature_c:doubel", `temperature_c:doubel: unknown column type "doubel" (expected boolean,`},
		{"time:string", `--column time:string: "time" is the time column, which is always timestamptz (leave it out of --column, or give time:timestamptz)`},
	} {
		r := timelake(t, env, false, "tables", "create", "iot.sample", "--from-file", sample, "--column", tc.column)
		if r.code != cmdutil.ExitUsage || !strings.Contains(strings.ReplaceAll(r.errOut, sample, filepath.Base(sample)), tc.msg) {
			t.Errorf("--column %s: exit %d, stderr %q, want exit 2 and %q", tc.column, r.code, r.errOut, tc.msg)
		}
	}
}

func TestTablesErrors(t *testing.T) {
	wh := filepath.Join(t.TempDir(), "lake")
	r := timelake(t, map[string]string{"TIMELAKE_WAREHOUSE": wh}, false, "tables", "show", "iot.missing")
	if r.code != cmdutil.ExitFailed || !strings.Contains(r.errOut, "table not found") {
		t.Errorf("show of a missing table: exit %d, stderr %q", r.code, r.errOut)
	}
	r = timelake(t, map[string]string{}, false, "tables", "batches", "iot.readings")
	if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "TIMELAKE_WAREHOUSE") {
		t.Errorf("no warehouse: exit %d, stderr %q", r.code, r.errOut)
	}
	// A warehouse folder that does not exist is an error (a mistyped path
	// must not look like an empty warehouse).
	env := map[string]string{"TIMELAKE_WAREHOUSE": wh}
	if r := timelake(t, env, false, "tables", "list"); r.code != cmdutil.ExitFailed || !strings.Contains(r.errOut, "does not exist") {
		t.Errorf("list of a missing warehouse folder: exit %d, stderr %q", r.code, r.errOut)
	}
	if _, err := os.Stat(wh); err == nil {
		t.Error("tables list created the warehouse folder")
	}
	// An empty warehouse lists nothing: [] with --json, a header in a pipe.
	if err := os.MkdirAll(wh, 0o755); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, env, false, "tables", "list", "--json"); out != "[]\n" {
		t.Errorf("empty list --json: %q", out)
	}
	if out := mustRun(t, env, true, "tables", "list"); out != "no tables in "+wh+"\n" {
		t.Errorf("empty list on a terminal: %q", out)
	}
}

// TestTablesS3 ingests two files into an s3:// warehouse on the test S3
// server and reads them back with the tables commands.
func TestTablesS3(t *testing.T) {
	srv := s3test.FromEnv(t)
	bucket := srv.NewBucket(t)
	landing, keys := copyLanding(t, "gateway-1/")
	env := map[string]string{
		"TIMELAKE_WAREHOUSE":    "s3://" + bucket + "/warehouse",
		"TIMELAKE_TABLE":        "iot.readings",
		"LANDING_BUCKET":        landing,
		"AWS_ENDPOINT_URL_S3":   srv.Endpoint,
		"AWS_REGION":            srv.Region,
		"AWS_ACCESS_KEY_ID":     srv.AccessKey,
		"AWS_SECRET_ACCESS_KEY": srv.SecretKey,
	}
	mustRun(t, env, false, "ingest")
	if ids := batchIDs(decode[[]batchJSON](t, mustRun(t, env, false, "tables", "batches", "--json"))); !slices.Equal(ids, keys) {
		t.Errorf("tables batches on S3: %v, want %v", ids, keys)
	}
	out := mustRun(t, env, false, "tables", "batch", keys[0])
	if rows := pipeColumn(t, out, 4); !slices.Equal(rows, []string{"300"}) {
		t.Errorf("tables batch on S3:\n%s", out)
	}
	files := decode[[]struct{ Path string }](t, mustRun(t, env, false, "tables", "files", "--json"))
	if len(files) != 2 || !strings.HasPrefix(files[0].Path, "s3://"+bucket+"/warehouse/iot/readings/data/") {
		t.Errorf("tables files on S3: %+v", files)
	}
	if got := pipeColumn(t, mustRun(t, env, false, "tables", "list"), 1); !slices.Equal(got, []string{"600"}) {
		t.Errorf("tables list on S3: rows %v", got)
	}
	if out := mustRun(t, env, true, "tables", "show"); !strings.Contains(out, "Location:          s3://"+bucket+"/warehouse/iot/readings\n") {
		t.Errorf("tables show on S3:\n%s", out)
	}
}

// TestTablesExpire: expire after an ingest keeps the newest snapshots and
// reports the expired ones, whose batch ids are then listed from the load
// history and still count as loaded; a dry run changes nothing.
func TestTablesExpire(t *testing.T) {
	landing, keys := copyLanding(t, "")
	wh := filepath.Join(t.TempDir(), "lake")
	env := map[string]string{"TIMELAKE_WAREHOUSE": wh, "TIMELAKE_TABLE": "iot.readings", "LANDING_BUCKET": landing,
		"TIMELAKE_MAINTENANCE_BUDGET": "0"} // the table as ingest loaded it, not compacted
	mustRun(t, env, false, "ingest", "--series-key", "device_id")
	time.Sleep(5 * time.Millisecond) // every snapshot is older than --older-than 1ms

	type report struct {
		DryRun         bool `json:"dry_run"`
		Version        int  `json:"version"`
		Kept           int  `json:"kept"`
		Expired        int  `json:"expired"`
		KeysRemembered int  `json:"keys_remembered"`
		Snapshots      []struct {
			BatchID *string `json:"batch_id"`
		} `json:"snapshots"`
	}
	out := mustRun(t, env, true, "tables", "expire", "--older-than", "1ms", "--retain-last", "2", "--dry-run")
	if !strings.HasPrefix(out, "would expire "+strconv.Itoa(len(keys)-2)+" snapshots of iot.readings, committed ") {
		t.Errorf("dry run on a terminal: %q", out)
	}
	if got := decode[[]batchJSON](t, mustRun(t, env, false, "tables", "batches", "--json")); len(got) != len(keys) {
		t.Fatalf("after the dry run %d batches, want %d", len(got), len(keys))
	}

	rep := decode[report](t, mustRun(t, env, false, "tables", "expire", "--older-than", "1ms", "--retain-last", "2", "--json"))
	if rep.DryRun || rep.Kept != 2 || rep.Expired != len(keys)-2 || len(rep.Snapshots) != rep.Expired || rep.KeysRemembered != rep.Expired {
		t.Fatalf("report %+v, want %d expired and 2 kept", rep, len(keys)-2)
	}
	var expired []string
	for _, s := range rep.Snapshots {
		if s.BatchID == nil {
			t.Fatal("an expired snapshot without its batch id")
		}
		expired = append(expired, *s.BatchID)
	}
	var left, remembered []string
	for _, b := range decode[[]batchJSON](t, mustRun(t, env, false, "tables", "batches", "--json")) {
		switch {
		case b.Source == "snapshot":
			left = append(left, b.BatchID)
		case b.Source == "load-history" && b.Rows == 300 && b.SourceSize > 0:
			remembered = append(remembered, b.BatchID)
		default:
			t.Errorf("batch %+v", b)
		}
	}
	if all := sorted(append(slices.Clone(remembered), left...)); len(left) != 2 || !slices.Equal(all, keys) ||
		!slices.Equal(sorted(remembered), sorted(expired)) {
		t.Errorf("expired %v; listed from the snapshots %v and from the load history %v, want the %d landing keys split 2 left",
			expired, left, remembered, len(keys))
	}
	st := decode[batchJSON](t, mustRun(t, env, false, "tables", "batch", expired[0], "--json"))
	if st.Loaded == nil || !*st.Loaded || st.Source != "load-history" || st.Rows != 300 {
		t.Errorf("batch %s after its snapshot expired: %+v", expired[0], st)
	}

	out = mustRun(t, env, false, "tables", "expire")
	if out != "nothing to expire in iot.readings (2 snapshots kept)\n" {
		t.Errorf("expire with the defaults: %q", out)
	}
}

// TestTablesMaintainByHand: a table whose settings keep ingest from
// maintaining it (timelake.auto-maintain=false set with tables alter) is
// left alone by ingest and maintained by tables maintain, which says so;
// alter --dry-run changes nothing, and --unset brings the default back.
func TestTablesMaintainByHand(t *testing.T) {
	landing, _ := copyLanding(t, "gateway-1/")
	wh := filepath.Join(t.TempDir(), "lake")
	env := map[string]string{"TIMELAKE_WAREHOUSE": wh, "TIMELAKE_TABLE": "iot.readings", "LANDING_BUCKET": landing}
	mustRun(t, env, false, "tables", "create", "--from-file", filepath.Join(examples, "gateway-1", "20260105T1000.csv"), "--series-key", "device_id")

	type change struct {
		Property      string
		Before, After *string
		Changed       bool
	}
	type alterJSON struct {
		DryRun     bool `json:"dry_run"`
		Version    int
		Changed    int
		Properties []change
	}
	dry := decode[alterJSON](t, mustRun(t, env, false, "tables", "alter", "--set", "timelake.auto-maintain=false", "--dry-run", "--json"))
	if !dry.DryRun || dry.Changed != 1 || len(dry.Properties) != 1 || dry.Properties[0].Before == nil ||
		*dry.Properties[0].Before != "true" || *dry.Properties[0].After != "false" {
		t.Fatalf("alter --dry-run: %+v", dry)
	}
	out := mustRun(t, env, false, "tables", "alter", "iot.readings", "--set", "timelake.auto-maintain=false", "--set", "commit.manifest.min-count-to-merge=2")
	if want := "property\tbefore\tafter\tchanged\n" +
		"commit.manifest.min-count-to-merge\t4\t2\ttrue\n" +
		"timelake.auto-maintain\ttrue\tfalse\ttrue\n"; out != want {
		t.Fatalf("alter in a pipe:\n%s\nwant:\n%s", out, want)
	}
	// The same change again commits nothing: the version is the first alter's.
	if again := decode[alterJSON](t, mustRun(t, env, false, "tables", "alter", "--set", "timelake.auto-maintain=false", "--json")); again.Changed != 0 ||
		again.Version != dry.Version+1 || again.Properties[0].Changed {
		t.Errorf("alter to the same value: %+v, want nothing changed at v%d", again, dry.Version+1)
	}

	// Two more files of the gateway (other hours): ingest loads the four
	// and maintains nothing.
	for _, name := range []string{"20260105T1200.csv", "20260105T1300.csv"} {
		b, err := os.ReadFile(filepath.Join(examples, "gateway-1", "20260105T1000.csv"))
		if err != nil {
			t.Fatal(err)
		}
		// Another hour of the same device: new rows, new content.
		body := strings.ReplaceAll(string(b), "T10:", "T"+name[9:11]+":")
		if err := os.WriteFile(filepath.Join(landing, "gateway-1", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ing := decode[struct {
		Loaded      int
		Maintenance *struct{ Skipped string }
	}](t, mustRun(t, env, false, "ingest", "--json"))
	if ing.Loaded != 4 || ing.Maintenance == nil || !strings.Contains(ing.Maintenance.Skipped, "timelake.auto-maintain=false") {
		t.Fatalf("ingest: %+v", ing)
	}

	out = mustRun(t, env, true, "tables", "maintain")
	for _, want := range []string{
		"iot.readings: compacted 4 files (",
		"\nnote: the settings of iot.readings keep ingest from maintaining it (timelake.auto-maintain=false); timelake tables alter iot.readings --set timelake.auto-maintain=true lets it\n",
		"\nSettings (maintenance by ingest: off, timelake.auto-maintain=false)\n",
		"  timelake.auto-maintain                false  property\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("maintain on a terminal lacks %q:\n%s", want, out)
		}
	}
	files := decode[[]struct{ Rows int64 }](t, mustRun(t, env, false, "tables", "files", "--json"))
	if len(files) != 1 || files[0].Rows != 1200 {
		t.Errorf("after maintain, files %+v; want one file of 1200 rows", files)
	}
	rep := decode[struct {
		Enabled    bool
		Compaction *struct{ Groups []any }
		Expiry     *struct{ Expired int }
		Settings   []struct{ Property, Value, Source string }
	}](t, mustRun(t, env, false, "tables", "maintain", "--json"))
	if rep.Enabled || rep.Compaction == nil || len(rep.Compaction.Groups) != 0 || rep.Expiry == nil || rep.Expiry.Expired != 0 ||
		len(rep.Settings) != 12 || rep.Settings[0].Source != "property" || rep.Settings[1].Source != "default" {
		t.Errorf("second maintain --json: %+v", rep)
	}

	out = mustRun(t, env, true, "tables", "alter", "--unset", "timelake.auto-maintain")
	if !strings.Contains(out, "timelake.auto-maintain  false   not set (default true)  yes\n") {
		t.Errorf("alter --unset on a terminal:\n%s", out)
	}
	r := timelake(t, env, false, "tables", "alter", "--set", "timelake.bogus=1")
	if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "timelake.bogus: unknown property") || r.out != "" {
		t.Errorf("alter of an unknown key: exit %d, stdout %q, stderr %q", r.code, r.out, r.errOut)
	}
	// A maximum of snapshots below the minimum would bound nothing: the
	// newest timelake.min-snapshots (20 by default) are always kept.
	r = timelake(t, env, false, "tables", "alter", "--set", "timelake.max-snapshots=5")
	if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "timelake.max-snapshots=5 is below timelake.min-snapshots=20") || r.out != "" {
		t.Errorf("alter of max-snapshots below min-snapshots: exit %d, stdout %q, stderr %q", r.code, r.out, r.errOut)
	}
	mustRun(t, env, false, "tables", "alter", "--set", "timelake.max-snapshots=5", "--set", "timelake.min-snapshots=5")
	// The most partitions of one file: a whole number of at least 1.
	for _, v := range []string{"0", "ten", "-3"} {
		r = timelake(t, env, false, "tables", "alter", "--set", "timelake.max-file-partitions="+v)
		if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "timelake.max-file-partitions: \""+v+"\": expected a whole number of at least 1") || r.out != "" {
			t.Errorf("alter of max-file-partitions to %s: exit %d, stdout %q, stderr %q", v, r.code, r.out, r.errOut)
		}
	}
	mustRun(t, env, false, "tables", "alter", "--set", "timelake.max-file-partitions=400")
	// A Parquet codec or level no data file can be written with.
	for _, bad := range [][]string{
		{"--set", "write.parquet.compression-codec=brotly"},
		{"--set", "write.parquet.compression-codec=gzip", "--set", "write.parquet.compression-level=10"},
	} {
		r = timelake(t, env, false, append([]string{"tables", "alter"}, bad...)...)
		if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "table property write.parquet.compression-") || r.out != "" {
			t.Errorf("alter %v: exit %d, stdout %q, stderr %q", bad, r.code, r.out, r.errOut)
		}
	}
	// Stored in lower case, as iceberg-go's writer reads it too.
	if out := mustRun(t, env, false, "tables", "alter", "--set", "write.parquet.compression-codec=GZIP", "--set", "write.parquet.compression-level=9"); !strings.Contains(out, "write.parquet.compression-codec\tzstd\tgzip\ttrue") {
		t.Errorf("alter of the codec to GZIP:\n%s", out)
	}
}

// TestGatewayChangedItsFormat is the walkthrough of docs/schema.md through
// the command line: a table created with --column temperature:double from
// a file of whole numbers takes 22.5 later; a file with a new column is
// quarantined (the reason names the column and --evolve), listed by
// landing rejected, and loaded after tables alter sets timelake.evolve and
// landing requeue --all puts it back; a German Excel export loads with the
// dialect settings.
func TestGatewayChangedItsFormat(t *testing.T) {
	dir := t.TempDir()
	wh, land := filepath.Join(dir, "lake"), filepath.Join(dir, "landing")
	sample := filepath.Join(dir, "sample.csv")
	write := func(p, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(sample, "time,device_id,temperature\n2026-01-05T10:00:00Z,d1,22\n")
	env := map[string]string{"TIMELAKE_WAREHOUSE": wh, "TIMELAKE_TABLE": "iot.readings", "LANDING_BUCKET": land,
		"TIMELAKE_MAINTENANCE_BUDGET": "0", "TIMELAKE_SERIES_KEY": "device_id"}
	out := mustRun(t, env, false, "tables", "create", "--from-file", sample, "--column", "temperature:double")
	if !strings.Contains(out, "  temperature          double\n") {
		t.Fatalf("tables create --column:\n%s", out)
	}
	write(filepath.Join(land, "gw/1.csv"), "time,device_id,temperature\n2026-01-05T10:01:00Z,d1,22.5\n")
	write(filepath.Join(land, "gw/2.csv"), "time,device_id,temperature,battery\n2026-01-05T10:02:00Z,d1,23,80\n")
	write(filepath.Join(land, "gw/3.csv"), "sep=;\ntime;device_id;temperature\n2026-01-05T10:03:00Z;d1;23,5\n2026-01-05T10:04:00Z;d1;NA\n")
	r := timelake(t, env, false, "ingest", "--json")
	if r.code != cmdutil.ExitPartial {
		t.Fatalf("ingest: exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	rep := decode[struct {
		Loaded, Quarantined int
		Files               []struct{ Key, Status, Reason string }
	}](t, r.out)
	if rep.Loaded != 1 || rep.Quarantined != 2 || !strings.Contains(rep.Files[1].Reason, `column "battery": not in the table schema: ingest adds new columns only with --evolve add-columns`) {
		t.Fatalf("ingest report %+v", rep)
	}
	if got := pipeColumn(t, mustRun(t, env, false, "landing", "rejected"), 0); !slices.Equal(got, []string{"gw/2.csv", "gw/3.csv"}) {
		t.Errorf("landing rejected: %v", got)
	}
	mustRun(t, env, false, "tables", "alter", "--set", "timelake.evolve=add-columns")
	mustRun(t, env, false, "landing", "requeue", "--all")
	env["TIMELAKE_CSV_DECIMAL_COMMA"], env["TIMELAKE_CSV_NULL"] = "true", "NA"
	r = timelake(t, env, false, "ingest")
	if r.code != cmdutil.ExitOK || !strings.Contains(r.out, `schema: added "battery" long`) {
		t.Fatalf("ingest after requeue: exit %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	show := mustRun(t, env, false, "tables", "show", "--json")
	for _, want := range []string{`"name":"battery","type":"long"`, `"timelake.evolve":"add-columns"`} {
		if !strings.Contains(strings.ReplaceAll(show, " ", ""), want) {
			t.Errorf("tables show lacks %s:\n%s", want, show)
		}
	}
	if got := slices.Sorted(slices.Values(pipeColumn(t, mustRun(t, env, false, "tables", "batches"), 3))); !slices.Equal(got, []string{"1", "1", "2"}) {
		t.Errorf("rows of the batches: %v", got)
	}
}

// TestJSONSampleMakesTheTable: the JSON Lines gateway's file alone creates a
// table with the columns of the other samples (its measurements have a
// fraction, so they are doubles, and its device ids are strings).
func TestJSONSampleMakesTheTable(t *testing.T) {
	landing, keys := copyLanding(t, "gateway-4/")
	if !slices.Equal(keys, []string{"gateway-4/20260105T1000.jsonl"}) {
		t.Fatalf("gateway-4 holds %v", keys)
	}
	env := map[string]string{"TIMELAKE_WAREHOUSE": filepath.Join(t.TempDir(), "lake"), "TIMELAKE_TABLE": "iot.readings",
		"LANDING_BUCKET": landing, "TIMELAKE_MAINTENANCE_BUDGET": "0"}
	mustRun(t, env, false, "ingest", "--series-key", "device_id")
	show := decode[struct {
		Schema struct {
			Columns []struct{ Name, Type string }
		}
		Totals struct{ Rows int64 }
	}](t, mustRun(t, env, false, "tables", "show", "--json"))
	if got := fmt.Sprint(show.Schema.Columns); got != "[{time timestamptz} {device_id string} {temperature_c double} {humidity_pct double} {battery_v double}]" {
		t.Errorf("columns of the table made from the JSON sample: %s", got)
	}
	if show.Totals.Rows != 300 {
		t.Errorf("%d rows, want 300", show.Totals.Rows)
	}
}
