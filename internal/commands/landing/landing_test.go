package landing_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

type result struct {
	code        cmdutil.ExitCode
	out, errOut string
}

func run(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	ios, out, errOut := iostreams.Test()
	code := commands.Execute(context.Background(), args, ios, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	return result{code, out.String(), errOut.String()}
}

// quarantined makes a landing folder with files quarantined by ingest's
// Bucket.Quarantine: two with reports under the default prefix.
func quarantined(t *testing.T) (string, storage.Store) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "landing")
	st, err := storage.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := &landing.Bucket{Store: st}
	for i, k := range []string{"gw-1/a.csv", "gw-2/b.csv"} {
		if _, err := st.Put(context.Background(), k, strings.NewReader("time,v\n"), storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		rep := landing.Report{Reason: k + `: column "battery": not in the table schema`, At: time.Date(2026, 1, 5, 10, i, 0, 0, time.UTC)}
		if _, err := b.Quarantine(context.Background(), k, rep); err != nil {
			t.Fatal(err)
		}
	}
	return dir, st
}

func TestRejectedCommand(t *testing.T) {
	dir, _ := quarantined(t)
	env := map[string]string{"LANDING_BUCKET": dir}
	r := run(t, env, "landing", "rejected")
	want := "key\tsize_bytes\tquarantined_at\treason\tquarantined_to\tkind\tloaded_snapshot\tloaded_at\n" +
		"gw-1/a.csv\t7\t2026-01-05T10:00:00.000Z\tgw-1/a.csv: column \"battery\": not in the table schema\t_rejected/gw-1/a.csv\t\t\t\n" +
		"gw-2/b.csv\t7\t2026-01-05T10:01:00.000Z\tgw-2/b.csv: column \"battery\": not in the table schema\t_rejected/gw-2/b.csv\t\t\t\n"
	if r.code != cmdutil.ExitOK || r.out != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.out, want, r.errOut)
	}
	r = run(t, env, "landing", "rejected", "--json")
	var rows []landing.Rejected
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil || len(rows) != 2 || rows[1].Report != "_rejected/gw-2/b.csv.error.json" {
		t.Errorf("--json: %v %+v\n%s", err, rows, r.out)
	}
	missing := run(t, map[string]string{"LANDING_BUCKET": t.TempDir() + "/missing"}, "landing", "rejected")
	if missing.code != cmdutil.ExitFailed || !strings.Contains(missing.errOut, "Fix: create the folder, or fix LANDING_BUCKET") {
		t.Errorf("missing folder: exit %d, stderr %q", missing.code, missing.errOut)
	}
	empty := run(t, map[string]string{"LANDING_BUCKET": t.TempDir() + "/", "TIMELAKE_QUARANTINE_PREFIX": "other/"}, "landing", "rejected", "--json")
	if strings.TrimSpace(empty.out) != "[]" {
		t.Errorf("empty --json: exit %d, %q %q", empty.code, empty.out, empty.errOut)
	}
}

func TestRequeueCommand(t *testing.T) {
	dir, st := quarantined(t)
	env := map[string]string{"LANDING_BUCKET": dir}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"landing", "requeue"}, "name the files to requeue (KEY...), or give --all to requeue every quarantined file, or select them with --prefix, --reason or --since"},
		{[]string{"landing", "requeue", "--all", "gw-1/a.csv"}, "give either the files to requeue (KEY...) or --all and the filters (--prefix, --reason, --since), not both"},
		{[]string{"landing", "requeue", "gw-9/z.csv"}, "gw-9/z.csv is not a quarantined file"},
	} {
		if r := run(t, env, tc.args...); r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and %q", tc.args, r.code, r.errOut, tc.msg)
		}
	}
	// A gateway sent b again: it is not overwritten (exit 3).
	if _, err := st.Put(context.Background(), "gw-2/b.csv", strings.NewReader("new"), storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	r := run(t, env, "landing", "requeue", "--all", "--json")
	var rep struct {
		Files []struct {
			Key, Status string
		}
		Requeued, NotRequeued int `json:"-"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != cmdutil.ExitPartial || len(rep.Files) != 2 ||
		rep.Files[0].Status != landing.Requeued || rep.Files[1].Status != landing.NotRequeued {
		t.Fatalf("exit %d, %v, %s\nstderr: %s", r.code, err, r.out, r.errOut)
	}
	// By the quarantined copy's key, once the key is free.
	if err := st.Delete(context.Background(), "gw-2/b.csv"); err != nil {
		t.Fatal(err)
	}
	r = run(t, env, "landing", "requeue", "_rejected/gw-2/b.csv")
	if r.code != cmdutil.ExitOK || r.out != "key\tstatus\treason\tquarantined_to\ngw-2/b.csv\trequeued\t\t_rejected/gw-2/b.csv\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.out, r.errOut)
	}
	if r := run(t, env, "landing", "rejected", "--json"); strings.TrimSpace(r.out) != "[]" {
		t.Errorf("still quarantined: %s", r.out)
	}
}

// Two quarantined copies of one key: the table names the copy each line
// is about.
func TestRequeueTwoCopiesNamesEach(t *testing.T) {
	dir, st := quarantined(t)
	b := &landing.Bucket{Store: st}
	var copies []string
	for i := range 2 {
		if _, err := st.Put(context.Background(), "gw-3/c.csv", strings.NewReader("time,v\n"), storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		to, err := b.Quarantine(context.Background(), "gw-3/c.csv", landing.Report{Reason: "bad", At: time.Date(2026, 1, 5, 11, i, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		copies = append(copies, to)
	}
	r := run(t, map[string]string{"LANDING_BUCKET": dir}, "landing", "requeue", "gw-3/c.csv")
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if r.code != cmdutil.ExitPartial || len(lines) != 3 || lines[0] != "key\tstatus\treason\tquarantined_to" {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", r.code, r.out, r.errOut)
	}
	got := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		got[f[1]] = f[len(f)-1]
	}
	if got[landing.Requeued] == "" || got[landing.NotRequeued] == "" || got[landing.Requeued] == got[landing.NotRequeued] ||
		!strings.Contains(strings.Join(copies, " "), got[landing.Requeued]) || !strings.Contains(strings.Join(copies, " "), got[landing.NotRequeued]) {
		t.Errorf("copies %v, stdout:\n%s", copies, r.out)
	}
}

// TestQuarantineHousekeeping walks what an operator does with the
// quarantine: a file whose key was loaded since (a corrected file sent
// under the same key) is marked and never requeued; requeue --all skips a
// file that is broken itself but requeues one a setting refused; filters
// select; a dry run changes nothing; discard archives below
// _timelake/discarded/ (never loaded, no longer listed) or deletes.
func TestQuarantineHousekeeping(t *testing.T) {
	dir := t.TempDir()
	land := filepath.Join(dir, "landing")
	env := map[string]string{"LANDING_BUCKET": land, "TIMELAKE_WAREHOUSE": filepath.Join(dir, "lake"), "TIMELAKE_TABLE": "iot.readings",
		"TIMELAKE_SERIES_KEY": "device_id"}
	old := time.Now().Add(-time.Hour)
	drop := func(key, body string) {
		t.Helper()
		p := filepath.Join(land, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	const header = "time,device_id,temperature_c\n"
	drop("gw-1/good.csv", header+"2026-01-05T10:00:00Z,a,1.5\n")
	drop("gw-1/semi.csv", "time;device_id;temperature_c\n2026-01-05T10:01:00Z;a;2.5\n")
	drop("gw-2/cut.csv.gz", "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03broken")
	drop("gw-2/fixed.csv", "time,device_id,temperature_c,humidity\n2026-01-05T10:02:00Z,b,3.5,40\n")
	// A short row: no setting reads it, only --on-error skip-rows loads
	// the file's other rows.
	drop("gw-3/short.csv", header+"2026-01-05T10:03:00Z,c,4.5\n2026-01-05T10:04:00Z,c\n")
	if r := run(t, env, "ingest"); r.code != cmdutil.ExitPartial {
		t.Fatalf("ingest: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	// The gateway sends a corrected gw-2/fixed.csv under the same key.
	drop("gw-2/fixed.csv", header+"2026-01-05T10:02:00Z,b,3.5\n")
	if r := run(t, env, "ingest"); r.code != cmdutil.ExitOK || !strings.Contains(r.out, "loaded          gw-2/fixed.csv") {
		t.Fatalf("ingest of the corrected file: exit %d\n%s%s", r.code, r.out, r.errOut)
	}

	rejected := func(args ...string) map[string]landing.Rejected {
		t.Helper()
		r := run(t, env, append([]string{"landing", "rejected", "--json"}, args...)...)
		var rows []landing.Rejected
		if err := json.Unmarshal([]byte(r.out), &rows); err != nil || r.code != cmdutil.ExitOK {
			t.Fatalf("rejected %v: exit %d, %v\n%s%s", args, r.code, err, r.out, r.errOut)
		}
		out := map[string]landing.Rejected{}
		for _, row := range rows {
			out[row.Key] = row
		}
		return out
	}
	rows := rejected()
	if len(rows) != 4 || rows["gw-1/semi.csv"].Kind != landing.KindSetting || rows["gw-2/cut.csv.gz"].Kind != landing.KindFile ||
		rows["gw-3/short.csv"].Kind != landing.KindRow ||
		rows["gw-2/fixed.csv"].Loaded == nil || !rows["gw-2/fixed.csv"].Loaded.Since || rows["gw-1/semi.csv"].Loaded != nil {
		t.Fatalf("rejected: %+v", rows)
	}
	if r := run(t, env, "landing", "rejected"); !strings.Contains(r.out, "\t_rejected/gw-2/fixed.csv\tsetting\t"+strconv.FormatInt(rows["gw-2/fixed.csv"].Loaded.SnapshotID, 10)+"\t") {
		t.Errorf("the pipe form does not mark the loaded key:\n%s", r.out)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--prefix", "gw-1/"}, []string{"gw-1/semi.csv"}},
		{[]string{"--reason", "GZIP"}, []string{"gw-2/cut.csv.gz"}},
		{[]string{"--since", "2999-01-01"}, nil},
		{[]string{"--since", "1h", "--prefix", "gw-2/"}, []string{"gw-2/cut.csv.gz", "gw-2/fixed.csv"}},
	} {
		got := slices.Sorted(maps.Keys(rejected(tc.args...)))
		if !slices.Equal(got, tc.want) {
			t.Errorf("rejected %v: %v, want %v", tc.args, got, tc.want)
		}
	}

	type requeued struct {
		DryRun                         bool `json:"dry_run"`
		Files                          []landing.RequeueResult
		Requeued, NotRequeued, Skipped int `json:"-"`
	}
	requeue := func(code cmdutil.ExitCode, args ...string) map[string]landing.RequeueResult {
		t.Helper()
		r := run(t, env, append([]string{"landing", "requeue", "--json"}, args...)...)
		var rep requeued
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != code {
			t.Fatalf("requeue %v: exit %d, %v\n%s%s", args, r.code, err, r.out, r.errOut)
		}
		out := map[string]landing.RequeueResult{}
		for _, f := range rep.Files {
			out[f.Key] = f
		}
		return out
	}
	res := requeue(cmdutil.ExitOK, "--all", "--dry-run")
	if res["gw-1/semi.csv"].Status != landing.WouldRequeue || res["gw-2/cut.csv.gz"].Status != landing.Skipped ||
		!strings.Contains(res["gw-2/cut.csv.gz"].Reason, "the file itself is broken") || res["gw-2/fixed.csv"].Status != landing.Skipped ||
		!strings.Contains(res["gw-2/fixed.csv"].Reason, "its key was loaded since it was quarantined (snapshot ") ||
		res["gw-3/short.csv"].Status != landing.Skipped ||
		!strings.Contains(res["gw-3/short.csv"].Reason, "wrong number of fields") ||
		!strings.Contains(res["gw-3/short.csv"].Reason, "it is refused again unless ingest runs with --on-error skip-rows") {
		t.Fatalf("dry run: %+v", res)
	}
	if len(rejected()) != 4 {
		t.Fatal("the dry run moved files")
	}
	res = requeue(cmdutil.ExitPartial, "--all")
	if len(res) != 4 || res["gw-1/semi.csv"].Status != landing.Requeued || res["gw-2/cut.csv.gz"].Status != landing.Skipped || res["gw-2/fixed.csv"].Status != landing.Skipped ||
		res["gw-3/short.csv"].Status != landing.Skipped {
		t.Fatalf("requeue --all: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(land, "gw-1", "semi.csv")); err != nil {
		t.Errorf("semi.csv not back: %v", err)
	}
	// Named, a loaded key is still skipped; a broken file is requeued.
	if res := requeue(cmdutil.ExitPartial, "gw-2/fixed.csv"); res["gw-2/fixed.csv"].Status != landing.Skipped {
		t.Errorf("named loaded key: %+v", res)
	}
	if r := run(t, env, "landing", "requeue", "gw-2/fixed.csv"); !strings.Contains(r.out, "gw-2/fixed.csv\tskipped\tits key was loaded since") {
		t.Errorf("requeue's line does not say why:\n%s", r.out)
	}

	// Discard: archived with its report, no longer listed, never loaded.
	r := run(t, env, "landing", "discard", "gw-2/fixed.csv")
	if r.code != cmdutil.ExitOK || r.out != "key\tstatus\tarchived_to\tquarantined_to\treason\ngw-2/fixed.csv\tarchived\t_timelake/discarded/gw-2/fixed.csv\t_rejected/gw-2/fixed.csv\t\n" {
		t.Fatalf("discard: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	for _, k := range []string{"_timelake/discarded/gw-2/fixed.csv", "_timelake/discarded/gw-2/fixed.csv.error.json"} {
		if _, err := os.Stat(filepath.Join(land, filepath.FromSlash(k))); err != nil {
			t.Errorf("not archived: %v", err)
		}
	}
	if _, ok := rejected()["gw-2/fixed.csv"]; ok {
		t.Error("a discarded file is still listed")
	}
	if r := run(t, env, "ingest", "--dry-run"); strings.Contains(r.out, "discarded") {
		t.Errorf("ingest would load an archived file:\n%s", r.out)
	}
	if r := run(t, env, "landing", "discard", "--all", "--delete", "--dry-run"); r.code != cmdutil.ExitOK || !strings.Contains(r.out, "gw-2/cut.csv.gz\twould-delete") {
		t.Errorf("discard --delete --dry-run: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	if r := run(t, env, "landing", "discard", "--all", "--delete", "--json"); r.code != cmdutil.ExitOK || !strings.Contains(r.out, `"status":"deleted"`) {
		t.Errorf("discard --delete: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	if len(rejected()) != 0 {
		t.Errorf("left in quarantine: %v", rejected())
	}
	if _, err := os.Stat(filepath.Join(land, "_rejected", "gw-2", "cut.csv.gz")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("deleted file still there: %v", err)
	}
	for _, args := range [][]string{{"landing", "discard"}, {"landing", "discard", "--prefix", "gw/", "x.csv"}} {
		if r := run(t, env, args...); r.code != cmdutil.ExitUsage {
			t.Errorf("%v: exit %d, want 2", args, r.code)
		}
	}
}

// TestRequeueAndDiscardOddKeysPerFile: a file quarantined from a key with
// a tab (kept under a hashed name) is requeued by a dry run as the real
// requeue puts it back, with --all and with --reason; discard's dry run
// takes it too; a copy that cannot be put back (its report names a key
// ingest skips) fails alone, on its own line, while the others are
// reported, and the command exits 3. On a local folder and the S3 server.
func TestRequeueAndDiscardOddKeysPerFile(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) (storage.Store, map[string]string){
		"local": func(t *testing.T) (storage.Store, map[string]string) {
			dir := filepath.Join(t.TempDir(), "landing")
			st, err := storage.NewLocalStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			return st, map[string]string{"LANDING_BUCKET": dir}
		},
		"s3": func(t *testing.T) (storage.Store, map[string]string) {
			srv := s3test.FromEnv(t)
			bucket := srv.NewBucket(t)
			return storage.NewS3Store(srv.Client(t), bucket, "", storage.S3StoreOptions{}),
				map[string]string{"AWS_ENDPOINT_URL_S3": srv.Endpoint, "AWS_REGION": srv.Region,
					"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey, "LANDING_BUCKET": "s3://" + bucket}
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st, env := open(t)
			b := &landing.Bucket{Store: st}
			for _, k := range []string{"gw/a.csv", "gw/tab\there.csv"} {
				if _, err := st.Put(ctx, k, strings.NewReader("time,v\nx,warm\n"), storage.PutOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := b.Quarantine(ctx, k, landing.Report{Reason: k + `: row 1, column "v": cannot parse "warm" as a double`, Kind: landing.KindSetting, At: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			for _, args := range [][]string{{"--all", "--dry-run"}, {"--reason", "warm", "--dry-run"}} {
				r := run(t, env, append([]string{"landing", "requeue", "--json"}, args...)...)
				var rep struct {
					Files  []landing.RequeueResult `json:"files"`
					Failed int                     `json:"failed"`
				}
				if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != cmdutil.ExitOK || len(rep.Files) != 2 || rep.Failed != 0 {
					t.Fatalf("requeue %v: exit %d, %+v (%v)\n%s%s", args, r.code, rep, err, r.out, r.errOut)
				}
				for _, f := range rep.Files {
					if f.Status != landing.WouldRequeue {
						t.Errorf("requeue %v: %+v, want %s", args, f, landing.WouldRequeue)
					}
				}
			}
			if r := run(t, env, "landing", "discard", "--all", "--dry-run"); r.code != cmdutil.ExitOK ||
				!strings.Contains(r.out, "gw/a.csv\twould-archive") || !strings.Contains(r.out, "gw/tab here.csv\twould-archive") { // a tab in a cell is a space
				t.Fatalf("discard --dry-run: exit %d\n%s%s", r.code, r.out, r.errOut)
			}

			// A report whose key ingest would not load: that copy fails
			// alone, on its line, and the others are still requeued.
			if _, err := st.Put(ctx, "gw/.hidden.csv", strings.NewReader("time,v\n"), storage.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Quarantine(ctx, "gw/.hidden.csv", landing.Report{Reason: "warm", Kind: landing.KindSetting, At: time.Now()}); err != nil {
				t.Fatal(err)
			}
			for _, dry := range []bool{true, false} {
				args := []string{"landing", "requeue", "--all"}
				if dry {
					args = append(args, "--dry-run")
				}
				r := run(t, env, args...)
				lines := strings.Split(strings.TrimSuffix(r.out, "\n"), "\n")
				if r.code != cmdutil.ExitPartial || len(lines) != 4 ||
					!strings.Contains(r.out, "gw/.hidden.csv\tfailed\trequeue _rejected/gw/.hidden.csv: \"gw/.hidden.csv\" is not a landing key ingest loads") {
					t.Fatalf("requeue %v: exit %d\n%s%s", args, r.code, r.out, r.errOut)
				}
			}
			ks := map[string]bool{}
			if err := st.List(ctx, "gw/", func(o storage.ObjectInfo) error { ks[o.Key] = true; return nil }); err != nil {
				t.Fatal(err)
			}
			if !ks["gw/a.csv"] || !ks["gw/tab\there.csv"] || ks["gw/.hidden.csv"] {
				t.Fatalf("landing keys after requeue: %v", slices.Sorted(maps.Keys(ks)))
			}
		})
	}
}

// TestRequeueDryRunOfTwoCopies: of a key quarantined twice, the dry run
// puts back one copy and not the other, as the requeue does.
func TestRequeueDryRunOfTwoCopies(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "landing")
	st, err := storage.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"LANDING_BUCKET": dir}
	b := &landing.Bucket{Store: st}
	for i := range 2 {
		if _, err := st.Put(ctx, "gw/a.csv", strings.NewReader(fmt.Sprintf("time,v\nx,warm%d\n", i)), storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Quarantine(ctx, "gw/a.csv", landing.Report{Reason: "warm", Kind: landing.KindSetting, At: time.Now(), Size: 14, SHA256: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	statuses := func(args ...string) []string {
		t.Helper()
		r := run(t, env, append([]string{"landing", "requeue", "--json", "--all"}, args...)...)
		var rep struct {
			Files []landing.RequeueResult `json:"files"`
		}
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
			t.Fatalf("requeue %v: %v\n%s%s", args, err, r.out, r.errOut)
		}
		var out []string
		for _, f := range rep.Files {
			out = append(out, f.Status)
		}
		slices.Sort(out)
		return out
	}
	dry := statuses("--dry-run")
	if real := statuses(); !slices.Equal(dry, []string{landing.NotRequeued, landing.WouldRequeue}) || !slices.Equal(real, []string{landing.NotRequeued, landing.Requeued}) {
		t.Fatalf("dry run %v, requeue %v", dry, real)
	}
}
