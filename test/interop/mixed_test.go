package interop

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
)

// csvOf renders rows of genSchema as a CSV file (sep: the separator,
// decimalComma: 1,5 for 1.5), with an empty cell for a null.
func csvOf(rows []Row, sep string, decimalComma bool) string {
	var b strings.Builder
	b.WriteString(strings.Join([]string{"time", "site", "device", "reading", "seq"}, sep) + "\n")
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, v := range r {
			switch x := v.(type) {
			case nil:
			case int64:
				if i == 0 {
					cells[i] = time.UnixMicro(x).UTC().Format(time.RFC3339Nano)
				} else {
					cells[i] = strconv.FormatInt(x, 10)
				}
			case float64:
				cells[i] = strconv.FormatFloat(x, 'g', -1, 64)
				if decimalComma {
					cells[i] = strings.Replace(cells[i], ".", ",", 1)
				}
			case string:
				cells[i] = x
			}
		}
		b.WriteString(strings.Join(cells, sep) + "\n")
	}
	return b.String()
}

// mixedFleetSubject ingests the files of two sites into one table: one
// site writes plain CSV, the other German Excel exports read with its
// source profile; both have rows that are refused and set aside
// (--on-error skip-rows), and every row carries its landing key and load
// time (--source-column, --load-time-column).
func mixedFleetSubject(open func(*testing.T) warehouse) func(*testing.T) subject {
	return func(t *testing.T) subject {
		ctx := context.Background()
		w := open(t)
		name := lake.TableName{Namespace: "fleet", Name: "mixed"}
		tbl, err := w.lake.CreateTable(ctx, name, genSchema,
			lake.CreateSpec{TimeColumn: "time", SeriesKey: []string{"site", "device"}, Partition: lake.Day})
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.SetProperties(ctx, map[string]string{
			"timelake.profile.berlin.match":             "site-berlin/",
			"timelake.profile.berlin.csv-delimiter":     ";",
			"timelake.profile.berlin.csv-decimal-comma": "true",
			lake.PropOnError:                            "skip-rows",
			lake.PropMaxBadRows:                         "20%",
		}, nil); err != nil {
			t.Fatal(err)
		}
		paris, berlin := genRows(1, 60, 2, genStart), genRows(2, 50, 2, genStart.Add(12*time.Hour))
		bad := "2026-02-27T10:00:00Z,site-1,dev-01,n/a,1\n" + // not a double
			"2026-02-27T10:01:00Z,site-1,dev-01,1.5\n" + // a field short
			"2026-02-27T10:02:00Z,site-1,dev-01,2.5,7.5\n" // a fraction in a long column
		files := map[string]string{
			"site-paris/gw-1/a.csv":  csvOf(paris, ",", false) + bad,
			"site-berlin/gw-9/b.csv": csvOf(berlin, ";", true) + "2026-02-27T11:00:00Z;site-1;dev-02;2.5;3\n", // a point in a decimal-comma file
		}
		for key, body := range files {
			if _, err := w.landing.Put(ctx, key, bytes.NewReader([]byte(body)), storage.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		loaded := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
		rep, err := ingest.Run(ctx, ingest.Config{Landing: w.landing, Lake: w.lake, Table: name, Logger: quiet, WorkDir: t.TempDir(),
			SettleTime: -1, OpenEndSettleTime: -1, SourceColumn: "_source", LoadTimeColumn: "_loaded_at",
			Now: func() time.Time { return loaded }})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Loaded != 2 || rep.Rows != 110 || rep.RejectedRows != 4 {
			t.Fatalf("ingest: %d loaded, %d rows, %d set aside; want 2, 110, 4: %+v", rep.Loaded, rep.Rows, rep.RejectedRows, rep.Files)
		}
		for _, f := range rep.Files {
			if f.Key == "site-berlin/gw-9/b.csv" && f.Profile != "berlin" {
				t.Fatalf("%s read with profile %q", f.Key, f.Profile)
			}
		}
		return subject{w: w, name: name, minPartitions: 2,
			want: func(t *testing.T, cols []Column) []Row {
				if len(cols) != 7 || cols[5].Name != "_source" || cols[6].Name != "_loaded_at" {
					t.Fatalf("columns %+v", cols)
				}
				var want []Row
				for key, rows := range map[string][]Row{"site-paris/gw-1/a.csv": paris, "site-berlin/gw-9/b.csv": berlin} {
					for _, r := range rows {
						want = append(want, append(append(Row{}, r...), key, loaded.UnixMicro()))
					}
				}
				return want
			}}
	}
}

// correctedSubject appends a day of readings, then corrections of some of
// them as a batch of their own, under timelake.read-dedup, and compacts the
// cold partition: every reader sees each reading once, the correction where
// there is one.
func correctedSubject(open func(*testing.T) warehouse) func(*testing.T) subject {
	return func(t *testing.T) subject {
		ctx := context.Background()
		w := open(t)
		name := lake.TableName{Namespace: "fleet", Name: "corrected"}
		tbl, err := w.lake.CreateTable(ctx, name, genSchema,
			lake.CreateSpec{TimeColumn: "time", SeriesKey: []string{"site", "device"}, Partition: lake.Day})
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.SetProperties(ctx, map[string]string{lake.PropReadDedup: "true"}, nil); err != nil {
			t.Fatal(err)
		}
		orig := genRows(1, 80, 2, genStart)
		fixes := map[string]Row{}
		var fix []Row
		for i := 0; i < len(orig); i += 5 {
			r := append(Row{}, orig[i]...)
			r[3], r[4] = 1000.5+float64(i), int64(900000+i)
			fix = append(fix, r)
			fixes[fmt.Sprint(r[:3]...)] = r
		}
		appendRows(t, tbl, "gw-1/a.csv", orig, lake.AppendOptions{})
		appendRows(t, tbl, "gw-1/a-fix.csv", fix, lake.AppendOptions{})
		if err := tbl.SetProperties(ctx, map[string]string{lake.PropCompactColdAfter: "1ms", lake.PropSnapshotRetention: "1ms", lake.PropMinSnapshots: "1"}, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		rep, err := tbl.Maintain(ctx, lake.MaintainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var replaced int64
		for _, g := range rep.Compacted.Groups {
			replaced += g.Replaced
		}
		if replaced != int64(len(fix)) {
			t.Fatalf("compaction replaced %d rows, want %d: %+v", replaced, len(fix), rep.Compacted)
		}
		if d, err := tbl.UnresolvedDuplicates(ctx); err != nil || d.Rows != 0 {
			t.Fatalf("duplicates left: %+v %v", d, err)
		}
		var want []Row
		for _, r := range orig {
			if f, ok := fixes[fmt.Sprint(r[:3]...)]; ok {
				r = f
			}
			want = append(want, r)
		}
		return subject{w: w, name: name, minPartitions: 2, want: func(*testing.T, []Column) []Row { return want }}
	}
}

// retainedSubject holds old and recent readings; maintenance under a
// retention drops the old partitions whole, and expires their files.
func retainedSubject(open func(*testing.T) warehouse) func(*testing.T) subject {
	return func(t *testing.T) subject {
		ctx := context.Background()
		w := open(t)
		name := lake.TableName{Namespace: "fleet", Name: "retained"}
		tbl, err := w.lake.CreateTable(ctx, name, genSchema,
			lake.CreateSpec{TimeColumn: "time", SeriesKey: []string{"site", "device"}, Partition: lake.Day})
		if err != nil {
			t.Fatal(err)
		}
		old := genRows(1, 60, 3, time.Now().UTC().Add(-60*24*time.Hour))
		recent := genRows(2, 40, 1, time.Now().UTC().Add(-6*time.Hour))
		appendRows(t, tbl, "gw-1/old.csv", old, lake.AppendOptions{})
		appendRows(t, tbl, "gw-1/recent.csv", recent, lake.AppendOptions{})
		if err := tbl.SetProperties(ctx, map[string]string{lake.PropRetention: "30d", lake.PropSnapshotRetention: "1ms", lake.PropMinSnapshots: "1"}, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		rep, err := tbl.Maintain(ctx, lake.MaintainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Retention == nil || len(rep.Retention.Partitions) < 3 || rep.Retention.Rows != 60 {
			t.Fatalf("retention: %+v", rep.Retention)
		}
		return subject{w: w, name: name, minPartitions: 1, want: func(*testing.T, []Column) []Row { return recent }}
	}
}
