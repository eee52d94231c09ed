package lake

import (
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestSnapshotsGolden runs a fixed sequence of appends (one commit of
// several batches among them, and rows loaded twice), a compaction, a retention drop and another
// append on a local table with the lake's clock fixed, and compares every
// snapshot, manifest list entry and manifest entry with
// testdata/snapshots-<case>.golden, field by field (ids, times and file
// names normalised). go test -run TestSnapshotsGolden -update rewrites it.
func TestSnapshotsGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
	}{
		{"merge", map[string]string{table.ManifestMergeEnabledKey: "true"}},
		{"nomerge", map[string]string{table.ManifestMergeEnabledKey: "false"}},
		{"dedupe", map[string]string{table.ManifestMergeEnabledKey: "true", PropReadDedup: "true"}},
	} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			got := goldenSequence(t, tc.props)
			file := filepath.Join("testdata", "snapshots-"+name+".golden")
			checkGolden(t, file, got)
		})
	}
}

// goldenSequence runs the sequence on a new local table with properties
// props and describes its snapshots.
func goldenSequence(t *testing.T, props map[string]string) string {
	ctx := context.Background()
	l := newLocalLake(t)
	start := time.Date(2026, 1, 6, 10, 0, 0, 0, time.UTC)
	clock := start
	l.now = func() time.Time { return clock }
	tbl, err := l.CreateTable(ctx, testName, testSchema, CreateSpec{TimeColumn: "time", SeriesKey: []string{"device"},
		Partition: Day, Properties: props})
	if err != nil {
		t.Fatal(err)
	}
	tick := func(d time.Duration) { clock = clock.Add(d) }
	prepare := func(batch string, at time.Time, n, g int) *Prepared {
		rec := rowsAt(t, tbl, at, n, g)
		defer rec.Release()
		p, err := tbl.Prepare(ctx, batch, []arrow.RecordBatch{rec}, map[string]string{"timelake.source": batch}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	commit := func(ps ...*Prepared) {
		if _, err := tbl.Commit(ctx, ps, CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		tick(time.Minute)
	}
	day1 := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	day2 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	commit(prepare("a.csv", day1, 10, 0))
	commit(prepare("b.csv", day1.Add(time.Hour), 12, 1))
	commit(prepare("c.csv", day2, 7, 2))
	tick(2 * time.Hour) // 01-01 and 01-02 are cold
	commit(prepare("d.csv", start, 20, 0), prepare("e.csv", start, 21, 1), prepare("f.csv", start, 22, 2))
	commit(prepare("g.csv", start, 9, 0)) // rows of d.csv again
	commit(prepare("h.csv", day2.Add(time.Hour), 5, 1))
	res, err := tbl.Compact(ctx, CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.SnapshotID == 0 {
		t.Fatalf("compaction committed nothing: %+v", res)
	}
	tick(time.Minute)
	ret, err := tbl.ApplyRetention(ctx, 4*24*time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	if ret.SnapshotID == 0 {
		t.Fatalf("retention committed nothing: %+v", ret)
	}
	tick(time.Minute)
	commit(prepare("i.csv", start.Add(2*time.Minute), 6, 1), prepare("j.csv", day2.Add(2*time.Hour), 4, 2))
	commit(prepare("k.csv", start.Add(3*time.Minute), 3, 0))
	return describeSnapshots(t, tbl, start)
}

var uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// describeSnapshots renders every snapshot of tbl, its manifest list and
// its manifests' entries, snapshot ids as their position in the table's
// metadata (s0, s1...), times as offsets from start, uuids as U.
func describeSnapshots(t *testing.T, tbl *Table, start time.Time) string {
	ctx := context.Background()
	fs, err := tbl.fsF(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snaps := tbl.Metadata().Snapshots()
	ids := map[int64]string{}
	for i, s := range snaps {
		ids[s.SnapshotID] = fmt.Sprintf("s%d", i)
	}
	id := func(p *int64) string {
		if p == nil {
			return "-"
		}
		if s, ok := ids[*p]; ok {
			return s
		}
		return "unknown"
	}
	seq := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	var b strings.Builder
	for i, s := range snaps {
		fmt.Fprintf(&b, "snapshot s%d parent %s seq %d at +%v schema %s\n", i, id(s.ParentSnapshotID), s.SequenceNumber,
			time.UnixMilli(s.TimestampMs).Sub(start), seq(func() *int64 {
				if s.SchemaID == nil {
					return nil
				}
				v := int64(*s.SchemaID)
				return &v
			}()))
		list := strings.Replace(path.Base(s.ManifestList), fmt.Sprint(s.SnapshotID), ids[s.SnapshotID], 1)
		fmt.Fprintf(&b, "  list %s\n", uuidPattern.ReplaceAllString(list, "U"))
		if s.Summary != nil {
			fmt.Fprintf(&b, "  operation %s\n", s.Summary.Operation)
			for _, k := range slices.Sorted(func(yield func(string) bool) {
				for k := range s.Summary.Properties {
					if !yield(k) {
						return
					}
				}
			}) {
				fmt.Fprintf(&b, "  summary %s=%s\n", k, s.Summary.Properties[k])
			}
		}
		mfs, err := s.Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			fmt.Fprintf(&b, "  manifest content %d spec %d added-snapshot %s seq %d min-seq %d files added %d existing %d deleted %d rows added %d existing %d deleted %d\n",
				mf.ManifestContent(), mf.PartitionSpecID(), id(ptr(mf.SnapshotID())), mf.SequenceNum(), mf.MinSequenceNum(),
				mf.AddedDataFiles(), mf.ExistingDataFiles(), mf.DeletedDataFiles(), mf.AddedRows(), mf.ExistingRows(), mf.DeletedRows())
			for _, p := range mf.Partitions() {
				fmt.Fprintf(&b, "    partition summary null %v nan %v lower %s upper %s\n", p.ContainsNull, fmtBool(p.ContainsNaN),
					fmtBytes(p.LowerBound), fmtBytes(p.UpperBound))
			}
			entries, err := manifestEntries(fs, mf, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				df := e.DataFile()
				fmt.Fprintf(&b, "    entry %s snapshot %s data-seq %s file-seq %s content %d %s partition %s records %d size %d\n",
					status(e.Status()), id(ptr(e.SnapshotID())), fmt.Sprint(e.SequenceNum()), seq(e.FileSequenceNum()),
					df.ContentType(), uuidPattern.ReplaceAllString(path.Base(df.FilePath()), "U"),
					partitionKey(df.Partition()), df.Count(), df.FileSizeBytes())
			}
		}
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

func fmtBool(p *bool) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func fmtBytes(p *[]byte) string {
	if p == nil {
		return "-"
	}
	return hex.EncodeToString(*p)
}

func status(s iceberg.ManifestEntryStatus) string {
	switch s {
	case iceberg.EntryStatusADDED:
		return "ADDED"
	case iceberg.EntryStatusEXISTING:
		return "EXISTING"
	case iceberg.EntryStatusDELETED:
		return "DELETED"
	}
	return fmt.Sprint(int(s))
}

// checkGolden compares got with the golden file, line by line, or writes
// it there with -update.
func checkGolden(t *testing.T, file, got string) {
	t.Helper()
	if *updateGolden {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got == string(want) {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gl), len(wl)) {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("%s differs from line %d:\ngot:  %s\nwant: %s", file, i+1, g, w)
		}
	}
}
