package lake

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

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
//     sequence number within the group's (dedupePlan);
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

// boundColumn is a sort key column (time, series key) whose bounds the
// manifests carry: its field id and how its bound bytes compare (Iceberg
// spec, "Binary single-value serialization").
type boundColumn struct {
	id      int
	compare func(a, b []byte) int // nil: not comparable, any bounds may overlap
}

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
		out = append(out, boundColumn{id: f.ID, compare: boundComparator(f.Type)})
	}
	return out
}

// boundComparator compares two single-value serialized bounds of type t.
func boundComparator(t iceberg.Type) func(a, b []byte) int {
	le := binary.LittleEndian
	switch t.(type) {
	case iceberg.StringType, iceberg.BinaryType, iceberg.FixedType, iceberg.UUIDType:
		return bytes.Compare
	case iceberg.Int32Type, iceberg.DateType:
		return func(a, b []byte) int {
			if len(a) < 4 || len(b) < 4 {
				return 0
			}
			return cmp.Compare(int32(le.Uint32(a)), int32(le.Uint32(b)))
		}
	case iceberg.Int64Type, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimeType:
		return func(a, b []byte) int {
			if len(a) < 8 || len(b) < 8 {
				return 0
			}
			return cmp.Compare(int64(le.Uint64(a)), int64(le.Uint64(b)))
		}
	case iceberg.Float32Type:
		return func(a, b []byte) int {
			if len(a) < 4 || len(b) < 4 {
				return 0
			}
			return cmp.Compare(math.Float32frombits(le.Uint32(a)), math.Float32frombits(le.Uint32(b)))
		}
	case iceberg.Float64Type:
		return func(a, b []byte) int {
			if len(a) < 8 || len(b) < 8 {
				return 0
			}
			return cmp.Compare(math.Float64frombits(le.Uint64(a)), math.Float64frombits(le.Uint64(b)))
		}
	case iceberg.BooleanType:
		return bytes.Compare
	}
	return nil
}

// mayShareKeys reports whether two data files may hold rows of one series
// key and time: their data sequence numbers differ and their bounds overlap
// on every sort key column (a missing bound may overlap anything).
func mayShareKeys(a, b liveFile, cols []boundColumn) bool {
	if a.Entry.SequenceNum() == b.Entry.SequenceNum() {
		return false
	}
	da, db := a.Entry.DataFile(), b.Entry.DataFile()
	la, ua, lb, ub := da.LowerBoundValues(), da.UpperBoundValues(), db.LowerBoundValues(), db.UpperBoundValues()
	for _, c := range cols {
		if c.compare == nil {
			continue
		}
		x, y, z, w := la[c.id], ua[c.id], lb[c.id], ub[c.id]
		if x == nil || y == nil || z == nil || w == nil {
			continue
		}
		if c.compare(x, w) > 0 || c.compare(z, y) > 0 {
			return false
		}
	}
	return true
}

// sharingComponents cuts files (one partition's) into the sets whose
// members may share keys, directly or through others (mayShareKeys), and
// returns those of two files or more, each in data sequence order.
func sharingComponents(files []liveFile, cols []boundColumn) [][]liveFile {
	parent := make([]int, len(files))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	for i := range files {
		for j := i + 1; j < len(files); j++ {
			if find(i) != find(j) && mayShareKeys(files[i], files[j], cols) {
				parent[find(i)] = find(j)
			}
		}
	}
	byRoot := map[int][]liveFile{}
	for i, f := range files {
		byRoot[find(i)] = append(byRoot[find(i)], f)
	}
	var out [][]liveFile
	for _, root := range slices.Sorted(maps.Keys(byRoot)) {
		if c := byRoot[root]; len(c) > 1 {
			slices.SortFunc(c, bySequence)
			out = append(out, c)
		}
	}
	return out
}

func bySequence(a, b liveFile) int {
	if c := cmp.Compare(a.Entry.SequenceNum(), b.Entry.SequenceNum()); c != 0 {
		return c
	}
	return cmp.Compare(a.Entry.DataFile().FilePath(), b.Entry.DataFile().FilePath())
}

// dedupePlan turns maintenance.PlanCompaction's groups into those of a table under
// timelake.read-dedup: a live partition's groups that are closed (no file
// of the partition outside the group whose data sequence number lies
// within the group's may share a key with a member), and for each cold
// partition its files that may share keys (sharingComponents, whatever
// their sizes) and its other small files, each set in data sequence order
// (closed by construction). Groups are taken within maxBytes and the time left (fits) as
// maintenance.PlanCompaction takes them; deferred counts those left.
func dedupePlan(h *tablemeta.Indexed, files []liveFile, groups []CompactionGroup, deferred int, spec int32, s compactSettings, now time.Time, maxBytes int64,
	fits func(CompactionGroup) bool) ([]CompactionGroup, int) {
	cols := boundColumns(h)
	byPart := maintenance.CompactableByPartition(files, spec)
	cold := func(fs []liveFile) bool {
		for _, f := range fs {
			if !f.Committed.Before(now.Add(maintenance.ColdSlack(s.ColdAfter) - s.ColdAfter)) {
				return false
			}
		}
		return true
	}
	var planned []CompactionGroup
	for _, g := range groups {
		if !cold(byPart[g.Partition]) && closedGroup(g, byPart[g.Partition], cols) {
			planned = append(planned, g)
		}
	}
	parts := slices.Sorted(maps.Keys(byPart))
	for i := len(parts) - 1; i >= 0; i-- { // newest partitions first, as maintenance.PlanCompaction
		fs := byPart[parts[i]]
		if !cold(fs) {
			continue
		}
		inComponent := map[string]bool{}
		for _, c := range sharingComponents(fs, cols) {
			g := CompactionGroup{Partition: parts[i], Reason: "cold"}
			for _, f := range c {
				inComponent[f.Entry.DataFile().FilePath()] = true
				g.Inputs = append(g.Inputs, f.Entry.DataFile())
				g.FilesIn++
				g.BytesIn += f.Entry.DataFile().FileSizeBytes()
				g.Rows += f.Entry.DataFile().Count()
			}
			planned = append(planned, g)
		}
		var small []liveFile
		for _, f := range fs {
			if !inComponent[f.Entry.DataFile().FilePath()] && f.Entry.DataFile().FileSizeBytes() < s.Target {
				small = append(small, f)
			}
		}
		if len(small) >= 2 {
			slices.SortFunc(small, bySequence)
			planned = append(planned, maintenance.PackGroups(parts[i], "cold", 0, small, s.Target)...)
		}
	}
	seqOf := make(map[string]int64, len(files))
	for _, f := range files {
		seqOf[f.Entry.DataFile().FilePath()] = f.Entry.SequenceNum()
	}
	var out []CompactionGroup
	budget := maxBytes
	deferred = 0
	for _, g := range planned {
		if len(g.Inputs) < 2 {
			continue
		}
		if deferred > 0 || maxBytes > 0 && g.BytesIn > budget && len(out) > 0 {
			deferred++ // the first group that does not fit ends the round's plan
			continue
		}
		if fits != nil && !fits(g) {
			deferred++ // its rewrite does not fit the time left
			continue
		}
		budget -= g.BytesIn
		g.Dedupe = true
		g.Seqs = map[string]int64{}
		for _, df := range g.Inputs {
			g.Seqs[df.FilePath()] = seqOf[df.FilePath()]
			g.DataSeq = max(g.DataSeq, seqOf[df.FilePath()])
		}
		out = append(out, g)
	}
	return out, deferred
}

// closedGroup reports whether no file of the partition (part) outside g
// whose data sequence number lies within g's lowest and highest may share
// a key with one of g's files: the new files, taking g's highest, would
// otherwise rank a row of an older batch above that file's.
func closedGroup(g CompactionGroup, part []liveFile, cols []boundColumn) bool {
	member := map[string]bool{}
	for _, df := range g.Inputs {
		member[df.FilePath()] = true
	}
	var members, others []liveFile
	for _, f := range part {
		if member[f.Entry.DataFile().FilePath()] {
			members = append(members, f)
		} else {
			others = append(others, f)
		}
	}
	if len(members) == 0 {
		return false
	}
	lo, hi := members[0].Entry.SequenceNum(), members[0].Entry.SequenceNum()
	for _, f := range members {
		lo, hi = min(lo, f.Entry.SequenceNum()), max(hi, f.Entry.SequenceNum())
	}
	for _, o := range others {
		if o.Entry.SequenceNum() < lo || o.Entry.SequenceNum() > hi {
			continue
		}
		for _, m := range members {
			if mayShareKeys(o, m, cols) || o.Entry.SequenceNum() == m.Entry.SequenceNum() {
				return false
			}
		}
	}
	return true
}

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
		for _, c := range sharingComponents(byPart[p], cols) {
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
				releaseAll(recs)
				return 0, err
			}
			recs = append(recs, rec)
		}
		sr, err := datafile.NewSortedRows(memory.DefaultAllocator, sc, recs, v.contract.order())
		releaseAll(recs)
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
