package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	ingestcmd "github.com/timelake/timelake/internal/commands/ingest"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/tablename"
	"github.com/timelake/timelake/internal/testutil/monitortest"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// routedPlace is a landing and a warehouse of the routed tests: local
// folders or buckets of the S3 test server.
type routedPlace struct {
	landing, warehouse string
	env                map[string]string
	store              storage.Store // the landing
	lakeOpts           lake.Options
}

func localPlace(t *testing.T) routedPlace {
	t.Helper()
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := storage.NewLocalStore(landing)
	if err != nil {
		t.Fatal(err)
	}
	return routedPlace{landing: landing, warehouse: filepath.Join(dir, "lake"), env: map[string]string{"TIMELAKE_SETTLE_TIME": "0"}, store: st}
}

func s3Place(t *testing.T) routedPlace {
	t.Helper()
	srv := s3test.FromEnv(t)
	client := srv.Client(t)
	landingBucket, lakeBucket := srv.NewBucket(t), srv.NewBucket(t)
	return routedPlace{landing: "s3://" + landingBucket, warehouse: "s3://" + lakeBucket + "/warehouse",
		env: map[string]string{"AWS_ENDPOINT_URL_S3": srv.Endpoint, "AWS_REGION": srv.Region,
			"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey},
		store: storage.NewS3Store(client, landingBucket, "", storage.S3StoreOptions{}), lakeOpts: lake.Options{S3: client}}
}

func (p routedPlace) put(t *testing.T, key, body string) {
	t.Helper()
	if _, err := p.store.Put(context.Background(), key, strings.NewReader(body), storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

// left is the landing keys outside timelake's folders (the quarantine,
// _timelake/).
func (p routedPlace) left(t *testing.T) []string {
	t.Helper()
	var keys []string
	if err := p.store.List(context.Background(), "", func(o storage.ObjectInfo) error {
		if !strings.HasPrefix(o.Key, "_") {
			keys = append(keys, o.Key)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// table loads table from the warehouse.
func (p routedPlace) table(t *testing.T, table string) *lake.Table {
	t.Helper()
	ctx := context.Background()
	l, err := lake.Open(ctx, p.warehouse, p.lakeOpts)
	if err != nil {
		t.Fatal(err)
	}
	name, err := tablename.Parse(table)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := l.LoadTable(ctx, name)
	if err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	return tbl
}

// rows counts the rows of table.
func (p routedPlace) rows(t *testing.T, table string) int64 {
	t.Helper()
	at, err := p.table(t, table).Iceberg().Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	return at.NumRows()
}

// want checks the rows of each table and the keys left in the landing.
func (p routedPlace) want(t *testing.T, rows map[string]int64, left ...string) {
	t.Helper()
	for table, n := range rows {
		if got := p.rows(t, table); got != n {
			t.Errorf("%s holds %d rows, want %d", table, got, n)
		}
	}
	if got := p.left(t); strings.Join(got, ",") != strings.Join(left, ",") {
		t.Errorf("left in the landing: %v, want %v", got, left)
	}
}

// exec runs timelake with the place's landing, warehouse and variables
// (and extra ones).
func (p routedPlace) exec(t *testing.T, extraEnv map[string]string, args ...string) (cmdutil.ExitCode, string, string) {
	t.Helper()
	env := map[string]string{}
	for k, v := range p.env {
		env[k] = v
	}
	for k, v := range extraEnv {
		env[k] = v
	}
	ios, out, errOut := iostreams.Test()
	args = append([]string{"ingest", "--landing", p.landing, "--warehouse", p.warehouse}, args...)
	code := commands.Execute(context.Background(), args, ios, getenv(env))
	return code, out.String(), errOut.String()
}

// csvRows is a CSV file of n readings (n < 60) in hour h.
func csvRows(n, h int) string {
	var b strings.Builder
	b.WriteString("time,device_id,v\n")
	for i := range n {
		fmt.Fprintf(&b, "2026-01-05T%02d:00:%02dZ,d1,%d\n", h, i, i)
	}
	return b.String()
}

var threeRoutes = []string{"--route", "readings/**=iot.readings", "--route", "events/**=iot.events", "--route", "*/**=iot.{1}"}

// TestRoutedRun: three tables from one landing, on a local folder and on
// S3. Each table's files load into it (exact rows, read back); a key no
// route takes is reported and left; a later run in which one table's
// files are all bad quarantines them and loads the other two (exit 3);
// --json reports every table and the unrouted key.
func TestRoutedRun(t *testing.T) {
	for name, open := range map[string]func(*testing.T) routedPlace{"local": localPlace, "s3": s3Place} {
		t.Run(name, func(t *testing.T) {
			p := open(t)
			p.put(t, "readings/gw1/a.csv", csvRows(3, 10))
			p.put(t, "readings/gw2/b.csv", csvRows(2, 11))
			p.put(t, "events/gw1/e.csv", csvRows(4, 10))
			p.put(t, "meters/m1.csv", csvRows(2, 10))
			p.put(t, "stray.csv", csvRows(1, 10))

			code, out, errOut := p.exec(t, nil, threeRoutes...)
			if code != cmdutil.ExitPartial {
				t.Fatalf("exit %d, want %d (an unrouted key)\n%s\n%s", code, cmdutil.ExitPartial, out, errOut)
			}
			for _, want := range []string{
				`Z unrouted +stray.csv  .*no route takes|Z unrouted +stray.csv  route \*/\*\*=iot.\{1\}: the table needs the key's folder \{1\}`,
				`Z iot.events: 1 loaded \(4 rows\)`, `Z iot.meters: 1 loaded \(2 rows\)`, `Z iot.readings: 2 loaded \(5 rows\)`,
				`Z routes: 3 tables, 3 without a problem; 1 key unrouted, left in the landing; run started`,
			} {
				if !regexp.MustCompile(want).MatchString(out) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if i, j := strings.Index(out, "iot.events:"), strings.Index(out, "iot.readings:"); i < 0 || j < i {
				t.Errorf("tables not in name order:\n%s", out)
			}

			p.put(t, "readings/gw1/c.csv", csvRows(1, 12))
			p.put(t, "events/gw1/bad1.csv", "time,device_id,v\n2026-01-05T12:00:00Z,d1\n")
			p.put(t, "events/gw2/bad2.csv", "time,device_id,v\nnot a time,d1,x,y\n")
			p.put(t, "meters/m2.csv", csvRows(5, 12))
			code, out, errOut = p.exec(t, nil, append(threeRoutes, "--json")...)
			if code != cmdutil.ExitPartial {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, cmdutil.ExitPartial, out, errOut)
			}
			var doc ingestcmd.RoutedReport
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			got := map[string]ingestcmd.TableReport{}
			for _, tr := range doc.Tables {
				got[tr.Table] = tr
			}
			if len(doc.Tables) != 3 || got["iot.events"].Quarantined != 2 || got["iot.events"].ExitCode != int(cmdutil.ExitPartial) ||
				got["iot.readings"].Loaded != 1 || got["iot.meters"].Loaded != 1 || got["iot.meters"].ExitCode != 0 {
				t.Errorf("tables: %s", out)
			}
			if len(doc.Unrouted) != 1 || doc.Unrouted[0].Key != "stray.csv" || len(doc.Routes) != 3 {
				t.Errorf("unrouted %+v, routes %v", doc.Unrouted, doc.Routes)
			}
			p.want(t, map[string]int64{"iot.readings": 6, "iot.events": 4, "iot.meters": 7}, "stray.csv")
		})
	}
}

// TestRouteConflict: a key two routes take to different tables is
// refused naming both routes and left; the keys one route takes load.
func TestRouteConflict(t *testing.T) {
	p := localPlace(t)
	p.put(t, "readings/a.csv", csvRows(2, 10))
	p.put(t, "events/e.csv", csvRows(3, 10))
	code, out, errOut := p.exec(t, nil, "--route", "readings/**=iot.readings", "--route", "*/**=iot.other")
	if code != cmdutil.ExitPartial {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, `unrouted        readings/a.csv  two routes take the key "readings/a.csv": readings/**=iot.readings (table iot.readings) and */**=iot.other (table iot.other)`) {
		t.Errorf("the conflict is not named:\n%s", out)
	}
	p.want(t, map[string]int64{"iot.other": 3}, "readings/a.csv")
}

// TestRoutesFromTheEnvironment: TIMELAKE_ROUTES, one rule per line or
// comma-separated, routes like --route.
func TestRoutesFromTheEnvironment(t *testing.T) {
	p := localPlace(t)
	p.put(t, "readings/a.csv", csvRows(2, 10))
	p.put(t, "events/e.csv", csvRows(3, 10))
	p.put(t, "logs/l.csv", csvRows(1, 10))
	code, out, errOut := p.exec(t, map[string]string{"TIMELAKE_ROUTES": "readings/**=iot.readings\nevents/**=iot.events, logs/=iot.logs"})
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	p.want(t, map[string]int64{"iot.readings": 2, "iot.events": 3, "iot.logs": 1})
}

// TestRoutedDryRun: --dry-run names the table (and the route) of every
// waiting key, and changes nothing.
func TestRoutedDryRun(t *testing.T) {
	p := localPlace(t)
	p.put(t, "readings/a.csv", csvRows(2, 10))
	p.put(t, "meters/m.csv", csvRows(2, 10))
	code, out, errOut := p.exec(t, nil, append(threeRoutes, "--dry-run")...)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"route           meters/m.csv  -> iot.meters (*/**=iot.{1})",
		"route           readings/a.csv  -> iot.readings (readings/**=iot.readings)",
		"iot.readings: dry run, 1 file would be loaded", "iot.meters: dry run, 1 file would be loaded"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if len(p.left(t)) != 2 {
		t.Errorf("a dry run moved files: %v", p.left(t))
	}
}

// TestRouteSettingsRefused: a bad rule is refused naming it, --route with
// --table (or TIMELAKE_TABLE) is refused, and serve refuses
// TIMELAKE_ROUTES; all before a file is touched (exit 2).
func TestRouteSettingsRefused(t *testing.T) {
	p := localPlace(t)
	p.put(t, "readings/a.csv", csvRows(2, 10))
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"bad rule", nil, []string{"--route", "readings/**"}, `route "readings/**": expected PATTERN=TABLE`},
		{"bad table", nil, []string{"--route", "readings/**=iot.{x}"}, `"{x}" in the table "iot.{x}"`},
		{"route and table", nil, []string{"--route", "readings/**=iot.readings", "--table", "iot.t"}, "--table and the routes (readings/**=iot.readings) both name tables"},
		{"routes and TIMELAKE_TABLE", map[string]string{"TIMELAKE_ROUTES": "readings/**=iot.readings", "TIMELAKE_TABLE": "iot.t"}, nil, "TIMELAKE_TABLE"},
		{"bad TIMELAKE_ROUTES", map[string]string{"TIMELAKE_ROUTES": "readings/**=iot.readings,=iot.x"}, nil, `TIMELAKE_ROUTES`},
		{"bad option", nil, []string{"--route", "readings/**=iot.r;partition=week"}, `route "readings/**=iot.r;partition=week": option "partition": invalid partition granularity "week"`},
		{"unknown option", nil, []string{"--route", "readings/**=iot.r;time_column=ts"}, `route "readings/**=iot.r;time_column=ts": unknown option "time_column"`},
		{"option of the run", nil, []string{"--route", "readings/**=iot.r;max-files=3"}, `option "max-files" is a setting of the whole run`},
		{"two defaults of one table", map[string]string{"TIMELAKE_ROUTES": "readings/**=iot.readings;partition=hour\n*/**=iot.{1}"}, nil,
			`routes "readings/**=iot.readings;partition=hour" and "*/**=iot.{1}": both name the table iot.readings, with different options`},
		{"option against the run's", nil, []string{"--route", "readings/**=iot.r;time-column=ts", "--column", "ts:string"},
			"route readings/**=iot.r;time-column=ts: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := p.exec(t, tc.env, tc.args...)
			if code != cmdutil.ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want %d and %q on stderr\n%s\n%s", code, cmdutil.ExitUsage, tc.want, out, errOut)
			}
		})
	}
	ios, out, errOut := iostreams.Test()
	code := commands.Execute(context.Background(), []string{"serve", "--landing", p.landing, "--warehouse", p.warehouse, "--table", "iot.t"}, ios,
		getenv(map[string]string{"TIMELAKE_ROUTES": "readings/**=iot.readings"}))
	if code != cmdutil.ExitUsage || !strings.Contains(errOut.String(), "both name tables") {
		t.Errorf("serve with TIMELAKE_ROUTES and --table: exit %d\n%s\n%s", code, out, errOut)
	}
	if left := p.left(t); len(left) != 1 {
		t.Errorf("left: %v", left)
	}
}

// TestRoutedAlertsAndMetrics, on a local folder and on S3: a routed run
// of two tables, one of which quarantines a file, writes one metrics file
// with each table's run and gateway figures under its label table (the
// gateways of a table are those of its keys only), and alerts the
// quarantine naming that table only. A later run that loads one table
// keeps the other's series; a table whose alert the webhook refuses does
// not stop the alert of the next table.
func TestRoutedAlertsAndMetrics(t *testing.T) {
	for name, open := range map[string]func(*testing.T) routedPlace{"local": localPlace, "s3": s3Place} {
		t.Run(name, func(t *testing.T) {
			p := open(t)
			hook := monitortest.NewWebhook(t)
			prom := filepath.Join(t.TempDir(), "timelake.prom")
			env := map[string]string{"TIMELAKE_NOTIFY_URL": hook.URL(), "TIMELAKE_METRICS_FILE": prom, "TIMELAKE_CACHE_DIR": "off"}
			routes := []string{"--route", "*/**=iot.{1}"}
			p.put(t, "readings/gw1/a.csv", csvRows(3, 10))
			p.put(t, "readings/gw2/b.csv", csvRows(2, 10))
			p.put(t, "events/gw1/e.csv", csvRows(4, 10))
			p.put(t, "events/gw2/bad.csv", "time,device_id,v\nnot a time,d1,x,y\n")
			code, out, errOut := p.exec(t, env, routes...)
			if code != cmdutil.ExitPartial {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, cmdutil.ExitPartial, out, errOut)
			}
			if strings.Contains(out+errOut, monitortest.Secret) {
				t.Errorf("the webhook's secret was printed:\n%s\n%s", out, errOut)
			}
			if got := hook.Texts(); len(got) != 1 || !strings.HasPrefix(got[0], "warning quarantine: timelake iot.events: 1 file quarantined: events/gw2/bad.csv (") {
				t.Errorf("alerts: %q, want the quarantine of iot.events only", got)
			}
			mfs := monitortest.ParseMetricsFile(t, prom)
			check := func(when string, want []routedSeries) {
				t.Helper()
				for _, w := range want {
					if got, ok := monitortest.Gauge(mfs, w.name, w.labels); !ok || got != w.value {
						t.Errorf("%s: %s%v = %v (found %v), want %v", when, w.name, w.labels, got, ok, w.value)
					}
				}
			}
			files := func(table, status string) map[string]string {
				return map[string]string{"table": table, "status": status}
			}
			table := func(name string) map[string]string { return map[string]string{"table": name} }
			check("first run", []routedSeries{
				{"timelake_ingest_last_run_files", files("iot.readings", "loaded"), 2},
				{"timelake_ingest_last_run_files", files("iot.readings", "quarantined"), 0},
				{"timelake_ingest_last_run_files", files("iot.events", "loaded"), 1},
				{"timelake_ingest_last_run_files", files("iot.events", "quarantined"), 1},
				{"timelake_ingest_last_run_rows", table("iot.readings"), 5},
				{"timelake_ingest_last_run_rows", table("iot.events"), 4},
				{"timelake_ingest_last_run_success", table("iot.readings"), 1},
				{"timelake_ingest_last_run_success", table("iot.events"), 1},
				{"timelake_gateways", table("iot.readings"), 2},
				{"timelake_gateways", table("iot.events"), 2},
				{"timelake_gateway_files_quarantined", map[string]string{"table": "iot.events", "gateway": "events/gw2"}, 1},
			})
			if _, ok := monitortest.Gauge(mfs, "timelake_gateway_files_quarantined", map[string]string{"table": "iot.readings", "gateway": "events/gw2"}); ok {
				t.Error("iot.readings has the gateway figures of a key of iot.events")
			}
			eventsRan, _ := monitortest.Gauge(mfs, "timelake_ingest_last_run_timestamp_seconds", table("iot.events"))

			// Only iot.readings has a file: iot.events keeps its series.
			p.put(t, "readings/gw1/c.csv", csvRows(1, 11))
			if code, out, errOut := p.exec(t, env, routes...); code != cmdutil.ExitOK {
				t.Fatalf("second run: exit %d\n%s\n%s", code, out, errOut)
			}
			mfs = monitortest.ParseMetricsFile(t, prom)
			check("second run", []routedSeries{
				{"timelake_ingest_last_run_files", files("iot.readings", "loaded"), 1},
				{"timelake_ingest_last_run_rows", table("iot.readings"), 1},
				{"timelake_ingest_last_run_files", files("iot.events", "quarantined"), 1},
				{"timelake_ingest_last_run_timestamp_seconds", table("iot.events"), eventsRan},
				{"timelake_gateway_files_quarantined", map[string]string{"table": "iot.events", "gateway": "events/gw2"}, 1},
			})

			// The webhook refuses the alerts of iot.events, which runs first:
			// that of iot.readings is sent all the same.
			hook.Refuse("iot.events")
			p.put(t, "events/gw1/bad.csv", "time,device_id,v\nnot a time,d1,x,y\n")
			p.put(t, "readings/gw1/bad.csv", "time,device_id,v\nnot a time,d1,x,y\n")
			if code, out, errOut := p.exec(t, env, routes...); code != cmdutil.ExitPartial {
				t.Fatalf("third run: exit %d\n%s\n%s", code, out, errOut)
			}
			if got := hook.Texts()[1:]; hook.Refused() != 1 || len(got) != 1 ||
				!strings.HasPrefix(got[0], "warning quarantine: timelake iot.readings: 1 file quarantined: readings/gw1/bad.csv (") {
				t.Errorf("alerts after one refused (%d refused): %q, want the quarantine of iot.readings", hook.Refused(), got)
			}
		})
	}
}

// routedSeries is a series of a metrics file and its value.
type routedSeries struct {
	name   string
	labels map[string]string
	value  float64
}

// TestRoutedTableFailure: a table that fails (no file of a new table can
// create it) does not stop the others; its error names it on stderr, and
// the run ends with the worst exit code of its tables (1).
func TestRoutedTableFailure(t *testing.T) {
	p := localPlace(t)
	p.put(t, "events/bad.csv", "time,device_id,v\n2026-01-05T10:00:00Z,d1\n")
	p.put(t, "readings/a.csv", csvRows(2, 10))
	p.put(t, "meters/m.csv", csvRows(3, 10))
	code, out, errOut := p.exec(t, nil, threeRoutes...)
	if code != cmdutil.ExitFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, cmdutil.ExitFailed, out, errOut)
	}
	if !regexp.MustCompile(`Z Error: iot.events: cannot create the table`).MatchString(errOut) ||
		!strings.Contains(out, "routes: 3 tables, 2 without a problem; run started") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errOut)
	}
	p.want(t, map[string]int64{"iot.readings": 2, "iot.meters": 3}, "events/bad.csv")
}

// TestRoutedMaxFilesShared: --max-files is shared between the tables, so
// that one table's backlog does not starve another.
func TestRoutedMaxFilesShared(t *testing.T) {
	p := localPlace(t)
	for _, k := range []string{"events/a.csv", "events/b.csv", "events/c.csv", "readings/a.csv", "readings/b.csv"} {
		p.put(t, k, csvRows(1, 10))
	}
	code, out, errOut := p.exec(t, nil, append(threeRoutes, "--max-files", "2")...)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	p.want(t, map[string]int64{"iot.events": 1, "iot.readings": 1}, "events/b.csv", "events/c.csv", "readings/b.csv")
	if !strings.Contains(out, "more files wait (--max-files)") {
		t.Errorf("output:\n%s", out)
	}
}

// TestConcurrentRoutedRuns: two routed runs at once on one landing share
// the tables through the per-table leases (a table whose lease the other
// holds is left to it: exit 11 or 12 for that table); with a third run
// after them, every file is loaded once (rows counted) and the landing
// is empty.
func TestConcurrentRoutedRuns(t *testing.T) {
	p := localPlace(t)
	const files = 15
	want := map[string]int64{}
	for _, table := range []string{"readings", "events", "meters"} {
		for i := range files {
			p.put(t, fmt.Sprintf("%s/gw%d/f%02d.csv", table, i%3, i), csvRows(i%4+1, i%24))
			want["iot."+table] += int64(i%4 + 1)
		}
	}
	codes := make(chan cmdutil.ExitCode, 2)
	for range 2 {
		go func() {
			code, _, _ := p.exec(t, nil, append(threeRoutes, "--files-per-commit", "2", "--parallel", "2")...)
			codes <- code
		}()
	}
	for range 2 {
		code := <-codes
		t.Logf("a concurrent run: exit %d", code)
		if code != cmdutil.ExitOK && code != cmdutil.ExitBusy && code != cmdutil.ExitLeaseHeld {
			t.Errorf("a concurrent run: exit %d", code)
		}
	}
	if code, out, errOut := p.exec(t, nil, threeRoutes...); code != cmdutil.ExitOK {
		t.Fatalf("the run after: exit %d\n%s\n%s", code, out, errOut)
	}
	p.want(t, want)
}

// TestRoutedTableLeaseHeld: a routed run meets a table whose lease another
// run holds (an ingest of another host, or a serve): it does not wait for
// it, loads the other tables, and reports that table alone (exit 12 for
// the other ingest, 11 for a serve), which is also the run's exit code.
// The next run, once the lease is released, loads the table.
func TestRoutedTableLeaseHeld(t *testing.T) {
	for _, tc := range []struct {
		kind string
		want cmdutil.ExitCode
	}{{landing.HolderIngest, cmdutil.ExitBusy}, {landing.HolderServe, cmdutil.ExitLeaseHeld}} {
		t.Run(tc.kind, func(t *testing.T) {
			p := localPlace(t)
			p.put(t, "readings/gw1/a.csv", csvRows(2, 10))
			p.put(t, "events/gw1/e.csv", csvRows(3, 10))
			p.put(t, "meters/gw1/m.csv", csvRows(4, 10))
			ctx := context.Background()
			lease, err := landing.AcquireLease(ctx, p.store, landing.LeaseOptions{Table: "iot.events", TTL: 10 * time.Minute,
				Holder: landing.Holder{Token: "poller-2:4242:0a1b2c", Kind: tc.kind, Host: "poller-2", PID: 4242},
				Now:    func() time.Time { return time.Now().Add(-time.Minute) }})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			code, out, errOut := p.exec(t, nil, append(threeRoutes, "--json")...)
			if code != tc.want {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.want, out, errOut)
			}
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("the run took %s: it waited for the lease", took)
			}
			var doc ingestcmd.RoutedReport
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			codes := map[string]int{}
			for _, tr := range doc.Tables {
				codes[tr.Report.Report.Table] = tr.ExitCode
			}
			if codes["iot.readings"] != 0 || codes["iot.meters"] != 0 || codes["iot.events"] != int(tc.want) {
				t.Errorf("exit codes of the tables: %v\n%s", codes, out)
			}
			p.want(t, map[string]int64{"iot.readings": 2, "iot.meters": 4}, "events/gw1/e.csv")
			if err := lease.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if code, out, errOut := p.exec(t, nil, threeRoutes...); code != cmdutil.ExitOK {
				t.Fatalf("the run after the release: exit %d\n%s\n%s", code, out, errOut)
			}
			p.want(t, map[string]int64{"iot.readings": 2, "iot.events": 3, "iot.meters": 4})
		})
	}
}

// TestRouteTableDefaults: two routes with different options create two
// tables from one local landing, each with its route's time column,
// series key, partitioning and properties; a route without options
// creates its table with the run's settings. The dry run names each
// key's rule with its options.
func TestRouteTableDefaults(t *testing.T) {
	p := localPlace(t)
	p.put(t, "readings/gw1/a.csv", "ts,device,site,v\n2026-01-05T10:00:00Z,d1,berlin,1\n2026-01-05T10:00:01Z,d2,berlin,2\n")
	p.put(t, "events/gw1/e.csv", "at,device_id,kind\n2026-01-05T10:00:00Z,d1,door\n")
	p.put(t, "meters/m.csv", csvRows(2, 10))
	routes := "readings/**=iot.readings;time-column=ts;series-key={device,site};partition=hour;on-error=skip-rows\n" +
		"events/**=iot.events;time-column=at;partition=month, meters/**=iot.meters"
	env := map[string]string{"TIMELAKE_ROUTES": routes, "TIMELAKE_SERIES_KEY": "device_id", "TIMELAKE_PARTITION": "day"}

	code, out, errOut := p.exec(t, map[string]string{"TIMELAKE_ROUTES": routes}, "--dry-run")
	if code != cmdutil.ExitOK {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"route           readings/gw1/a.csv  -> iot.readings (readings/**=iot.readings;time-column=ts;series-key={device,site};partition=hour;on-error=skip-rows)",
		"route           events/gw1/e.csv  -> iot.events (events/**=iot.events;time-column=at;partition=month)",
		"route           meters/m.csv  -> iot.meters (meters/**=iot.meters)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}

	code, out, errOut = p.exec(t, env)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	p.want(t, map[string]int64{"iot.readings": 2, "iot.events": 1, "iot.meters": 2})
	for _, tc := range []struct {
		table, timeColumn, seriesKey, transform, onError string
	}{
		{"iot.readings", "ts", "device,site", "hour", "skip-rows"},
		{"iot.events", "at", "device_id", "month", ""}, // no series key option: the run's
		{"iot.meters", "time", "device_id", "day", ""},
	} {
		tbl := p.table(t, tc.table)
		props := tbl.Properties()
		if props[lake.PropTimeColumn] != tc.timeColumn || props[lake.PropSeriesKey] != tc.seriesKey ||
			props[lake.PropChunk] != tc.transform || props[lake.PropOnError] != tc.onError {
			t.Errorf("%s: time column %q, series key %q, chunk %q, on-error %q; want %q, %q, %q, %q", tc.table,
				props[lake.PropTimeColumn], props[lake.PropSeriesKey], props[lake.PropChunk], props[lake.PropOnError],
				tc.timeColumn, tc.seriesKey, tc.transform, tc.onError)
		}
		spec := tbl.Metadata().PartitionSpec()
		var transforms []string
		for _, f := range spec.Fields() {
			transforms = append(transforms, f.Transform.String())
		}
		if strings.Join(transforms, ",") != tc.transform {
			t.Errorf("%s: partition spec %v, want %s of its time column", tc.table, spec, tc.transform)
		}
	}
}

// TestRouteDefaultsConflictByKey: two {N} routes with different options
// that can both name a table (which only the keys tell) leave that
// table's keys in the landing naming both routes (exit 3); the other
// tables load with their route's options.
func TestRouteDefaultsConflictByKey(t *testing.T) {
	p := localPlace(t)
	p.put(t, "a/site/f.csv", csvRows(2, 10))
	p.put(t, "a/b_1/f.csv", csvRows(1, 10))
	p.put(t, "b/1/f.csv", csvRows(3, 10))
	code, out, errOut := p.exec(t, nil, "--route", "a/*/**=x.{2};partition=hour", "--route", "b/*/**=x.b_{2}")
	if code != cmdutil.ExitPartial {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, cmdutil.ExitPartial, out, errOut)
	}
	for _, key := range []string{"a/b_1/f.csv", "b/1/f.csv"} {
		want := "unrouted        " + key + `  two routes take the key "` + key + `" to table x.b_1, which `
		if !strings.Contains(out, want) || !strings.Contains(out, "a/*/**=x.{2};partition=hour") || !strings.Contains(out, "b/*/**=x.b_{2}") {
			t.Errorf("output lacks %q naming both routes:\n%s", want, out)
		}
	}
	p.want(t, map[string]int64{"x.site": 2}, "a/b_1/f.csv", "b/1/f.csv")
	if got := p.table(t, "x.site").Contract().Chunk; got != lake.Hour {
		t.Errorf("x.site partitioned by %s, want hour", got)
	}
}
