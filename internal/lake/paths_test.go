package lake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/storage"
)

// TestTableRel: what a path in a table's metadata may be, on a local
// warehouse and on S3: the table's location and a valid key below it;
// nothing else.
func TestTableRel(t *testing.T) {
	ctx := context.Background()
	local, err := Open(ctx, "/srv/lake", Options{})
	if err != nil {
		t.Fatal(err)
	}
	s3l := &Lake{loc: storage.Location{Bucket: "lake", Prefix: "warehouse"}}
	n := TableName{Namespace: "iot", Name: "readings"}
	for _, tc := range []struct {
		lake *Lake
		uri  string
		rel  string // "" when refused
	}{
		{local, "file:///srv/lake/iot/readings/data/time_day=2026-01-05/a.parquet", "data/time_day=2026-01-05/a.parquet"},
		{local, "/srv/lake/iot/readings/metadata/snap-1.avro", "metadata/snap-1.avro"},
		{local, "file:///srv/lake/iot/readings/data/a%20b.parquet", "data/a b.parquet"},
		{local, "file://localhost/srv/lake/iot/readings/data/a.parquet", "data/a.parquet"},
		{local, "file:///srv/lake/iot/readings/metadata/../../other/data/a.parquet", ""},
		{local, "file:///srv/lake/iot/other/data/a.parquet", ""},
		{local, "file:///srv/lake/iot/readings-2/data/a.parquet", ""},
		{local, "file:///etc/passwd", ""},
		{local, "/etc/passwd", ""},
		{local, "file://evil.example/srv/lake/iot/readings/data/a.parquet", ""},
		{local, "data/a.parquet", ""},
		{local, "s3://lake/warehouse/iot/readings/data/a.parquet", ""},
		{local, "file:///srv/lake/iot/readings//data/a.parquet", ""},
		{local, "file:///srv/lake/iot/readings/", ""},
		{local, "file:///old/lake/iot/readings/data/a.parquet", ""}, // a warehouse moved from /old/lake
		{s3l, "s3://lake/warehouse/iot/readings/data/a.parquet", "data/a.parquet"},
		{s3l, "s3a://lake/warehouse/iot/readings/metadata/snap-1.avro", "metadata/snap-1.avro"},
		{s3l, "s3://other-bucket/warehouse/iot/readings/data/a.parquet", ""},
		{s3l, "s3://lake/warehouse/iot/other/data/a.parquet", ""},
		{s3l, "s3://lake/iot/readings/data/a.parquet", ""},
		{s3l, "s3://lake/warehouse/iot/readings/../other/data/a.parquet", ""},
		{s3l, "s3://lake/warehouse/iot/readings/data/./a.parquet", ""},
		{s3l, "gs://lake/warehouse/iot/readings/data/a.parquet", ""},
		{s3l, "warehouse/iot/readings/data/a.parquet", ""},
		{s3l, "s3://lake/warehouse/iot/readings/data/a\nb.parquet", ""},
	} {
		rel, err := tc.lake.tableRel(n, tc.uri)
		if moved := strings.Contains(fmt.Sprint(err), "was the warehouse moved or copied?"); moved != (tc.uri == "file:///old/lake/iot/readings/data/a.parquet") {
			t.Errorf("%s: %v: says the warehouse was moved: %v", tc.uri, err, moved)
		}
		if tc.rel == "" {
			if !errors.Is(err, ErrOutsideTable) {
				t.Errorf("%s: %q, %v; want ErrOutsideTable", tc.uri, rel, err)
			}
		} else if err != nil || rel != tc.rel {
			t.Errorf("%s: %q, %v; want %q", tc.uri, rel, err, tc.rel)
		}
	}
}

// relocated is df under another path.
func relocated(t *testing.T, tbl *Table, df iceberg.DataFile, path string) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(tbl.Metadata().PartitionSpec(), df.ContentType(), path, df.FileFormat(),
		df.Partition(), nil, nil, df.Count(), df.FileSizeBytes())
	if err != nil {
		t.Fatal(err)
	}
	return b.ColumnSizes(df.ColumnSizes()).ValueCounts(df.ValueCounts()).NullValueCounts(df.NullValueCounts()).
		LowerBoundValues(df.LowerBoundValues()).UpperBoundValues(df.UpperBoundValues()).Build()
}

// TestDataFilesOutsideTheTable: a data file the metadata names outside the
// table (here in another table's folder of the same warehouse) is never
// read, rewritten or deleted: a scan fails naming it, compaction leaves it
// and compacts the rest, and an expiry that would delete it deletes the
// other files and fails naming it, the file untouched. On a local
// warehouse and on S3.
func TestDataFilesOutsideTheTable(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := goodTable(t, l, nil)
		before, _ := tbl.CurrentSnapshotID()
		p := confPrepareMulti(t, tbl)[0]
		df := p.files[0]
		rel, err := l.tableRel(tbl.name, df.FilePath())
		if err != nil {
			t.Fatal(err)
		}
		body, _, err := storage.ReadAll(ctx, l.store, catalog.TablePrefix(tbl.name)+rel)
		if err != nil {
			t.Fatal(err)
		}
		other := TableName{Namespace: "iot", Name: "other"}
		victimKey := catalog.TablePrefix(other) + "data/victim.parquet"
		if _, err := l.store.Put(ctx, victimKey, bytes.NewReader(body), storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		victim := l.tableLocation(other) + "/data/victim.parquet"
		p.files[0] = relocated(t, tbl, df, victim)
		if _, err := tbl.Commit(ctx, []*Prepared{p}, CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		intact := func(when string) {
			t.Helper()
			b, _, err := storage.ReadAll(ctx, l.store, victimKey)
			if err != nil || !bytes.Equal(b, body) {
				t.Fatalf("%s: the file outside the table: %v", when, err)
			}
		}

		_, err = tbl.Iceberg().Scan().ToArrowTable(ctx)
		if !errors.Is(err, ErrOutsideTable) || !strings.Contains(err.Error(), "victim.parquet") {
			t.Fatalf("a scan: %v, want ErrOutsideTable naming the file", err)
		}
		if _, err := tbl.Compact(ctx, CompactOptions{MinFiles: 2, ColdAfter: time.Nanosecond}); err != nil {
			t.Fatalf("compaction: %v", err)
		}
		intact("after compaction")
		h, _ := tbl.loaded()
		files, _, err := tbl.liveFiles(ctx, h, nil)
		if err != nil {
			t.Fatal(err)
		}
		live := false
		for _, f := range files {
			live = live || f.Entry.DataFile().FilePath() == victim
		}
		if !live {
			t.Fatal("compaction replaced the file outside the table")
		}

		if err := tbl.RollbackTo(ctx, before); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		_, err = tbl.Expire(ctx, ExpireOptions{OlderThan: time.Millisecond, RetainLast: 1})
		if !errors.Is(err, ErrOutsideTable) || !strings.Contains(err.Error(), "victim.parquet") {
			t.Fatalf("an expiry that would delete it: %v, want ErrOutsideTable naming it", err)
		}
		intact("after expiry")
		if n := len(tbl.Metadata().Snapshots()); n != 1 {
			t.Fatalf("%d snapshots after the expiry, want 1", n)
		}
	})
}

// TestDataFileThatIsALink: a data file of a local table that is a symbolic
// link (to a copy outside the table) is never read, rewritten or deleted:
// compaction leaves its group as it is, without an error, run after run;
// the file it points at is untouched. S3 has no links.
func TestDataFileThatIsALink(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := goodTable(t, l, nil)
	if _, err := tbl.Commit(ctx, confPrepareMulti(t, tbl), CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	h, _ := tbl.loaded()
	files, _, err := tbl.liveFiles(ctx, h, nil)
	if err != nil || len(files) < 2 {
		t.Fatalf("live files %d, %v", len(files), err)
	}
	rel, err := l.tableRel(tbl.name, files[0].Entry.DataFile().FilePath())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(l.loc.Dir, tbl.name.Namespace, tbl.name.Name, filepath.FromSlash(rel))
	outside := filepath.Join(t.TempDir(), "victim.parquet")
	if err := os.Rename(path, outside); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, path); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(outside)
	if err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 2; round++ {
		if _, err := tbl.Compact(ctx, CompactOptions{MinFiles: 2, ColdAfter: time.Nanosecond}); err != nil {
			t.Fatalf("compaction %d: %v", round, err)
		}
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link: %v", err)
	}
	if b, err := os.ReadFile(outside); err != nil || !bytes.Equal(b, body) {
		t.Fatalf("the file the link points at: %v", err)
	}
}
