package lake

// Format conformance: what timelake writes is checked against
// docs/table-format.md by reading the raw objects
// (listing, metadata JSON, manifests), not through Lake/Table. Each check is
// a function returning an error, so that TestConformanceChecksFail can show
// that every one of them fails on a deliberately broken copy of a good table.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/storage"
)

// confTable is what the checks look at: a table folder in a warehouse store.
type confTable struct {
	store storage.Store
	fsF   table.FSysF
	name  TableName
	// location is the table location the layout requires:
	// <warehouse>/<ns>/<table> as an s3:// or file:// URI.
	location string
	// own is the folder of timelake's own files (catalog.Catalog.OwnFolder).
	own string
}

func confOf(l *Lake, n TableName) confTable {
	return confTable{store: l.store, fsF: l.fsF, name: n, location: l.tableLocation(n), own: l.cat.OwnFolder()}
}

func (c confTable) prefix() string { return c.name.Namespace + "/" + c.name.Name + "/" }

// keys lists every object of the table, relative to the table folder.
func (c confTable) keys(ctx context.Context) ([]string, error) {
	var out []string
	err := c.store.List(ctx, c.prefix(), func(o storage.ObjectInfo) error {
		out = append(out, strings.TrimPrefix(o.Key, c.prefix()))
		return nil
	})
	return out, err
}

// versionFile matches the metadata file names timelake writes: vN with N an
// integer without zero padding.
var versionFile = regexp.MustCompile(`^metadata/v([1-9][0-9]*)\.metadata\.json$`)

// anyVersionFile matches what a reader listing metadata/ would take for a
// version, zero-padded or not.
var anyVersionFile = regexp.MustCompile(`^metadata/v([0-9]+)\.metadata\.json$`)

// versions returns the N of every metadata/vN.metadata.json, sorted.
func (c confTable) versions(ctx context.Context) ([]int, error) {
	keys, err := c.keys(ctx)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, k := range keys {
		if m := anyVersionFile.FindStringSubmatch(k); m != nil {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}

// latest reads the highest vN.metadata.json.
func (c confTable) latest(ctx context.Context) (table.Metadata, int, error) {
	vs, err := c.versions(ctx)
	if err != nil {
		return nil, 0, err
	}
	if len(vs) == 0 {
		return nil, 0, errors.New("no metadata/vN.metadata.json")
	}
	n := vs[len(vs)-1]
	b, _, err := storage.ReadAll(ctx, c.store, c.prefix()+"metadata/v"+strconv.Itoa(n)+".metadata.json")
	if err != nil {
		return nil, 0, err
	}
	meta, err := table.ParseMetadataBytes(b)
	if err != nil {
		return nil, 0, fmt.Errorf("parse v%d.metadata.json: %w", n, err)
	}
	return meta, n, nil
}

// checkLayout: the table lives at <warehouse>/<ns>/<table>; metadata files
// are metadata/vN.metadata.json numbered 1..N without gaps or zero padding
// (K..N when old versions are deleted: K is the oldest the metadata-log names),
// plus version-hint.text, manifest lists (snap-*.avro) and manifests
// (*-m<k>.avro); data files are data/<timecol>_<chunk>=<value>/*.parquet
// with <value> in the chunk's format; every metadata file's location is the
// table location.
func checkLayout(ctx context.Context, c confTable) error {
	keys, err := c.keys(ctx)
	if err != nil {
		return err
	}
	meta, _, err := c.latest(ctx)
	if err != nil {
		return err
	}
	if meta.Location() != c.location {
		return fmt.Errorf("table location %q, want %q", meta.Location(), c.location)
	}
	props := meta.Properties()
	timeCol, chunk := props[PropTimeColumn], props[PropChunk]
	valueFormat := map[string]string{"hour": `\d{4}-\d{2}-\d{2}-\d{2}`, "day": `\d{4}-\d{2}-\d{2}`, "month": `\d{4}-\d{2}`}[chunk]
	if timeCol == "" || valueFormat == "" {
		return fmt.Errorf("cannot derive the partition folder from %s=%q, %s=%q", PropTimeColumn, timeCol, PropChunk, chunk)
	}
	dataFile := regexp.MustCompile(`^data/` + regexp.QuoteMeta(timeCol+"_"+chunk) + `=` + valueFormat + `/[^/]+\.parquet$`)
	manifestList := regexp.MustCompile(`^metadata/snap-\d+-\d+-[0-9a-f-]+\.avro$`)
	manifest := regexp.MustCompile(`^metadata/[0-9a-f-]+-m\d+\.avro$`)
	historySegment := regexp.MustCompile(`^metadata/_load-history-\d+-\d+-[0-9a-f-]+\.parquet$`)
	var versions []int
	var errs []error
	for _, k := range keys {
		switch {
		case versionFile.MatchString(k):
			n, _ := strconv.Atoi(versionFile.FindStringSubmatch(k)[1])
			versions = append(versions, n)
		case anyVersionFile.MatchString(k):
			errs = append(errs, fmt.Errorf("%s: zero-padded version number", k))
		case k == "metadata/version-hint.text", k == c.own+maintenanceStateName, manifestList.MatchString(k), manifest.MatchString(k), dataFile.MatchString(k),
			historySegment.MatchString(k):
		default:
			errs = append(errs, fmt.Errorf("%s: not a file of the table layout", k))
		}
	}
	sort.Ints(versions)
	// Versions older than the metadata-log's are deleted after a commit
	// when write.metadata.delete-after-commit.enabled is set.
	first := 1
	if props.GetBool(table.MetadataDeleteAfterCommitEnabledKey, false) && len(versions) > 0 {
		first = versions[len(versions)-1]
		for e := range meta.PreviousFiles() {
			if v, ok := catalog.ParseVersion(path.Base(e.MetadataFile)); ok {
				first = min(first, v)
			}
		}
	}
	for i, n := range versions {
		if n != first+i {
			errs = append(errs, fmt.Errorf("metadata versions %v: want %d..%d without gaps", versions, first, first+len(versions)-1))
			break
		}
	}
	for _, n := range versions {
		b, _, err := storage.ReadAll(ctx, c.store, c.prefix()+"metadata/v"+strconv.Itoa(n)+".metadata.json")
		if err != nil {
			return err
		}
		m, err := table.ParseMetadataBytes(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("v%d.metadata.json: %w", n, err))
			continue
		}
		if m.Location() != c.location {
			errs = append(errs, fmt.Errorf("v%d.metadata.json: location %q, want %q", n, m.Location(), c.location))
		}
		// The metadata log links each version to the one before.
		if n > 1 {
			prev := c.location + "/metadata/v" + strconv.Itoa(n-1) + ".metadata.json"
			found := false
			for e := range m.PreviousFiles() {
				found = found || e.MetadataFile == prev
			}
			if !found {
				errs = append(errs, fmt.Errorf("v%d.metadata.json: metadata-log does not name %s", n, prev))
			}
		}
	}
	return errors.Join(errs...)
}

// checkVersionHint: metadata/version-hint.text holds the current N.
func checkVersionHint(ctx context.Context, c confTable) error {
	vs, err := c.versions(ctx)
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		return errors.New("no metadata versions")
	}
	b, _, err := storage.ReadAll(ctx, c.store, c.prefix()+"metadata/version-hint.text")
	if err != nil {
		return fmt.Errorf("version hint: %w", err)
	}
	if want := strconv.Itoa(vs[len(vs)-1]); strings.TrimSpace(string(b)) != want {
		return fmt.Errorf("version-hint.text holds %q, the current version is %s", b, want)
	}
	return nil
}

// contractWant is what a table's contract properties must say.
type contractWant struct {
	timeCol   string
	seriesKey []string
	chunk     Granularity
}

// checkContract: the contract properties (time column, series key, chunk,
// zstd), the time column a required timestamptz, the partition spec
// <chunk>(time) named <timecol>_<chunk>, the sort order (series key...,
// time) ascending nulls first, and no timelake.format-version newer than
// ours.
func checkContract(meta table.Metadata, want contractWant) error {
	props := meta.Properties()
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if got := props[PropTimeColumn]; got != want.timeCol {
		fail("%s = %q, want %q", PropTimeColumn, got, want.timeCol)
	}
	if got := props[PropSeriesKey]; got != strings.Join(want.seriesKey, ",") {
		fail("%s = %q, want %q", PropSeriesKey, got, strings.Join(want.seriesKey, ","))
	}
	if got := props[PropChunk]; got != string(want.chunk) {
		fail("%s = %q, want %q", PropChunk, got, want.chunk)
	}
	if got := props[table.ParquetCompressionKey]; got != "zstd" {
		fail("%s = %q, want zstd", table.ParquetCompressionKey, got)
	}
	if err := checkFormatVersion(props); err != nil {
		fail("%v", err)
	}
	sc := meta.CurrentSchema()
	tf, ok := sc.FindFieldByName(want.timeCol)
	if !ok {
		fail("time column %q not in the schema", want.timeCol)
		return errors.Join(errs...)
	}
	if _, isTz := tf.Type.(iceberg.TimestampTzType); !isTz || !tf.Required {
		fail("time column %q is %s (required %v), want a required timestamptz", want.timeCol, tf.Type, tf.Required)
	}
	spec := meta.PartitionSpec()
	if spec.NumFields() != 1 {
		fail("partition spec %s: want one field", spec)
	} else {
		f := spec.Field(0)
		if f.SourceID() != tf.ID || f.Name != want.timeCol+"_"+string(want.chunk) || f.Transform.String() != want.chunk.transform().String() {
			fail("partition field %+v: want %s(%s) named %s_%s", f, want.chunk, want.timeCol, want.timeCol, want.chunk)
		}
	}
	so := meta.SortOrder()
	wantIDs := make([]int, 0, len(want.seriesKey)+1)
	for _, k := range want.seriesKey {
		f, ok := sc.FindFieldByName(k)
		if !ok {
			fail("series key column %q not in the schema", k)
			continue
		}
		wantIDs = append(wantIDs, f.ID)
	}
	wantIDs = append(wantIDs, tf.ID)
	var gotIDs []int
	for _, f := range so.Fields() {
		gotIDs = append(gotIDs, f.SourceID())
		if f.Direction != table.SortASC || f.NullOrder != table.NullsFirst || f.Transform.String() != "identity" {
			fail("sort field %+v: want identity, ascending, nulls first", f)
		}
	}
	if !slices.Equal(gotIDs, wantIDs) {
		fail("sort order on field ids %v, want %v (series key, then time)", gotIDs, wantIDs)
	}
	return errors.Join(errs...)
}

// standardCounters are the Iceberg snapshot summary counters every append
// snapshot must carry.
var standardCounters = []string{"added-data-files", "added-records", "added-files-size",
	"total-records", "total-data-files", "total-files-size"}

// checkSnapshots: every snapshot is an append whose summary holds
// timelake.batch-id and the standard counters, with totals equal to the
// parent's totals plus what was added; batch ids are unique in the ancestry.
func checkSnapshots(meta table.Metadata) error {
	var errs []error
	seen := map[string]int64{}
	// After snapshot expiry the oldest snapshot left names an expired
	// parent: its running totals cannot be checked.
	oldest := int64(-1)
	for _, s := range meta.Snapshots() {
		if oldest < 0 || s.SequenceNumber < oldest {
			oldest = s.SequenceNumber
		}
	}
	for _, s := range meta.Snapshots() {
		if s.Summary == nil {
			errs = append(errs, fmt.Errorf("snapshot %d: no summary", s.SnapshotID))
			continue
		}
		p := s.Summary.Properties
		replace := s.Summary.Operation == table.OpReplace
		switch s.Summary.Operation {
		case table.OpAppend:
			id, ok := p[SummaryBatchID]
			if !ok || id == "" {
				errs = append(errs, fmt.Errorf("snapshot %d: no %s in the summary", s.SnapshotID, SummaryBatchID))
			} else if other, dup := seen[id]; dup {
				errs = append(errs, fmt.Errorf("batch %q in snapshots %d and %d", id, other, s.SnapshotID))
			} else {
				seen[id] = s.SnapshotID
			}
		case table.OpReplace:
			// A compaction: no batch id, the same rows in other files.
			if id := p[SummaryBatchID]; id != "" {
				errs = append(errs, fmt.Errorf("replace snapshot %d carries batch id %q", s.SnapshotID, id))
			}
			if summaryInt(p, "added-records") != summaryInt(p, summaryDeletedRecords) {
				errs = append(errs, fmt.Errorf("replace snapshot %d: added-records %s, deleted-records %s: a rewrite keeps the rows",
					s.SnapshotID, p["added-records"], p[summaryDeletedRecords]))
			}
			if p[SummaryCompaction] == "" {
				errs = append(errs, fmt.Errorf("replace snapshot %d: no %s in the summary", s.SnapshotID, SummaryCompaction))
			}
		default:
			errs = append(errs, fmt.Errorf("snapshot %d: operation %q, want append or replace", s.SnapshotID, s.Summary.Operation))
		}
		for _, k := range standardCounters {
			if _, err := strconv.ParseInt(p[k], 10, 64); err != nil {
				errs = append(errs, fmt.Errorf("snapshot %d: summary %s = %q", s.SnapshotID, k, p[k]))
			}
		}
		var parent map[string]string
		if s.ParentSnapshotID != nil {
			ps := meta.SnapshotByID(*s.ParentSnapshotID)
			if ps == nil && s.SequenceNumber == oldest {
				continue
			}
			if ps == nil || ps.Summary == nil {
				errs = append(errs, fmt.Errorf("snapshot %d: parent %d missing", s.SnapshotID, *s.ParentSnapshotID))
				continue
			}
			parent = ps.Summary.Properties
		}
		for _, k := range [][3]string{{"total-records", "added-records", summaryDeletedRecords},
			{"total-data-files", "added-data-files", summaryDeletedDataFiles},
			{"total-files-size", "added-files-size", summaryRemovedFilesSize}} {
			want := summaryInt(parent, k[0]) + summaryInt(p, k[1])
			if replace {
				want -= summaryInt(p, k[2])
			}
			if got := summaryInt(p, k[0]); got != want {
				errs = append(errs, fmt.Errorf("snapshot %d: %s = %d, parent's plus %s (minus %s) is %d", s.SnapshotID, k[0], got, k[1], k[2], want))
			}
		}
	}
	return errors.Join(errs...)
}

// checkManifestBounds: every live data file's manifest entry has value
// counts and lower/upper bounds for the time column and each series key
// column (unless the column is all null in that file), with lower <= upper
// for the time column.
func checkManifestBounds(ctx context.Context, c confTable, meta table.Metadata) error {
	cur := meta.CurrentSnapshot()
	if cur == nil {
		return nil
	}
	fs, err := c.fsF(ctx)
	if err != nil {
		return err
	}
	contract, err := contractFromProps(meta.Properties(), meta.CurrentSchema())
	if err != nil {
		return err
	}
	var ids []int
	for _, name := range append([]string{contract.TimeColumn}, contract.SeriesKey...) {
		f, ok := meta.CurrentSchema().FindFieldByName(name)
		if !ok {
			return fmt.Errorf("column %q not in the schema", name)
		}
		ids = append(ids, f.ID)
	}
	entries, err := liveEntries(fs, *cur)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		df := e.DataFile()
		for _, id := range ids {
			n, okN := df.ValueCounts()[id]
			nulls := df.NullValueCounts()[id]
			lo, okLo := df.LowerBoundValues()[id]
			hi, okHi := df.UpperBoundValues()[id]
			switch {
			case !okN:
				errs = append(errs, fmt.Errorf("%s: no value count for field %d", df.FilePath(), id))
			case n > nulls && (!okLo || !okHi):
				errs = append(errs, fmt.Errorf("%s: no lower/upper bound for field %d", df.FilePath(), id))
			}
			if id == ids[0] && okLo && okHi && len(lo) == 8 && len(hi) == 8 && leInt64(lo) > leInt64(hi) {
				errs = append(errs, fmt.Errorf("%s: time bounds reversed", df.FilePath()))
			}
		}
	}
	return errors.Join(errs...)
}

func leInt64(b []byte) int64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return int64(v)
}

func liveEntries(fs icebergio.IO, s table.Snapshot) ([]iceberg.ManifestEntry, error) {
	mfs, err := s.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("manifest list of snapshot %d: %w", s.SnapshotID, err)
	}
	var out []iceberg.ManifestEntry
	for _, m := range mfs {
		es, err := m.FetchEntries(fs, true)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
		}
		out = append(out, es...)
	}
	return out, nil
}

// checkNoOrphans: every object under the table folder is a metadata version,
// the version hint, or a manifest list, manifest or data file referenced
// from some snapshot; and every referenced file exists.
func checkNoOrphans(ctx context.Context, c confTable, meta table.Metadata) error {
	fs, err := c.fsF(ctx)
	if err != nil {
		return err
	}
	// Live references: DELETED manifest entries name files a snapshot
	// removed, which expiry may have deleted.
	ref := map[string]bool{}
	for _, s := range meta.Snapshots() {
		ref[s.ManifestList] = true
		mfs, err := s.Manifests(fs)
		if err != nil {
			return fmt.Errorf("manifest list of snapshot %d: %w", s.SnapshotID, err)
		}
		for _, m := range mfs {
			ref[m.FilePath()] = true
			es, err := m.FetchEntries(fs, true)
			if err != nil {
				return fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			for _, e := range es {
				ref[e.DataFile().FilePath()] = true
			}
		}
	}
	segs, err := segmentsOfVersions(ctx, c.store, c.prefix())
	if err != nil {
		return err
	}
	for _, name := range segs {
		ref[c.location+"/metadata/"+name] = true
	}
	keys, err := c.keys(ctx)
	if err != nil {
		return err
	}
	var orphans, missing []string
	present := map[string]bool{}
	for _, k := range keys {
		present[c.location+"/"+k] = true
		if anyVersionFile.MatchString(k) || k == "metadata/version-hint.text" || k == c.own+maintenanceStateName {
			continue
		}
		if !ref[c.location+"/"+k] {
			orphans = append(orphans, k)
		}
	}
	for p := range ref {
		if !present[p] {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	var errs []error
	if len(orphans) > 0 {
		errs = append(errs, fmt.Errorf("%d orphan files: %v", len(orphans), orphans))
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("%d referenced files missing: %v", len(missing), missing))
	}
	return errors.Join(errs...)
}

// segmentsOfVersions returns the load history segments named by any
// version of the table below prefix that is still stored: a segment a
// newer version no longer names stays for readers of the older ones.
func segmentsOfVersions(ctx context.Context, st storage.Store, prefix string) ([]string, error) {
	var out []string
	err := st.List(ctx, prefix+"metadata/v", func(o storage.ObjectInfo) error {
		if !strings.HasSuffix(o.Key, ".metadata.json") {
			return nil
		}
		b, _, err := storage.ReadAll(ctx, st, o.Key)
		if err != nil {
			return err
		}
		m, err := table.ParseMetadataBytes(b)
		if err != nil {
			return fmt.Errorf("%s: %w", o.Key, err)
		}
		for _, s := range slices.Concat(historySegments(m.Properties()), outcomeLog.segments(m.Properties())) {
			out = append(out, s.Name)
		}
		return nil
	})
	return out, err
}

// checkAll runs every check on a table and returns their errors, by name.
func checkAll(ctx context.Context, c confTable, want contractWant) map[string]error {
	out := map[string]error{
		"layout":       checkLayout(ctx, c),
		"version-hint": checkVersionHint(ctx, c),
	}
	meta, _, err := c.latest(ctx)
	if err != nil {
		for _, k := range []string{"contract", "snapshots", "bounds", "orphans"} {
			out[k] = err
		}
		return out
	}
	out["contract"] = checkContract(meta, want)
	out["snapshots"] = checkSnapshots(meta)
	out["bounds"] = checkManifestBounds(ctx, c, meta)
	out["orphans"] = checkNoOrphans(ctx, c, meta)
	return out
}

func requireConformant(t *testing.T, c confTable, want contractWant) {
	t.Helper()
	res := checkAll(context.Background(), c, want)
	for _, k := range sortedNames(res) {
		if res[k] != nil {
			t.Errorf("check %s: %v", k, res[k])
		}
	}
}

func sortedNames(m map[string]error) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ---- tables to check ------------------------------------------------------

var confName = TableName{Namespace: "conf", Name: "readings"}

var confSchema = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "site", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "device", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

var confWant = contractWant{timeCol: "time", seriesKey: []string{"site", "device"}, chunk: Day}

// confRecord builds n rows of any flat schema of timestamps, strings,
// doubles and longs: times from start, seq-dependent values, a null now
// and then in nullable columns.
func confRecord(t testing.TB, sc *arrow.Schema, start time.Time, n, seq int) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range n {
		j := (i*37 + seq) % n
		for f, field := range sc.Fields() {
			fb := b.Field(f)
			if field.Nullable && (i+f)%11 == 0 {
				fb.AppendNull()
				continue
			}
			switch x := fb.(type) {
			case *array.TimestampBuilder:
				x.Append(arrow.Timestamp(start.Add(time.Duration(j) * 7 * time.Minute).UnixMicro()))
			case *array.StringBuilder:
				x.Append(fmt.Sprintf("%s-%d", field.Name, j%4))
			case *array.Float64Builder:
				x.Append(float64(seq*1000+j) / 4)
			case *array.Int64Builder:
				x.Append(int64(seq*1000 + j))
			default:
				t.Fatalf("confRecord: unsupported column type %s", field.Type)
			}
		}
	}
	return b.NewRecordBatch()
}

func confAppend(t testing.TB, tbl *Table, batch string, start time.Time, n, seq int, opts AppendOptions) AppendResult {
	t.Helper()
	rec := confRecord(t, tbl.ArrowSchema(), start, n, seq)
	defer rec.Release()
	res, err := tbl.Append(context.Background(), batch, []arrow.RecordBatch{rec}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

var confDay = time.Date(2026, 1, 5, 20, 0, 0, 0, time.UTC)

// confPrepareMulti prepares the batches multi/0, multi/1 and multi/2 (25
// rows each, 5 hours apart) for one Commit.
func confPrepareMulti(t testing.TB, tbl *Table) []*Prepared {
	t.Helper()
	var ps []*Prepared
	for i := range 3 {
		rec := confRecord(t, tbl.ArrowSchema(), confDay.Add(time.Duration(i)*5*time.Hour), 25, 20+i)
		p, err := tbl.Prepare(context.Background(), fmt.Sprintf("multi/%d", i), []arrow.RecordBatch{rec}, nil, 0)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// goodTable creates the conformance table and appends three batches, two of
// them across midnight, checking the version hint after every commit.
func goodTable(t testing.TB, l *Lake, props map[string]string) *Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := l.CreateTable(ctx, confName, confSchema, CreateSpec{TimeColumn: "time",
		SeriesKey: confWant.seriesKey, Partition: confWant.chunk, Properties: props})
	if err != nil {
		t.Fatal(err)
	}
	c := confOf(l, confName)
	if err := checkVersionHint(ctx, c); err != nil {
		t.Fatalf("after create: %v", err)
	}
	for i := range 3 {
		confAppend(t, tbl, fmt.Sprintf("gw-%d/file.csv", i), confDay.Add(time.Duration(i)*3*time.Hour), 60, i, AppendOptions{})
		if err := checkVersionHint(ctx, c); err != nil {
			t.Fatalf("after append %d: %v", i, err)
		}
	}
	return tbl
}

// ---- tests ------------------------------------------------------------------

func TestConformance(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		tbl := goodTable(t, l, nil)
		if tbl.Version() != 4 {
			t.Fatalf("version %d after create and three appends, want 4", tbl.Version())
		}
		requireConformant(t, confOf(l, confName), confWant)

		// Several snapshots in one metadata write (the ingest pipeline's
		// commit), the first one losing a race to an injected conflict.
		ctx := context.Background()
		ps := confPrepareMulti(t, tbl)
		other, err := l.LoadTable(ctx, confName)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tbl.Commit(ctx, ps, CommitOptions{BeforeCommit: func(attempt int) error {
			if attempt == 1 {
				confAppend(t, other, "intruder", confDay, 10, 99, AppendOptions{})
			}
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 3 || res[0].Attempts != 2 || tbl.Version() != 6 {
			t.Fatalf("commit of three batches: %+v, version %d; want them in v6 after one lost race", res, tbl.Version())
		}
		requireConformant(t, confOf(l, confName), confWant)
	})
}

// firstConditionalPutLoses makes the first conditional create of a metadata
// version (N >= 2) lose as if another writer had won, without writing.
type firstConditionalPutLoses struct {
	storage.Store
	mu   sync.Mutex
	lost int
}

func (s *firstConditionalPutLoses) Put(ctx context.Context, key string, body io.ReadSeeker, opts storage.PutOptions) (storage.ObjectInfo, error) {
	s.mu.Lock()
	lose := opts.IfAbsent && s.lost == 0 && strings.HasSuffix(key, ".metadata.json") && !strings.HasSuffix(key, "/v1.metadata.json")
	if lose {
		s.lost++
	}
	s.mu.Unlock()
	if lose {
		return storage.ObjectInfo{}, fmt.Errorf("put %s: %w", key, storage.ErrPreconditionFailed)
	}
	return s.Store.Put(ctx, key, body, opts)
}

// TestConformanceUnderCommitConflicts: lost races (an injected one, then
// concurrent writers) leave a conformant table with no orphan files.
func TestConformanceUnderCommitConflicts(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		goodTable(t, l, nil)

		inj := &firstConditionalPutLoses{Store: l.store}
		useStore(l, inj)
		tbl, err := l.LoadTable(ctx, confName)
		if err != nil {
			t.Fatal(err)
		}
		res := confAppend(t, tbl, "injected", confDay, 40, 7, AppendOptions{})
		if inj.lost != 1 || res.Attempts != 2 || res.Duplicate {
			t.Fatalf("injected conflict: lost %d, result %+v; want one lost put and a commit on attempt 2", inj.lost, res)
		}
		useStore(l, inj.Store)

		const writers, each = 4, 3
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tbl, err := l.LoadTable(ctx, confName)
				if err != nil {
					errs <- err
					return
				}
				for i := range each {
					rec := confRecord(t, tbl.ArrowSchema(), confDay.Add(time.Duration(w)*time.Hour), 30, w*10+i)
					_, err := tbl.Append(ctx, fmt.Sprintf("w%d/%d", w, i), []arrow.RecordBatch{rec}, AppendOptions{})
					rec.Release()
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		requireConformant(t, confOf(l, confName), confWant)
		meta, _, err := confOf(l, confName).latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(meta.Snapshots()), 3+1+writers*each; got != want {
			t.Fatalf("%d snapshots, want %d", got, want)
		}
	})
}

// TestConformanceChecksFail breaks a good table in one way per case and
// requires the matching check to fail (and the others to pass where the
// breakage does not concern them).
func TestConformanceChecksFail(t *testing.T) {
	ctx := context.Background()
	meta := func(t *testing.T, c confTable, v int) map[string]any {
		t.Helper()
		b, _, err := storage.ReadAll(ctx, c.store, c.prefix()+"metadata/v"+strconv.Itoa(v)+".metadata.json")
		if err != nil {
			t.Fatal(err)
		}
		// UseNumber: snapshot ids are int64 and must survive the round trip.
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	put := func(t *testing.T, c confTable, key string, body []byte) {
		t.Helper()
		if _, err := c.store.Put(ctx, c.prefix()+key, bytes.NewReader(body), storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	putMeta := func(t *testing.T, c confTable, v int, m map[string]any) {
		t.Helper()
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		put(t, c, "metadata/v"+strconv.Itoa(v)+".metadata.json", b)
	}
	for _, tc := range []struct {
		name  string
		check string
		also  []string          // other checks this breakage may fail
		props map[string]string // extra properties of the good table
		// breakIt damages the table (current version 4).
		breakIt func(t *testing.T, c confTable)
	}{
		{"rename v2 to v02", "layout", nil, nil, func(t *testing.T, c confTable) {
			if err := c.store.Copy(ctx, c.prefix()+"metadata/v2.metadata.json", c.prefix()+"metadata/v02.metadata.json"); err != nil {
				t.Fatal(err)
			}
			if err := c.store.Delete(ctx, c.prefix()+"metadata/v2.metadata.json"); err != nil {
				t.Fatal(err)
			}
		}},
		{"metadata version gap", "layout", nil, nil, func(t *testing.T, c confTable) {
			m := meta(t, c, 4)
			putMeta(t, c, 6, m)
			put(t, c, "metadata/version-hint.text", []byte("6"))
		}},
		{"data file outside its partition folder", "layout", []string{"orphans"}, nil, func(t *testing.T, c confTable) {
			put(t, c, "data/day=2026-01-05/x.parquet", []byte("PAR1"))
		}},
		{"table moved", "layout", nil, nil, func(t *testing.T, c confTable) {
			m := meta(t, c, 4)
			m["location"] = c.location + "-elsewhere"
			putMeta(t, c, 4, m)
		}},
		{"version hint removed", "version-hint", nil, nil, func(t *testing.T, c confTable) {
			if err := c.store.Delete(ctx, c.prefix()+"metadata/version-hint.text"); err != nil {
				t.Fatal(err)
			}
		}},
		{"version hint stale", "version-hint", nil, nil, func(t *testing.T, c confTable) {
			put(t, c, "metadata/version-hint.text", []byte("3"))
		}},
		{"time-column property dropped", "contract", []string{"layout"}, nil, func(t *testing.T, c confTable) {
			m := meta(t, c, 4)
			delete(m["properties"].(map[string]any), PropTimeColumn)
			putMeta(t, c, 4, m)
		}},
		{"series-key property dropped", "contract", nil, nil, func(t *testing.T, c confTable) {
			m := meta(t, c, 4)
			delete(m["properties"].(map[string]any), PropSeriesKey)
			putMeta(t, c, 4, m)
		}},
		{"chunk property dropped", "contract", []string{"layout"}, nil, func(t *testing.T, c confTable) {
			m := meta(t, c, 4)
			delete(m["properties"].(map[string]any), PropChunk)
			putMeta(t, c, 4, m)
		}},
		{"sort order dropped", "contract", nil, nil, func(t *testing.T, c confTable) {
			m := meta(t, c, 4)
			m["sort-orders"] = []any{map[string]any{"order-id": 0, "fields": []any{}}}
			m["default-sort-order-id"] = 0
			putMeta(t, c, 4, m)
		}},
		{"batch id dropped from a summary", "snapshots", nil, nil, func(t *testing.T, c confTable) {
			m := meta(t, c, 4)
			snaps := m["snapshots"].([]any)
			delete(snaps[1].(map[string]any)["summary"].(map[string]any), SummaryBatchID)
			putMeta(t, c, 4, m)
		}},
		{"counter dropped from a summary", "snapshots", nil, nil, func(t *testing.T, c confTable) {
			m := meta(t, c, 4)
			snaps := m["snapshots"].([]any)
			delete(snaps[2].(map[string]any)["summary"].(map[string]any), "total-records")
			putMeta(t, c, 4, m)
		}},
		{"no column metrics", "bounds", nil, map[string]string{table.DefaultWriteMetricsModeKey: "counts"}, nil},
		{"stray orphan file", "orphans", nil, nil, func(t *testing.T, c confTable) {
			put(t, c, "data/time_day=2026-01-05/00000-0-stray.parquet", []byte("PAR1"))
		}},
		{"committed data file deleted", "orphans", nil, nil, func(t *testing.T, c confTable) {
			keys, err := c.keys(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if strings.HasPrefix(k, "data/") {
					if err := c.store.Delete(ctx, c.prefix()+k); err != nil {
						t.Fatal(err)
					}
					return
				}
			}
			t.Fatal("no data file")
		}},
		{"orphan manifest", "orphans", nil, nil, func(t *testing.T, c confTable) {
			put(t, c, "metadata/0b7a3a4e-0000-4000-8000-000000000000-m0.avro", []byte("Obj\x01"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLocalLake(t)
			goodTable(t, l, tc.props)
			c := confOf(l, confName)
			before := checkAll(ctx, c, confWant)
			if tc.breakIt != nil {
				if before[tc.check] != nil {
					t.Fatalf("check %s fails on the good table: %v", tc.check, before[tc.check])
				}
				tc.breakIt(t, c)
			}
			after := checkAll(ctx, c, confWant)
			if after[tc.check] == nil {
				t.Fatalf("check %s passes on a table with %s", tc.check, tc.name)
			}
			for _, k := range sortedNames(after) {
				if k != tc.check && !slices.Contains(tc.also, k) && after[k] != nil {
					t.Errorf("check %s also fails: %v", k, after[k])
				}
			}
			t.Logf("check %s: %v", tc.check, after[tc.check])
		})
	}
}

// installFixture writes testdata/<file> as metadata/v1.metadata.json of
// table n, with @LOCATION@ replaced by the table location: an empty table
// created by another writer.
func installFixture(t *testing.T, l *Lake, n TableName, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("@LOCATION@"), []byte(l.tableLocation(n)))
	if _, err := l.store.Put(context.Background(), catalog.MetadataKey(n, 1), bytes.NewReader(b), storage.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAppendToForeignTable appends to an empty table another Timelake
// writer created (its own field ids, partition field id, properties,
// including unknown timelake.* and write.* ones): the append lands, and the
// table keeps its schema, spec and every property.
func TestAppendToForeignTable(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		n := TableName{Namespace: "iot", Name: "foreign"}
		fixture := installFixture(t, l, n, "foreign-empty.metadata.json")
		tbl, err := l.LoadTable(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if c := tbl.Contract(); c.TimeColumn != "ts" || !slices.Equal(c.SeriesKey, []string{"device_id"}) || c.Chunk != Day {
			t.Fatalf("contract %+v", c)
		}
		start := time.Date(2026, 1, 5, 22, 0, 0, 0, time.UTC)
		r1 := confAppend(t, tbl, "gw/a.csv", start, 50, 1, AppendOptions{})
		r2 := confAppend(t, tbl, "gw/b.csv", start.Add(time.Hour), 50, 2, AppendOptions{})
		r3 := confAppend(t, tbl, "gw/a.csv", start, 50, 1, AppendOptions{})
		if r1.Rows != 50 || r2.Rows != 50 || !r3.Duplicate || tbl.Version() != 3 {
			t.Fatalf("appends: %+v %+v %+v, version %d", r1, r2, r3, tbl.Version())
		}

		meta := tbl.Metadata()
		for k, v := range fixture["properties"].(map[string]any) {
			if got, ok := meta.Properties()[k]; !ok || got != v {
				t.Errorf("property %s = %q (present %v), the fixture had %q", k, got, ok, v)
			}
		}
		var fields []map[string]any
		for _, s := range fixture["schemas"].([]any) {
			if s.(map[string]any)["schema-id"] == fixture["current-schema-id"] {
				for _, f := range s.(map[string]any)["fields"].([]any) {
					fields = append(fields, f.(map[string]any))
				}
			}
		}
		if len(fields) != meta.CurrentSchema().NumFields() {
			t.Fatalf("schema now has %d fields, the fixture %d", meta.CurrentSchema().NumFields(), len(fields))
		}
		for _, f := range fields {
			got, ok := meta.CurrentSchema().FindFieldByName(f["name"].(string))
			if !ok || float64(got.ID) != f["id"].(float64) {
				t.Errorf("field %v: now %+v", f, got)
			}
		}
		if spec := meta.PartitionSpec(); spec.ID() != 4 || spec.Field(0).FieldID != 1007 {
			t.Errorf("partition spec changed: %s", spec)
		}
		tasks, err := tbl.Iceberg().Scan().PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if task.File.SpecID() != 4 {
				t.Errorf("data file %s has partition spec %d, want the table's 4", task.File.FilePath(), task.File.SpecID())
			}
		}
		at, err := tbl.Iceberg().Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer at.Release()
		if at.NumRows() != 100 {
			t.Fatalf("scan: %d rows, want 100", at.NumRows())
		}
		c := confOf(l, n)
		for name, err := range map[string]error{
			"layout":       checkLayout(ctx, c),
			"version-hint": checkVersionHint(ctx, c),
			"snapshots":    checkSnapshots(meta),
			"bounds":       checkManifestBounds(ctx, c, meta),
			"orphans":      checkNoOrphans(ctx, c, meta),
		} {
			if err != nil {
				t.Errorf("check %s: %v", name, err)
			}
		}
	})
}

// TestRefusesNewerTimelakeFormatFixture: a table whose
// timelake.format-version has a newer major version is refused, and nothing
// is written to it.
func TestRefusesNewerTimelakeFormatFixture(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	n := TableName{Namespace: "iot", Name: "future"}
	installFixture(t, l, n, "foreign-future.metadata.json")
	if _, err := l.LoadTable(ctx, n); !errors.Is(err, ErrUnsupportedFormat) {
		t.Fatalf("LoadTable: %v, want ErrUnsupportedFormat", err)
	}
	keys, err := confOf(l, n).keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"metadata/v1.metadata.json"}) {
		t.Fatalf("files after the refusal: %v", keys)
	}
}

// TestWithoutHistory: the metadata given to the data file writer keeps
// every write setting of a foreign table (ids included) and none of its
// history.
func TestWithoutHistory(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	n := TableName{Namespace: "iot", Name: "foreign"}
	installFixture(t, l, n, "foreign-empty.metadata.json")
	tbl, err := l.LoadTable(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 5, 22, 0, 0, 0, time.UTC)
	confAppend(t, tbl, "gw/a.csv", start, 10, 1, AppendOptions{})
	confAppend(t, tbl, "gw/b.csv", start, 10, 2, AppendOptions{})
	meta := tbl.Metadata()
	if len(meta.Snapshots()) != 2 {
		t.Fatalf("%d snapshots, want 2", len(meta.Snapshots()))
	}
	h, _ := tbl.loaded()
	w := h.Write()
	logs, previous := len(slices.Collect(w.SnapshotLogs())), len(slices.Collect(w.PreviousFiles()))
	if len(w.Snapshots()) != 0 || w.CurrentSnapshot() != nil || logs != 0 || previous != 0 {
		t.Errorf("history kept: %d snapshots, current %v, %d log entries, %d previous files",
			len(w.Snapshots()), w.CurrentSnapshot(), logs, previous)
	}
	if w.Version() != meta.Version() || w.TableUUID() != meta.TableUUID() || w.Location() != meta.Location() ||
		!w.CurrentSchema().Equals(meta.CurrentSchema()) || !w.PartitionSpec().Equals(meta.PartitionSpec()) ||
		!w.SortOrder().Equals(meta.SortOrder()) || !maps.Equal(w.Properties(), meta.Properties()) {
		t.Errorf("write settings differ:\n%+v\n%+v", w, meta)
	}
	if w.CurrentSchema().ID != 3 || w.DefaultPartitionSpec() != 4 || w.SortOrder().OrderID() != 2 {
		t.Errorf("ids: schema %d, spec %d, sort order %d; want 3, 4, 2",
			w.CurrentSchema().ID, w.DefaultPartitionSpec(), w.SortOrder().OrderID())
	}
}
