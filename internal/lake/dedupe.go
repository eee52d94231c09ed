package lake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/lake/datafile"
	"github.com/timelake/timelake/internal/lake/maintenance"
	"github.com/timelake/timelake/internal/lake/tablemeta"
)

// Corrections that win (timelake.read-dedup, docs/maintenance.md): a
// gateway sends a correction as a new file, and every reader then sees
// the old and the corrected row of the same series and time. With the
// table property timelake.read-dedup=true, a series key and time name one
// reading, and the row of the newest batch is the one that counts, as
// Timelake's own reader treats the property (it dedupes on read):
//
//   - the newest batch of a row is the data sequence number of its data
//     file (Iceberg spec, "Sequence Numbers": the snapshot that added it);
//     within one file, the later row;
//   - an append keeps the last of the rows of one file with one key
//     (datafile.NewNewestRows);
//   - compaction merges a group's files as runs ranked by their data
//     sequence numbers and keeps the newest row of each key
//     (mergeRunsNewest, merge.go); the new files take the highest data
//     sequence number of the group, so that a batch committed meanwhile
//     still counts as newer, and the group must be closed: no other file
//     of the partition whose rows may share a key with it has a data
//     sequence number within the group's (maintenance.DedupePlan);
//   - a cold partition's files that may share keys (their bounds on the
//     time and series key columns overlap, and their data sequence numbers
//     differ) are merged together, whatever their sizes, so that every
//     reader sees one row per key once the partition is compacted.
//
// Files of one data sequence number never hold one key twice (one append,
// or the files of one deduplicated merge), so bounds that overlap between
// them say nothing. Readers that dedupe themselves order by the batch (the
// load-time or source column, docs/schema.md).

// readDedup reports whether a table's properties set timelake.read-dedup.
func readDedup(props iceberg.Properties) bool {
	v, _ := strconv.ParseBool(props[PropReadDedup])
	return v
}

// boundColumn is a sort key column whose bounds the manifests carry
// (maintenance.BoundColumn).
type boundColumn = maintenance.BoundColumn

// boundColumns are h's time and series key columns.
func boundColumns(h *tablemeta.Indexed) []boundColumn {
	sc := h.Write().CurrentSchema()
	c, err := contractFromProps(h.Props(), sc)
	if err != nil {
		return nil
	}
	var out []boundColumn
	for _, name := range append([]string{c.TimeColumn}, c.SeriesKey...) {
		f, ok := sc.FindFieldByName(name)
		if !ok {
			continue
		}
		out = append(out, boundColumn{ID: f.ID, Compare: boundComparator(f.Type)})
	}
	return out
}

// boundComparator compares two single-value serialized bounds of type t
// (maintenance.BoundComparator).
func boundComparator(t iceberg.Type) func(a, b []byte) int { return maintenance.BoundComparator(t) }

// Duplicates says whether a table under timelake.read-dedup holds rows
// that compaction has not resolved yet: rows of one series key and time
// in files of different batches (or twice in one file), of which readers
// that do not dedupe see every one.
type Duplicates struct {
	// ReadDedup: the table sets timelake.read-dedup=true; without it,
	// rows of one key are all kept and nothing is counted.
	ReadDedup bool `json:"read_dedup"`
	// Rows counts the rows a compaction would leave out (each replaced by
	// a newer batch's row of its key), Partitions the partitions they are
	// in.
	Rows       int64    `json:"rows"`
	Partitions []string `json:"partitions"`
	// FilesRead counts the files whose key columns were read: those whose
	// bounds overlap a file of another batch.
	FilesRead int `json:"files_read"`
}

// UnresolvedDuplicates counts the rows of the current snapshot that a
// compaction under timelake.read-dedup would leave out: for each set of a
// partition's files that may share keys (their bounds overlap), it merges
// their time and series key columns keeping the newest row of each key
// (mergeRunsNewest) and counts the rows left out. Files no other batch's
// file overlaps are not read. Without timelake.read-dedup it reads
// nothing.
//
// Errors: reading manifests or data files.
func (t *Table) UnresolvedDuplicates(ctx context.Context) (Duplicates, error) {
	h, _ := t.loaded()
	d := Duplicates{ReadDedup: readDedup(h.Props()), Partitions: []string{}}
	if !d.ReadDedup {
		return d, nil
	}
	files, _, err := t.liveFiles(ctx, h, nil)
	if err != nil {
		return d, err
	}
	cols := boundColumns(h)
	v := t.view()
	byPart := map[string][]liveFile{}
	for _, f := range files {
		if f.Entry.DataFile().ContentType() == iceberg.EntryContentData {
			byPart[f.Partition] = append(byPart[f.Partition], f)
		}
	}
	keyCols := append([]string{v.contract.TimeColumn}, v.contract.SeriesKey...)
	for _, p := range slices.Sorted(maps.Keys(byPart)) {
		var n int64
		for _, c := range maintenance.SharingComponents(byPart[p], cols) {
			left, err := t.keysLeftOut(ctx, v, c, keyCols)
			if err != nil {
				return d, fmt.Errorf("duplicates of %s: %s: %w", t.name, p, err)
			}
			n += left
			d.FilesRead += len(c)
		}
		if n > 0 {
			d.Rows += n
			d.Partitions = append(d.Partitions, p)
		}
	}
	return d, nil
}

// keysLeftOut merges the key columns of files (in data sequence order)
// keeping the newest row of each key and returns how many rows it left
// out. A file out of order (written by another tool) is read whole and
// sorted.
func (t *Table) keysLeftOut(ctx context.Context, v tableView, files []liveFile, keyCols []string) (int64, error) {
	n, err := t.mergeKeys(ctx, v, files, keyCols, false)
	if errors.Is(err, errUnsortedRun) {
		return t.mergeKeys(ctx, v, files, keyCols, true)
	}
	return n, err
}

// mergeKeys is keysLeftOut; whole reads each file at once and sorts it.
func (t *Table) mergeKeys(ctx context.Context, v tableView, files []liveFile, keyCols []string, whole bool) (int64, error) {
	scan := t.Iceberg().Scan(table.WithSelectedFields(keyCols...), table.WithArrowBatchSize(mergeReadRows), table.WithMaxConcurrency(1))
	var runs []*mergeRun
	defer func() {
		for _, r := range runs {
			r.stop()
		}
	}()
	var total int64
	var k sortKey
	var sc *arrow.Schema
	for _, f := range files {
		df := f.Entry.DataFile()
		fsc, it, err := scan.ReadTasks(ctx, []table.FileScanTask{{File: df, Length: df.FileSizeBytes()}})
		if err != nil {
			return 0, err
		}
		if sc == nil {
			sc = fsc
			if k, err = newSortKey(sc, v.contract); err != nil {
				return 0, err
			}
		}
		total += df.Count()
		order := int(f.Entry.SequenceNum())
		if !whole {
			runs = append(runs, pullRun(df.FilePath(), order, it))
			continue
		}
		var recs []arrow.RecordBatch
		for rec, err := range it {
			if err != nil {
				decode.ReleaseAll(recs)
				return 0, err
			}
			recs = append(recs, rec)
		}
		sr, err := datafile.NewSortedRows(memory.DefaultAllocator, sc, recs, v.contract.order())
		decode.ReleaseAll(recs)
		if err != nil {
			return 0, err
		}
		run := sortedRun(ctx, df.FilePath(), order, sr)
		run.stop = sr.Release
		runs = append(runs, run)
	}
	var kept int64
	for rec, err := range mergeRunsNewest(ctx, memory.DefaultAllocator, sc, k, runs, mergeOutRows) {
		if err != nil {
			return 0, err
		}
		kept += rec.NumRows()
		rec.Release()
	}
	return total - kept, nil
}
