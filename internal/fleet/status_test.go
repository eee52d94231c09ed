package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

// TestComputeStatus: per gateway, the last file landed (the landing
// bucket and the history), the last loaded and its newest row, what waits
// and is quarantined, the files of the last day by outcome, and silence
// against the cadence of the table property.
func TestComputeStatus(t *testing.T) {
	forEachStore(t, func(t *testing.T, s stores) {
		ctx := context.Background()
		now := time.Now().UTC()
		tbl := newTable(t, s.lake)
		rowTime := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
		load(t, tbl, "gw-1/a.csv", "aaa", rowTime, now.Add(-30*time.Second), lake.LoadedByPoll)
		load(t, tbl, "gw-2/b.csv", "bbb", rowTime.Add(-time.Hour), now.Add(-3*time.Hour), lake.LoadedByPoll)
		expireAll(t, tbl) // gw-1/a.csv into the load history
		err := tbl.RecordOutcomes(ctx, []lake.LoadRecord{
			{Key: "gw-2/bad.csv", LoadedAt: now.Add(-time.Hour), LandedAt: now.Add(-time.Hour), Status: lake.OutcomeRejected},
			{Key: "gw-1/a.csv", LoadedAt: now.Add(-10 * time.Minute), Status: lake.OutcomeDuplicate},
			{Key: "gw-1/old.csv", LoadedAt: now.Add(-30 * time.Hour), Status: lake.OutcomeRejected}, // not of the last day
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.SetProperties(ctx, map[string]string{lake.PropExpectEvery: "10m"}, nil); err != nil {
			t.Fatal(err)
		}
		s.put(t, "gw-1/new.csv", "new")
		quarantine(t, s, "gw-3/q.csv", "gw-3/q.csv: row 1: bad", "", now) // a file that landed
		st, err := ComputeStatus(ctx, StatusOptions{Bucket: &landing.Bucket{Store: s.landing}, Table: tbl, TableName: "iot.readings", Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if st.ExpectEvery() != 10*time.Minute || st.ExpectFrom != ExpectFromProperty || len(st.Gateways) != 3 || st.Silent != 1 {
			t.Fatalf("status: every %s from %q, %d gateways, %d silent: %+v", st.ExpectEvery(), st.ExpectFrom, len(st.Gateways), st.Silent, st)
		}
		g1, g2, g3 := st.Gateways[0], st.Gateways[1], st.Gateways[2]
		if g1.Gateway != "gw-1" || g1.Silent || g1.Waiting != 1 || g1.LoadedLastDay != 1 || g1.DuplicatesLastDay != 1 || g1.RejectedLastDay != 0 ||
			g1.NewestRowTime == nil || !g1.NewestRowTime.Equal(rowTime) || g1.LastLoaded == nil || g1.LastLanded == nil ||
			now.Sub(*g1.LastLanded) > time.Minute {
			t.Errorf("gw-1: %+v", g1)
		}
		if g2.Gateway != "gw-2" || !g2.Silent || g2.Waiting != 0 || g2.RejectedLastDay != 1 || g2.LoadedLastDay != 1 ||
			g2.LastLanded == nil || !g2.LastLanded.Equal(now.Add(-time.Hour).Truncate(time.Millisecond)) {
			t.Errorf("gw-2: %+v", g2)
		}
		if g3.Gateway != "gw-3" || g3.Silent || g3.Quarantined != 1 || g3.LastLanded == nil {
			t.Errorf("gw-3: %+v, want its quarantined file counted as landed", g3)
		}
		// The setting wins over the property; a long cadence makes nobody
		// silent.
		st, err = ComputeStatus(ctx, StatusOptions{Bucket: &landing.Bucket{Store: s.landing}, Table: tbl, ExpectEvery: 4 * time.Hour, Now: now})
		if err != nil || st.ExpectFrom != ExpectFromSetting || st.Silent != 0 {
			t.Errorf("with --expect-every 4h: %+v, %v", st, err)
		}
		// Without a table yet: the landing bucket alone.
		st, err = ComputeStatus(ctx, StatusOptions{Bucket: &landing.Bucket{Store: s.landing}, Now: now})
		if err != nil || len(st.Gateways) != 2 || st.Gateways[0].Waiting != 1 || st.Gateways[1].Quarantined != 1 || st.ExpectEverySeconds != nil {
			t.Errorf("without a table: %+v, %v", st, err)
		}
	})
}

func TestStatusConditions(t *testing.T) {
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	landed, waiting := now.Add(-time.Hour), now.Add(-20*time.Minute)
	secs := 60.0
	st := &Status{Table: "iot.readings", At: now, ExpectEverySeconds: &secs, Gateways: []GatewayStatus{
		{Gateway: "gw-1", Silent: true, LastLanded: &landed},
		{Gateway: "gw-2", Waiting: 3, OldestWaiting: &waiting},
		{Gateway: "gw-3", Waiting: 1, OldestWaiting: &now},
	}}
	got := StatusConditions(st, 15*time.Minute)
	if len(got) != 2 || got[0].Key != "gateway-silent/gw-1" || got[1].Key != "stuck-files/gw-2" || got[1].Alert.Count != 3 {
		t.Fatalf("conditions %+v", got)
	}
	if want := "timelake iot.readings: gateway gw-1 is silent: last file landed 2026-01-05T11:00:00Z (1h0m0s ago), expected every 1m0s"; got[0].Alert.Text != want {
		t.Errorf("text %q\nwant %q", got[0].Alert.Text, want)
	}
}

// TestClockAheadIsVisible: a waiting file of a local folder modified an
// hour in the future (its writer's clock ahead) counts in the gateway's
// freshness with the time this host saw it, never in the future, and is
// counted as ahead; the audit reports it as a finding that needs
// attention, and takes it for stuck by the time this host saw it.
func TestClockAheadIsVisible(t *testing.T) {
	dir := t.TempDir()
	st, err := storage.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := st.Put(ctx, "gw-1/ahead.csv", strings.NewReader("time,v\n"), storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	ahead := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "gw-1", "ahead.csv"), ahead, ahead); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	b := &landing.Bucket{Store: st}
	status, err := ComputeStatus(ctx, StatusOptions{Bucket: b, TableName: "iot.readings", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(status.Gateways) != 1 {
		t.Fatalf("gateways %+v", status.Gateways)
	}
	g := status.Gateways[0]
	if g.ClockAhead != 1 || g.Waiting != 1 || g.LastLanded == nil || g.LastLanded.After(now) || g.LastLanded.Before(now.Add(-time.Minute)) ||
		g.OldestWaiting == nil || g.OldestWaiting.After(now) {
		t.Fatalf("gateway %+v, want the file counted by the time this host saw it (%s)", g, now)
	}
	rep, err := Audit(ctx, AuditOptions{Bucket: b, TableName: "iot.readings", Now: now.Add(20 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	f, keys := finding(t, rep, FindingClockAhead)
	if !f.Attention || !rep.Attention || len(keys) != 1 || keys[0] != "gw-1/ahead.csv" || !strings.Contains(f.Files[0].Detail, "in the future") {
		t.Fatalf("clock-ahead finding %+v", f)
	}
	if stuck, _ := finding(t, rep, FindingStuck); stuck.Count != 1 {
		t.Fatalf("a file seen 20 minutes ago and not loaded is stuck: %+v", stuck)
	}
}
