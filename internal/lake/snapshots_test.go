package lake

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// prepareN prepares batches <prefix>0..n-1 of rows rows each, one hour apart.
func prepareN(t *testing.T, tbl *Table, prefix string, n, rowsEach int) []*Prepared {
	t.Helper()
	var ps []*Prepared
	for i := range n {
		rec := rows(t, tbl.ArrowSchema(), day0.Add(time.Duration(i)*time.Hour), rowsEach, false)
		p, err := tbl.Prepare(context.Background(), fmt.Sprintf("%s%d", prefix, i), []arrow.RecordBatch{rec}, nil, 0)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// scanSnapshotCount counts the rows a reader sees at snapshot id.
func scanSnapshotCount(t *testing.T, tbl *Table, id int64) int64 {
	t.Helper()
	at, err := tbl.Iceberg().Scan(table.WithSnapshotID(id)).ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	return at.NumRows()
}

// TestStagedCommitWritesCompleteSnapshots checks the snapshots Commit
// stages itself: every snapshot of a multi-batch commit is a complete table
// state for readers (its own rows and all before it), carries running
// totals, and names its data files with its own snapshot id and sequence
// number, also once merged into one manifest (Iceberg spec, "Manifests":
// EXISTING entries keep the snapshot id and sequence numbers that added them).
func TestStagedCommitWritesCompleteSnapshots(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl, err := l.CreateTable(ctx, testName, testSchema, CreateSpec{
			TimeColumn: "time", SeriesKey: []string{"device"},
			// Merge the parent's manifests from the third commit on.
			Properties: map[string]string{table.ManifestMinMergeCountKey: "3"},
		})
		if err != nil {
			t.Fatal(err)
		}
		const perBatch = 7
		var want int64
		wantFiles := 0
		for commit := range 4 {
			ps := prepareN(t, tbl, fmt.Sprintf("c%d-b", commit), 3, perBatch)
			res, err := tbl.Commit(ctx, ps, CommitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				want += perBatch
				wantFiles += r.DataFiles
				s := tbl.Metadata().SnapshotByID(r.SnapshotID)
				if s == nil {
					t.Fatalf("%s: snapshot %d missing", r.BatchID, r.SnapshotID)
				}
				if got := scanSnapshotCount(t, tbl, r.SnapshotID); got != want {
					t.Errorf("%s: snapshot %d shows %d rows, want %d", r.BatchID, r.SnapshotID, got, want)
				}
				props := s.Summary.Properties
				if props.GetInt64("total-records", -1) != want || props.GetInt64("added-records", -1) != perBatch ||
					props.GetInt64("added-data-files", -1) != int64(r.DataFiles) || props[SummaryBatchID] != r.BatchID ||
					s.Summary.Operation != table.OpAppend {
					t.Errorf("%s: summary %v", r.BatchID, s.Summary)
				}
			}
		}
		if got := scanCount(t, tbl); got != want {
			t.Fatalf("rows = %d, want %d", got, want)
		}

		// The newest snapshot names few manifests, and every data file
		// is recorded with the snapshot that added it.
		fs, err := l.fsF(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cur := tbl.Metadata().CurrentSnapshot()
		mfs, err := cur.Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		if len(mfs) > 2 {
			t.Errorf("current snapshot names %d manifests, want merged ones (<= 2)", len(mfs))
		}
		bySnapshot := map[int64]int64{} // snapshot id -> its sequence number
		for _, s := range tbl.Metadata().Snapshots() {
			bySnapshot[s.SnapshotID] = s.SequenceNumber
		}
		files := 0
		for _, m := range mfs {
			entries, err := m.FetchEntries(fs, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				files++
				seq, ok := bySnapshot[e.SnapshotID()]
				if !ok {
					t.Errorf("%s: unknown snapshot %d", e.DataFile().FilePath(), e.SnapshotID())
					continue
				}
				if e.SequenceNum() != seq {
					t.Errorf("%s: sequence %d, its snapshot has %d", e.DataFile().FilePath(), e.SequenceNum(), seq)
				}
				// ADDED is relative to the snapshot that added the
				// manifest; entries merged in from others are EXISTING.
				wantStatus := iceberg.EntryStatusEXISTING
				if e.SnapshotID() == m.SnapshotID() {
					wantStatus = iceberg.EntryStatusADDED
				}
				if e.Status() != wantStatus {
					t.Errorf("%s: status %v, want %v", e.DataFile().FilePath(), e.Status(), wantStatus)
				}
			}
		}
		if files != wantFiles {
			t.Errorf("current snapshot names %d data files, want %d", files, wantFiles)
		}
		assertNoOrphans(t, l, tbl)
	})
}

// TestStagedCommitLostRaceRebases checks a staged commit that loses the
// race for vN.metadata.json: it is rebuilt on the winner's snapshot, keeps
// the winner's rows, and leaves no file of the losing attempt behind.
func TestStagedCommitLostRaceRebases(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := createTestTable(t, l)
	other, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	ps := prepareN(t, tbl, "mine-", 3, 5)
	res, err := tbl.Commit(ctx, ps, CommitOptions{BeforeCommit: func(attempt int) error {
		if attempt == 1 {
			// Another writer commits after our attempt read the table.
			appendRows(t, other, "theirs", day0, 4)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Attempts < 2 {
		t.Fatalf("attempts = %d, want a lost race", res[0].Attempts)
	}
	if got := scanCount(t, tbl); got != 3*5+4 {
		t.Fatalf("rows = %d, want 19", got)
	}
	if _, ok := tbl.FindBatch("theirs"); !ok {
		t.Fatal("the other writer's batch is not in the ancestry")
	}
	assertNoOrphans(t, l, tbl)
}
