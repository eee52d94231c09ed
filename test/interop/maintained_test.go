package interop

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake"
)

// maintainedSubject appends many small batches over three days, then runs
// maintenance: with expire (true) every partition is compacted as cold and
// every snapshot but the current one expires, its batch ids moving into the
// load history; without, the newest partition is compacted by size tier and
// the replaced files stay for the older snapshots.
func maintainedSubject(open func(*testing.T) warehouse, expire bool) func(*testing.T) subject {
	return func(t *testing.T) subject {
		ctx := context.Background()
		w := open(t)
		name := lake.TableName{Namespace: "gen", Name: "maintained"}
		tbl, err := w.lake.CreateTable(ctx, name, genSchema,
			lake.CreateSpec{TimeColumn: "time", SeriesKey: []string{"site", "device"}, Partition: lake.Day})
		if err != nil {
			t.Fatal(err)
		}
		var want []Row
		for b := range 12 {
			rows := genRows(b, 40, 1, genStart.Add(time.Duration(b%3)*24*time.Hour))
			appendRows(t, tbl, fmt.Sprintf("gw-%d/%02d.csv", b%4, b), rows, lake.AppendOptions{})
			want = append(want, rows...)
		}
		props := map[string]string{lake.PropCompactColdAfter: "1h"}
		if expire {
			props = map[string]string{lake.PropCompactColdAfter: "1ms", lake.PropSnapshotRetention: "1ms", lake.PropMinSnapshots: "1"}
		}
		if err := tbl.SetProperties(ctx, props, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		rep, err := tbl.Maintain(ctx, lake.MaintainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Compacted.Groups) == 0 || rep.Compacted.SnapshotID == 0 {
			t.Fatalf("maintenance compacted nothing: %+v", rep.Compacted)
		}
		if expire && rep.Expired.Remembered != 12 {
			t.Fatalf("expiry moved %d batch ids into the load history, want 12", rep.Expired.Remembered)
		}
		return subject{w: w, name: name, minPartitions: 3, keepsReplacedFiles: !expire,
			want: func(*testing.T, []Column) []Row { return want }}
	}
}

// TestLoadHistoryReadByDuckDB: the load history is plain Parquet that
// DuckDB reads: every key loaded is there with its rows.
func TestLoadHistoryReadByDuckDB(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(*testing.T) warehouse
	}{{"local", localWarehouse}, {"s3", s3Warehouse}, {"rest", restWarehouse}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := maintainedSubject(tc.open, true)(t)
			tbl, err := s.w.lake.LoadTable(ctx, s.name)
			if err != nil {
				t.Fatal(err)
			}
			segs := strings.Split(tbl.Properties()[lake.PropLoadHistory], ",")
			if len(segs) == 0 || segs[0] == "" {
				t.Fatalf("no load history named by %s", lake.PropLoadHistory)
			}
			dir := t.TempDir()
			var folder string
			for _, seg := range segs {
				local, err := LocalFile(ctx, s.w.s3, tbl.Location()+"/"+s.w.own+seg, dir)
				if err != nil {
					t.Fatal(err)
				}
				folder = filepath.Dir(local)
			}
			// The glob docs/maintenance.md gives (a maintained table may hold
			// segments merged away: none here).
			db := duckDB(t)
			rows, err := db.QueryContext(ctx, "SELECT key, rows, snapshot_id, coalesce(length(sha256), 0) FROM read_parquet('"+
				filepath.Join(folder, "_load-history-*.parquet")+"') ORDER BY key")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var keys []string
			for rows.Next() {
				var key string
				var n, id, shaLen int64
				if err := rows.Scan(&key, &n, &id, &shaLen); err != nil {
					t.Fatal(err)
				}
				if n != 40 || id == 0 {
					t.Errorf("load history row %s: %d rows, snapshot %d; want 40 rows and its snapshot", key, n, id)
				}
				keys = append(keys, key)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			var want []string
			for b := range 12 {
				want = append(want, fmt.Sprintf("gw-%d/%02d.csv", b%4, b))
			}
			slices.Sort(want)
			if !slices.Equal(keys, want) {
				t.Fatalf("DuckDB reads keys %v from the load history, want %v", keys, want)
			}
		})
	}
}
