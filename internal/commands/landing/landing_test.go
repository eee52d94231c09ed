package landing_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
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
	want := "key\tsize_bytes\tquarantined_at\treason\tquarantined_to\n" +
		"gw-1/a.csv\t7\t2026-01-05T10:00:00.000Z\tgw-1/a.csv: column \"battery\": not in the table schema\t_rejected/gw-1/a.csv\n" +
		"gw-2/b.csv\t7\t2026-01-05T10:01:00.000Z\tgw-2/b.csv: column \"battery\": not in the table schema\t_rejected/gw-2/b.csv\n"
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
		{[]string{"landing", "requeue"}, "name the files to requeue (KEY...), or give --all to requeue every quarantined file"},
		{[]string{"landing", "requeue", "--all", "gw-1/a.csv"}, "give either the files to requeue (KEY...) or --all, not both"},
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
