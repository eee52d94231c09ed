package landing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/fleet"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/monitortest"
)

// fleetEnv is a landing bucket and a warehouse for the command tree.
type fleetEnv struct {
	env       map[string]string
	landing   storage.Store
	warehouse storage.Store
	local     bool
}

// forEachFleet runs test on local folders and on the test S3 server.
func forEachFleet(t *testing.T, test func(t *testing.T, e fleetEnv)) {
	monitortest.Stores(t, func(t *testing.T, env map[string]string, st storage.Store) {
		env["TIMELAKE_TABLE"], env["TIMELAKE_SERIES_KEY"], env["TIMELAKE_CACHE_DIR"] = "iot.readings", "device_id", "off"
		_, local := st.(*storage.LocalStore)
		test(t, fleetEnv{env: env, landing: st, warehouse: monitortest.Warehouse(t, env), local: local})
	})
}

// put drops a landing file (monitortest.Put).
func (e fleetEnv) put(t *testing.T, key, body string) {
	monitortest.Put(t, e.env, e.landing, key, body)
}

func (e fleetEnv) with(kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range e.env {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

const header = "time,device_id,temperature_c\n"

// TestAuditCommand, on a local folder and on S3: the audit finds a file
// whose load history segment was deleted by hand (re-sent, no longer
// known), a file changed after its load, a file a stopped poller left
// waiting and one left after its load; exit 1, the files in each form,
// and an alert per finding without the webhook's secret printed. Once
// they are dealt with: exit 0, and the alerts resolved.
func TestAuditCommand(t *testing.T) {
	forEachFleet(t, func(t *testing.T, e fleetEnv) {
		ctx := context.Background()
		e.put(t, "gw-1/old.csv", header+"2026-01-05T10:00:00Z,a,1.5\n")
		e.put(t, "gw-2/changed.csv", header+"2026-01-05T10:01:00Z,b,2.5\n")
		e.put(t, "gw-3/done.csv", header+"2026-01-05T10:02:00Z,c,3.5\n")
		if r := run(t, e.env, "ingest"); r.code != cmdutil.ExitOK {
			t.Fatalf("ingest: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		// gw-1/old.csv into the load history, then its segment deleted by
		// hand; the gateway sends the file again.
		if r := run(t, e.env, "tables", "expire", "--older-than", "1ms", "--retain-last", "2"); r.code != cmdutil.ExitOK {
			t.Fatalf("expire: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		var segment string
		err := e.warehouse.List(ctx, "iot/readings/metadata/_load-history-", func(o storage.ObjectInfo) error {
			segment = o.Key
			return nil
		})
		if err != nil || segment == "" {
			t.Fatalf("no load history segment (%v)", err)
		}
		if err := e.warehouse.Delete(ctx, segment); err != nil {
			t.Fatal(err)
		}
		e.put(t, "gw-1/old.csv", header+"2026-01-05T10:00:00Z,a,1.5\n")
		// Changed after its load; left after its load (the same bytes).
		e.put(t, "gw-2/changed.csv", header+"2026-01-05T10:01:00Z,b,9.5\n")
		e.put(t, "gw-3/done.csv", header+"2026-01-05T10:02:00Z,c,3.5\n")
		// A stopped poller: nothing loads this one.
		e.put(t, "gw-4/never.csv", header+"2026-01-05T10:03:00Z,d,4.5\n")
		time.Sleep(1100 * time.Millisecond)

		hook := monitortest.NewWebhook(t)
		env := e.with("TIMELAKE_NOTIFY_URL", hook.URL(), "TIMELAKE_STUCK_AFTER", "1s")
		r := run(t, env, "landing", "audit", "--json")
		var rep fleet.AuditReport
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != cmdutil.ExitFailed || !rep.Attention {
			t.Fatalf("audit: exit %d, %v\n%s%s", r.code, err, r.out, r.errOut)
		}
		got := map[string][]string{}
		for _, f := range rep.Findings {
			for _, x := range f.Files {
				got[f.Kind] = append(got[f.Kind], x.Key)
			}
		}
		want := map[string][]string{
			fleet.FindingStuck:          {"gw-1/old.csv", "gw-4/never.csv"},
			fleet.FindingChanged:        {"gw-2/changed.csv"},
			fleet.FindingLeftAfterLoad:  {"gw-3/done.csv"},
			fleet.FindingHistoryMissing: {strings.TrimPrefix(segment, "iot/readings/")},
		}
		for k, v := range want {
			if strings.Join(got[k], ",") != strings.Join(v, ",") {
				t.Errorf("%s: %v, want %v", k, got[k], v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("findings %v, want only %v", got, want)
		}
		alerts := strings.Join(hook.Texts(), "\n")
		for _, w := range []string{"warning stuck-files: timelake iot.readings: audit: 2 files stuck: gw-1/old.csv, gw-4/never.csv",
			"warning audit-finding: timelake iot.readings: audit: 1 file changed-after-load: gw-2/changed.csv"} {
			if !strings.Contains(alerts, w) {
				t.Errorf("alert %q not sent; got:\n%s", w, alerts)
			}
		}
		if strings.Contains(r.out+r.errOut, monitortest.Secret) {
			t.Error("the webhook's secret was printed")
		}
		// A second audit alerts nothing new (the conditions are open).
		n := len(hook.Texts())
		run(t, env, "landing", "audit")
		if len(hook.Texts()) != n {
			t.Errorf("alerted again: %v", hook.Texts()[n:])
		}
		pipe := run(t, env, "landing", "audit")
		if !strings.HasPrefix(pipe.out, "finding\tkey\tgateway\tsize_bytes\tmodified\tsnapshot_id\tloaded_at\tquarantined_to\tdetail\n") ||
			!strings.Contains(pipe.out, "\nchanged-after-load\tgw-2/changed.csv\tgw-2\t") || pipe.code != cmdutil.ExitFailed {
			t.Errorf("pipe: exit %d\n%s", pipe.code, pipe.out)
		}

		// Dealt with: the segment dropped by maintenance, the changed file
		// quarantined, the rest loaded or deleted by the next run.
		for _, args := range [][]string{{"tables", "maintain"}, {"ingest"}} {
			if r := run(t, e.env, args...); r.code != cmdutil.ExitOK && r.code != cmdutil.ExitPartial {
				t.Fatalf("%v: exit %d\n%s%s", args, r.code, r.out, r.errOut)
			}
		}
		if r := run(t, e.env, "landing", "discard", "--all", "--delete"); r.code != cmdutil.ExitOK {
			t.Fatalf("discard: exit %d\n%s", r.code, r.errOut)
		}
		r = run(t, env, "landing", "audit")
		if r.code != cmdutil.ExitOK || r.out != "finding\tkey\tgateway\tsize_bytes\tmodified\tsnapshot_id\tloaded_at\tquarantined_to\tdetail\n" {
			t.Errorf("after: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		resolved := 0
		for _, a := range hook.Texts()[n:] {
			if strings.HasPrefix(a, "resolved ") {
				resolved++
			}
		}
		if resolved != 4 {
			t.Errorf("%d resolved alerts, want 4 (one per finding):\n%s", resolved, strings.Join(hook.Texts(), "\n"))
		}
	})
}

// TestStatusCommand, on a local folder and on S3: per gateway figures,
// a silent one (exit 1), the metrics file the client library's parser
// reads, and the alert of the silent gateway.
func TestStatusCommand(t *testing.T) {
	forEachFleet(t, func(t *testing.T, e fleetEnv) {
		e.put(t, "gw-1/a.csv", header+"2026-01-05T10:00:00Z,a,1.5\n")
		e.put(t, "gw-2/b.csv", header+"2026-01-05T11:00:00Z,b,2.5\n")
		e.put(t, "gw-2/bad.csv", "time;device_id\n2026-01-05T10:00:00Z;b\n")
		if r := run(t, e.env, "ingest"); r.code != cmdutil.ExitPartial {
			t.Fatalf("ingest: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		if r := run(t, e.env, "tables", "alter", "--set", "timelake.expect-every=1s"); r.code != cmdutil.ExitOK {
			t.Fatalf("alter: exit %d\n%s", r.code, r.errOut)
		}
		time.Sleep(2100 * time.Millisecond) // gw-2 goes silent
		e.put(t, "gw-1/c.csv", header+"2026-01-05T10:05:00Z,a,1.5\n")
		if e.local {
			now := time.Now()
			os.Chtimes(filepath.Join(e.env["LANDING_BUCKET"], "gw-1", "c.csv"), now, now)
		}
		hook := monitortest.NewWebhook(t)
		prom := filepath.Join(t.TempDir(), "timelake.prom")
		env := e.with("TIMELAKE_NOTIFY_URL", hook.URL())
		r := run(t, env, "landing", "status", "--json", "--metrics-file", prom)
		var st fleet.Status
		if err := json.Unmarshal([]byte(r.out), &st); err != nil || r.code != cmdutil.ExitFailed {
			t.Fatalf("status: exit %d, %v\n%s%s", r.code, err, r.out, r.errOut)
		}
		if len(st.Gateways) != 2 || st.Silent != 1 || st.ExpectFrom != fleet.ExpectFromProperty {
			t.Fatalf("status %+v", st)
		}
		g1, g2 := st.Gateways[0], st.Gateways[1]
		if g1.Silent || g1.Waiting != 1 || g1.LoadedLastDay != 1 || g1.NewestRowTime == nil ||
			!g1.NewestRowTime.Equal(time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)) {
			t.Errorf("gw-1 %+v", g1)
		}
		if !g2.Silent || g2.Quarantined != 1 || g2.RejectedLastDay != 1 || g2.LoadedLastDay != 1 {
			t.Errorf("gw-2 %+v", g2)
		}
		mfs := monitortest.ParseMetricsFile(t, prom)
		if v, ok := monitortest.Gauge(mfs, "timelake_gateway_silent", map[string]string{"gateway": "gw-2"}); !ok || v != 1 {
			t.Errorf("timelake_gateway_silent{gateway=gw-2} = %v (%v)", v, ok)
		}
		alerts := strings.Join(hook.Texts(), "\n")
		if !strings.Contains(alerts, "warning gateway-silent: timelake iot.readings: gateway gw-2 is silent") || strings.Contains(alerts, "gw-1 is silent") {
			t.Errorf("alerts:\n%s", alerts)
		}
		// Expected every hour: nobody is silent, and the alert is resolved.
		r = run(t, env, "landing", "status", "--expect-every", "1h")
		if r.code != cmdutil.ExitOK || !strings.HasPrefix(r.out, "gateway\tlast_landed\tlast_loaded\tnewest_row_time\twaiting\toldest_waiting\tquarantined\tloaded_last_day\tduplicates_last_day\trejected_last_day\tsilent\n") ||
			!strings.Contains(r.out, "\nfalse\n") && !strings.HasSuffix(r.out, "\tfalse\n") {
			t.Errorf("status --expect-every 1h: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		if alerts := strings.Join(hook.Texts(), "\n"); !strings.Contains(alerts, "resolved gateway-silent: timelake iot.readings: gateway gw-2 lands files again") {
			t.Errorf("not resolved:\n%s", alerts)
		}
	})
}

// TestStatusLandedTimes, on a local folder and on S3: a gateway's
// last_landed is when its files landed, not when one was quarantined or
// requeued; a requeued file keeps the time it first landed, which the load
// history records once it loads; the gateway is the folder that holds the
// files (site-berlin/gw-7), not the site folder above it.
func TestStatusLandedTimes(t *testing.T) {
	forEachFleet(t, func(t *testing.T, e fleetEnv) {
		const short = "site-berlin/gw-7/short.csv"
		e.put(t, "site-berlin/gw-8/good.csv", header+"2026-01-05T10:00:00Z,a,1.5\n")
		e.put(t, short, header+"2026-01-05T10:00:00Z,b,2.5\n2026-01-05T10:01:00Z,b\n")
		landed := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second)
		if e.local {
			os.Chtimes(filepath.Join(e.env["LANDING_BUCKET"], filepath.FromSlash(short)), landed, landed)
		} else {
			info, err := e.landing.Stat(context.Background(), short)
			if err != nil {
				t.Fatal(err)
			}
			landed = info.LastModified
			// S3 times are whole seconds: the quarantine and the requeue
			// below come in later seconds than the upload.
			time.Sleep(1100 * time.Millisecond)
		}
		if r := run(t, e.env, "ingest"); r.code != cmdutil.ExitPartial || !strings.Contains(r.out, "quarantined     "+short) {
			t.Fatalf("ingest: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		gateway := func(name string) fleet.GatewayStatus {
			t.Helper()
			r := run(t, e.env, "landing", "status", "--json")
			var st fleet.Status
			if err := json.Unmarshal([]byte(r.out), &st); err != nil || r.code != cmdutil.ExitOK {
				t.Fatalf("status: exit %d, %v\n%s%s", r.code, err, r.out, r.errOut)
			}
			for _, g := range st.Gateways {
				if g.Gateway == name {
					return g
				}
			}
			t.Fatalf("no gateway %q in %+v", name, st.Gateways)
			return fleet.GatewayStatus{}
		}
		if g := gateway("site-berlin/gw-7"); g.Quarantined != 1 || g.LastLanded == nil || !g.LastLanded.Truncate(time.Second).Equal(landed) {
			t.Fatalf("quarantined: %+v, want last_landed %s", g, landed)
		}
		if !e.local {
			time.Sleep(1100 * time.Millisecond)
		}
		if r := run(t, e.env, "landing", "requeue", short); r.code != cmdutil.ExitOK {
			t.Fatalf("requeue: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		if e.local {
			if g := gateway("site-berlin/gw-7"); g.Waiting != 1 || g.LastLanded == nil || !g.LastLanded.Truncate(time.Second).Equal(landed) {
				t.Fatalf("requeued, waiting: %+v, want last_landed %s", g, landed)
			}
		}
		if r := run(t, e.env, "ingest", "--on-error", "skip-rows", "--max-bad-rows", "1"); !strings.Contains(r.out, "loaded          "+short) {
			t.Fatalf("ingest of the requeued file: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		r := run(t, e.env, "tables", "history", "--json")
		var rows []struct {
			Status, Key string
			LandedAt    *time.Time `json:"landed_at"`
		}
		if err := json.Unmarshal([]byte(r.out), &rows); err != nil {
			t.Fatalf("history: %v\n%s%s", err, r.out, r.errOut)
		}
		found := false
		for _, row := range rows {
			if row.Key == short && row.Status == "loaded" {
				found = true
				if row.LandedAt == nil || !row.LandedAt.Truncate(time.Second).Equal(landed) {
					t.Errorf("the requeued file's load record says it landed at %v, want %s", row.LandedAt, landed)
				}
			}
		}
		if !found {
			t.Fatalf("no load record of %s:\n%s", short, r.out)
		}
		if g := gateway("site-berlin/gw-7"); g.LastLanded == nil || !g.LastLanded.Truncate(time.Second).Equal(landed) {
			t.Fatalf("loaded: %+v, want last_landed %s", g, landed)
		}
	})
}

// routed returns the env of routes (TIMELAKE_ROUTES, without the table)
// after a routed ingest loaded one file under each key.
func (e fleetEnv) routed(t *testing.T, routes string, keys ...string) map[string]string {
	t.Helper()
	env := e.with("TIMELAKE_ROUTES", routes)
	delete(env, "TIMELAKE_TABLE")
	for i, k := range keys {
		e.put(t, k, header+fmt.Sprintf("2026-01-05T10:00:00Z,d%d,1.5\n", i))
	}
	if r := run(t, env, "ingest"); r.code != cmdutil.ExitOK {
		t.Fatalf("ingest: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	return env
}

// TestRoutedStatusAndAudit, on a local folder and on S3: with routes,
// status and audit report each table on the keys its routes take, against
// its own history, and the key no route takes as unrouted; routes beside a
// table are refused.
func TestRoutedStatusAndAudit(t *testing.T) {
	forEachFleet(t, func(t *testing.T, e fleetEnv) {
		env := e.routed(t, "readings/**=iot.readings, events/**=iot.events", "readings/gw-1/a.csv", "events/gw-2/e.csv")
		e.put(t, "readings/gw-1/b.csv", header+"2026-01-05T10:01:00Z,a,1.5\n")
		e.put(t, "readings/gw-3/c.csv", header+"2026-01-05T10:01:00Z,c,1.5\n")
		e.put(t, "events/gw-2/f.csv", header+"2026-01-05T10:01:00Z,b,2.5\n")
		e.put(t, "stray.csv", header+"2026-01-05T10:01:00Z,d,2.5\n")

		r := run(t, env, "landing", "status", "--json")
		var st struct {
			Routes   []string
			Tables   []fleet.Status
			Unrouted []struct{ Key, Reason string }
		}
		if err := json.Unmarshal([]byte(r.out), &st); err != nil || r.code != cmdutil.ExitOK {
			t.Fatalf("status: exit %d, %v\n%s%s", r.code, err, r.out, r.errOut)
		}
		if len(st.Tables) != 2 || st.Tables[0].Table != "iot.events" || st.Tables[1].Table != "iot.readings" {
			t.Fatalf("tables %+v", st.Tables)
		}
		type fig struct{ waiting, loaded int }
		got := map[string]fig{}
		for _, s := range st.Tables {
			for _, g := range s.Gateways {
				got[s.Table+" "+g.Gateway] = fig{g.Waiting, g.LoadedLastDay}
			}
		}
		want := map[string]fig{"iot.events events/gw-2": {1, 1}, "iot.readings readings/gw-1": {1, 1}, "iot.readings readings/gw-3": {1, 0}}
		if len(got) != len(want) {
			t.Errorf("gateways %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %+v, want %+v", k, got[k], v)
			}
		}
		if len(st.Unrouted) != 1 || st.Unrouted[0].Key != "stray.csv" || !strings.Contains(st.Unrouted[0].Reason, "no route takes the key") {
			t.Errorf("unrouted %+v", st.Unrouted)
		}
		if strings.Join(st.Routes, ",") != "readings/**=iot.readings,events/**=iot.events" {
			t.Errorf("routes %v", st.Routes)
		}
		pipe := run(t, env, "landing", "status")
		if !strings.HasPrefix(pipe.out, "table\tgateway\tlast_landed\t") || !strings.Contains(pipe.out, "\niot.events\tevents/gw-2\t") ||
			!strings.Contains(pipe.out, "\niot.readings\treadings/gw-3\t") || strings.Contains(pipe.out, "stray") ||
			!strings.Contains(pipe.errOut, "unrouted        stray.csv  no route takes the key") {
			t.Errorf("status in a pipe: exit %d\n%s---\n%s", pipe.code, pipe.out, pipe.errOut)
		}

		time.Sleep(1100 * time.Millisecond)
		aenv := map[string]string{"TIMELAKE_STUCK_AFTER": "1s"}
		for k, v := range env {
			aenv[k] = v
		}
		r = run(t, aenv, "landing", "audit", "--json")
		var rep struct {
			Tables    []fleet.AuditReport
			Unrouted  []struct{ Key string }
			Attention bool
		}
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != cmdutil.ExitFailed || !rep.Attention {
			t.Fatalf("audit: exit %d, %v\n%s%s", r.code, err, r.out, r.errOut)
		}
		stuck := map[string]string{}
		for _, tr := range rep.Tables {
			for _, f := range tr.Findings {
				if f.Kind == fleet.FindingStuck {
					var keys []string
					for _, x := range f.Files {
						keys = append(keys, x.Key)
					}
					stuck[tr.Table] = strings.Join(keys, ",")
				}
			}
		}
		if len(rep.Tables) != 2 || rep.Tables[0].Checked.LandingFiles != 1 || rep.Tables[1].Checked.LandingFiles != 2 ||
			stuck["iot.events"] != "events/gw-2/f.csv" || stuck["iot.readings"] != "readings/gw-1/b.csv,readings/gw-3/c.csv" {
			t.Errorf("audit tables: stuck %v\n%s", stuck, r.out)
		}
		if len(rep.Unrouted) != 1 || rep.Unrouted[0].Key != "stray.csv" {
			t.Errorf("unrouted %+v", rep.Unrouted)
		}
		pipe = run(t, aenv, "landing", "audit")
		if !strings.HasPrefix(pipe.out, "table\tfinding\tkey\tgateway\t") || !strings.Contains(pipe.out, "\niot.events\tstuck\tevents/gw-2/f.csv\tevents/gw-2\t") ||
			!strings.Contains(pipe.out, "\n\tunrouted\tstray.csv\t\t") || pipe.code != cmdutil.ExitFailed {
			t.Errorf("audit in a pipe: exit %d\n%s%s", pipe.code, pipe.out, pipe.errOut)
		}

		// Routes and a table together are refused.
		if r := run(t, e.with("TIMELAKE_ROUTES", "readings/**=iot.readings"), "landing", "status"); r.code != cmdutil.ExitUsage ||
			!strings.Contains(r.errOut, "give either one table or routes") {
			t.Errorf("routes and a table: exit %d\n%s", r.code, r.errOut)
		}
	})
}

// TestRoutedStatusFindsTables, on a local folder and on S3: with a route
// that names a table per folder, the tables of which nothing waits are
// reported: one whose last file is quarantined, one whose files were all
// loaded (found in the warehouse); the metrics file holds each table's
// figures labelled table, and the alerts name their table.
func TestRoutedStatusFindsTables(t *testing.T) {
	forEachFleet(t, func(t *testing.T, e fleetEnv) {
		env := e.routed(t, "*/**=iot.{1}", "alpha/gw-1/a.csv", "beta/gw-2/b.csv")
		e.put(t, "alpha/gw-1/bad.csv", "time;device_id\n2026-01-05T10:00:00Z;a\n")
		if r := run(t, env, "ingest"); r.code != cmdutil.ExitPartial {
			t.Fatalf("ingest: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		hook := monitortest.NewWebhook(t)
		prom := filepath.Join(t.TempDir(), "timelake.prom")
		env["TIMELAKE_NOTIFY_URL"], env["TIMELAKE_EXPECT_EVERY"] = hook.URL(), "1ms"
		r := run(t, env, "landing", "status", "--json", "--metrics-file", prom)
		var st struct{ Tables []fleet.Status }
		if err := json.Unmarshal([]byte(r.out), &st); err != nil || r.code != cmdutil.ExitFailed {
			t.Fatalf("status: exit %d, %v\n%s%s", r.code, err, r.out, r.errOut)
		}
		if len(st.Tables) != 2 || st.Tables[0].Table != "iot.alpha" || len(st.Tables[0].Gateways) != 1 ||
			st.Tables[0].Gateways[0].Quarantined != 1 || st.Tables[1].Table != "iot.beta" || st.Tables[1].Gateways[0].LoadedLastDay != 1 {
			t.Fatalf("tables %+v", st.Tables)
		}
		mfs := monitortest.ParseMetricsFile(t, prom)
		for _, table := range []string{"iot.alpha", "iot.beta"} {
			if v, ok := monitortest.Gauge(mfs, "timelake_gateways", map[string]string{"table": table}); !ok || v != 1 {
				t.Errorf("timelake_gateways{table=%s} = %v (%v)", table, v, ok)
			}
		}
		alerts := strings.Join(hook.Texts(), "\n")
		for _, w := range []string{"timelake iot.alpha: gateway alpha/gw-1 is silent", "timelake iot.beta: gateway beta/gw-2 is silent"} {
			if !strings.Contains(alerts, w) {
				t.Errorf("no alert %q:\n%s", w, alerts)
			}
		}
	})
}
