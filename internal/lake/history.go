package lake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/timelake/timelake/internal/lake/loadhistory"
	"github.com/timelake/timelake/internal/lake/maintenance"
	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/storage"
)

// The load history keeps every landing file loaded into the table within
// the dedupe window (timelake.dedupe-window) after the snapshot that loaded
// it has expired: its key (the batch id), size, SHA-256 (of the object's
// bytes, and of its decompressed content when it was compressed), rows,
// snapshot id and load time. The snapshots still in the metadata carry the
// same facts in their summaries, so "already loaded" means: in the current
// snapshot's ancestry, or in the load history. With it, snapshots can
// expire after minutes while a file re-sent days later is still recognised
// (Snowpipe keeps a load history for the same reason).
//
// The history is a list of immutable Parquet files (segments) in the
// table's metadata folder, named by the table property timelake.load-history
// (comma-separated file names). A snapshot expiry writes the keys of the
// snapshots it removes into a new segment and names it in the same commit
// that removes them (expireMutation): a key never leaves the snapshots
// without entering the history, whatever fails in between. Segments of
// similar size are merged (8 at a time), dropping records older than the
// dedupe window, so a table keeps a few dozen segments at most. Any Parquet
// reader can read them (DuckDB: SELECT * FROM 'metadata/_load-history-*.parquet').
//
// What a segment holds (the record, its columns), the names and size tiers
// of segments, the plan of a merge, a segment's index and the cache folder
// of segments and indexes are package loadhistory's; this file names the
// segments of a table, reads them through the Lake's store, and changes
// their list through the commit protocol.

// Table properties of the load history and of maintenance (Timelake table
// conventions where Timelake names them; docs/maintenance.md).
const (
	PropLoadHistory  = "timelake.load-history"
	PropDedupeWindow = maintenance.PropDedupeWindow
)

// DefaultDedupeWindow is how long a loaded key is remembered when the table
// does not set timelake.dedupe-window (Snowpipe keeps 14 days).
const DefaultDedupeWindow = maintenance.DefaultDedupeWindow

// LoadRecord is one landing file loaded into the table, or, in the
// outcome log (outcomes.go), one that ingest settled without loading it
// (loadhistory.Record).
type LoadRecord = loadhistory.Record

// Outcomes of a landing file (LoadRecord.Status, LoadRecord.Outcome).
const (
	OutcomeLoaded    = loadhistory.OutcomeLoaded
	OutcomeDuplicate = loadhistory.OutcomeDuplicate
	OutcomeRejected  = loadhistory.OutcomeRejected
	OutcomeDeleted   = loadhistory.OutcomeDeleted
	OutcomeRestored  = loadhistory.OutcomeRestored
)

// How a loaded key reached the loader (LoadRecord.LoadedBy).
const (
	LoadedByPoll         = loadhistory.LoadedByPoll
	LoadedByNotification = loadhistory.LoadedByNotification
	LoadedBySweep        = loadhistory.LoadedBySweep
)

// loadRecordOf reads the load record of a batch from its snapshot summary.
func loadRecordOf(key string, id, tsMs int64, summary map[string]string) LoadRecord {
	return LoadRecord{
		Key:           key,
		Size:          summaryInt(summary, SummarySourceSize),
		SHA256:        summary[SummarySourceSHA256],
		ContentSHA256: summary[SummaryContentSHA256],
		Rows:          summaryInt(summary, summaryAddedRecords),
		SnapshotID:    id,
		LoadedAt:      time.UnixMilli(tsMs).UTC(),
		LandedAt:      summaryTime(summary, SummarySourceModified),
		MaxRowTime:    summaryTime(summary, SummaryMaxRowTime),
		LoadedBy:      summary[SummaryLoadedBy],
		RejectedRows:  summaryInt(summary, SummaryRejectedRows),
	}
}

// summaryTime reads an RFC 3339 time of a snapshot summary; zero when it
// is absent or does not parse (a summary of another writer).
func summaryTime(summary map[string]string, key string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, summary[key])
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// segmentName is the file name of a new segment of log g
// (loadhistory.SegmentName).
func (g recordLog) segmentName(newest time.Time, records int) string {
	return loadhistory.SegmentName(g.prefix, newest, records)
}

// recordLog is a list of load record segments in the table's metadata
// folder, named by a table property: the load history (the loaded keys,
// timelake.load-history) or the outcome log (the files found duplicates
// or rejected, timelake.load-outcomes; outcomes.go). Both have the same
// columns and are merged and trimmed to the dedupe window alike.
type recordLog struct {
	prop   string // the table property naming the segments
	prefix string // the segments' file names start with it
}

var loadHistoryLog = recordLog{prop: PropLoadHistory, prefix: loadhistory.HistoryPrefix}

// historySegments returns the segments a version's properties name, in
// the order named (oldest first). Names that do not parse are kept (with a
// zero time and count) so nothing is dropped by mistake; entries that are
// not a file name (refusedSegments) are left out.
func historySegments(props map[string]string) []loadhistory.SegmentInfo {
	return loadHistoryLog.segments(props)
}

// segments returns the segments of log g that a version's properties
// name, as historySegments does for the load history.
func (g recordLog) segments(props map[string]string) []loadhistory.SegmentInfo {
	segs, _ := g.entries(props)
	return segs
}

// refusedSegments returns the entries of timelake.load-history and
// timelake.load-outcomes that are not a plain file name of the table's
// metadata folder ("../x.parquet", "/etc/x", "a/b", a control character):
// timelake never reads, caches or deletes them (paths.go), looks keys up
// without them, and maintenance drops them from the table. Timelake names
// its segments _load-history-<ms>-<records>-<uuid>.parquet (and
// _load-outcomes-...), so such an entry holds no key it loaded.
func refusedSegments(props map[string]string) []string {
	_, refused := loadHistoryLog.entries(props)
	_, more := outcomeLog.entries(props)
	return append(refused, more...)
}

// entries splits the entries of log g's property into segments and
// refused entries.
func (g recordLog) entries(props map[string]string) (segs []loadhistory.SegmentInfo, refused []string) {
	for _, n := range strings.Split(props[g.prop], ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if strings.Contains(n, "/") || storage.ValidateKey(n) != nil {
			refused = append(refused, n)
			continue
		}
		info, ok := loadhistory.ParseSegmentName(n)
		if !ok {
			info = loadhistory.SegmentInfo{Name: n}
		}
		segs = append(segs, info)
	}
	return segs, refused
}

func segmentsProperty(segs []loadhistory.SegmentInfo) string {
	names := make([]string, len(segs))
	for i, s := range segs {
		names[i] = s.Name
	}
	return strings.Join(names, ",")
}

// dedupeWindow reads timelake.dedupe-window (a duration such as 336h or
// 14d), DefaultDedupeWindow when unset or unreadable.
func dedupeWindow(props map[string]string) time.Duration {
	return maintenance.DedupeWindow(props)
}

// historyKey is the store key of a segment of table n: in the folder of
// timelake's own files (metadata/ of a catalog-free table).
func (l *Lake) historyKey(n TableName, name string) string { return l.ownKey(n, name) }

// ErrLoadHistoryMissing is returned when a load history segment the table
// names is gone (deleted by hand or by another tool's orphan removal): the
// keys it held can no longer be recognised, so ingest stops rather than
// load them twice. Table.Maintain drops the missing segments from the
// table (docs/maintenance.md).
var ErrLoadHistoryMissing = errors.New("a load history segment is missing")

// errLinkedSegment is returned (wrapped, naming the entry) for a load
// history entry whose file in a local table's metadata/ is a symbolic link
// (storage.ErrSymlink): timelake writes its segments as files, so a link
// is not one of them and holds no key it loaded. Like an entry that is not
// a file name (refusedSegments), it is never read or deleted: lookups
// leave it out (with a warning, once), and maintenance drops it from the
// table (docs/table-format.md, "Paths in the metadata").
var errLinkedSegment = errors.New("load history entry ignored: a symbolic link (timelake does not follow links inside the table's folder)")

// readSegment reads and decodes one segment: from the Lake's segment cache
// folder when an earlier run kept it there (segments are immutable, so a
// cron poller downloads each once), else from the store (and keeps it).
// Errors: ErrLoadHistoryMissing, errLinkedSegment, reading or decoding it.
func (l *Lake) readSegment(ctx context.Context, n TableName, name string) ([]LoadRecord, error) {
	body, err := l.segmentBytes(ctx, n, name)
	if errors.Is(err, storage.ErrSymlink) {
		l.noteLinked(n, name)
		return nil, fmt.Errorf("%w: %s of %s", errLinkedSegment, name, n)
	}
	if errors.Is(err, storage.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s of %s (the keys it held are no longer recognised; timelake tables maintain %s drops it from the table)",
			ErrLoadHistoryMissing, name, n, n)
	}
	if err != nil {
		return nil, fmt.Errorf("read load history of %s: %w", n, err)
	}
	recs, err := loadhistory.DecodeSegment(ctx, body)
	if err != nil {
		l.uncache(n, name)
		return nil, fmt.Errorf("read load history of %s: %s: %w", n, name, err)
	}
	return recs, nil
}

// noteLinked records that segment name of table n is a symbolic link, and
// warns about it the first time.
func (l *Lake) noteLinked(n TableName, name string) {
	id := n.String() + "/" + name
	l.segments.mu.Lock()
	seen := l.segments.linked[id]
	if l.segments.linked == nil {
		l.segments.linked = map[string]bool{}
	}
	l.segments.linked[id] = true
	l.segments.mu.Unlock()
	if !seen {
		l.log.Warn(errLinkedSegment.Error()+" (timelake tables maintain drops it)", "table", n.String(), "entry", name)
	}
}

// linkedSegment reports whether this Lake found segment name of table n to
// be a symbolic link (errLinkedSegment).
func (l *Lake) linkedSegment(n TableName, name string) bool {
	l.segments.mu.Lock()
	defer l.segments.mu.Unlock()
	return l.segments.linked[n.String()+"/"+name]
}

// linkedSegments returns the segments of the load history and the outcome
// log that props names and linkedSegment reports.
func (l *Lake) linkedSegments(n TableName, props map[string]string) []string {
	var out []string
	for _, s := range slices.Concat(historySegments(props), outcomeLog.segments(props)) {
		if l.linkedSegment(n, s.Name) {
			out = append(out, s.Name)
		}
	}
	return out
}

// segmentBytes returns a segment's bytes, through the cache folder.
func (l *Lake) segmentBytes(ctx context.Context, n TableName, name string) ([]byte, error) {
	if b, err := l.readCached(n, name); err == nil {
		return b, nil
	}
	body, _, err := storage.ReadAll(ctx, l.store, l.historyKey(n, name))
	if err != nil {
		return nil, err
	}
	l.writeCached(n, name, body)
	return body, nil
}

// segmentDiskCache is the cache of table n's segments in the Lake's cache
// folder (the zero Cache without one).
func (l *Lake) segmentDiskCache(n TableName) loadhistory.Cache {
	return loadhistory.NewCache(l.cacheDir, n.String(), l.tableLocation(n))
}

// readCached reads the cached file name of table n.
func (l *Lake) readCached(n TableName, name string) ([]byte, error) {
	return l.segmentDiskCache(n).Read(name)
}

// writeCached keeps body as the cached file name of table n, best effort
// (nothing without a cache folder).
func (l *Lake) writeCached(n TableName, name string, body []byte) {
	c := l.segmentDiskCache(n)
	if err := c.Write(name, body); err != nil {
		l.log.Debug("load history file not cached", "folder", c.Folder(), "name", name, "err", err)
	}
}

// uncache removes the cached copy of segment name of table n and its index.
func (l *Lake) uncache(n TableName, name string) { l.segmentDiskCache(n).Remove(name) }

// LoadHistory is the load history of one table version: look keys and
// content hashes up in it. Safe for concurrent use.
type LoadHistory struct {
	lake     *Lake
	name     TableName
	window   time.Duration
	segments []*loadhistory.Index // newest first
}

// segmentCache keeps the index of every segment read by this Lake, by
// table and name (segments are immutable).
type segmentCache struct {
	mu  sync.Mutex
	ix  map[string]*loadhistory.Index
	rec map[string][]LoadRecord // the records of the last segments a lookup hit
	// pruned is, per table, the segment list the cache folder was last
	// pruned to: a list seen before needs no look at the folder.
	pruned map[string]string
	// linked holds, by table and name, the segments found to be symbolic
	// links (errLinkedSegment): warned about once, then left out.
	linked map[string]bool
}

// LoadHistory returns the load history of the loaded version, reading the
// segments this Lake has not read before (each once per process).
func (t *Table) LoadHistory(ctx context.Context) (*LoadHistory, error) {
	h, _ := t.loaded()
	return t.lake.historyOf(ctx, t.name, h.Props())
}

// LoadHistoryPresent is LoadHistory over the segments that are in the
// store: each segment of the load history and of the outcome log is
// looked for there (a copy in the cache folder does not count), and one
// gone (deleted by hand or by another tool's orphan removal) is left out
// and named in missing instead of failing with ErrLoadHistoryMissing. For
// an audit, which reports what it cannot check; a loader must use
// LoadHistory, which refuses to guess. Errors: the store's.
func (t *Table) LoadHistoryPresent(ctx context.Context) (*LoadHistory, []string, error) {
	h, _ := t.loaded()
	props := h.Props()
	gone := map[string]bool{}
	var missing []string
	for _, s := range slices.Concat(historySegments(props), outcomeLog.segments(props)) {
		_, err := t.lake.store.Stat(ctx, t.lake.historyKey(t.name, s.Name))
		switch {
		case errors.Is(err, storage.ErrNotExist), errors.Is(err, storage.ErrSymlink):
			gone[s.Name] = true
			missing = append(missing, s.Name)
		case err != nil:
			return nil, nil, fmt.Errorf("read load history of %s: %w", t.name, err)
		}
	}
	hist, err := t.lake.historyOfPresent(ctx, t.name, props, gone)
	return hist, missing, err
}

// historyOf returns the load history a version's properties name.
func (l *Lake) historyOf(ctx context.Context, n TableName, props map[string]string) (*LoadHistory, error) {
	return l.historyOfPresent(ctx, n, props, nil)
}

// historyOfPresent is historyOf without the segments skip names.
func (l *Lake) historyOfPresent(ctx context.Context, n TableName, props map[string]string, skip map[string]bool) (*LoadHistory, error) {
	hist := &LoadHistory{lake: l, name: n, window: dedupeWindow(props)}
	segs := historySegments(props)
	for i := len(segs) - 1; i >= 0; i-- {
		if skip[segs[i].Name] {
			continue
		}
		ix, err := l.segmentIndex(ctx, n, segs[i])
		if errors.Is(err, errLinkedSegment) {
			continue // warned; looked up without it, as a refused entry
		}
		if err != nil {
			return nil, err
		}
		hist.segments = append(hist.segments, ix)
	}
	// The cache folder keeps the outcome log's segments too.
	outcomes := outcomeLog.segments(props)
	names := props[PropLoadHistory] + ";" + props[PropLoadOutcomes] // as named, refused entries included
	l.segments.mu.Lock()
	seen := l.segments.pruned[n.String()] == names
	if !seen {
		if l.segments.pruned == nil {
			l.segments.pruned = map[string]string{}
		}
		l.segments.pruned[n.String()] = names
	}
	l.segments.mu.Unlock()
	if !seen {
		l.segmentDiskCache(n).Prune(slices.Concat(segs, outcomes))
		for _, e := range refusedSegments(props) {
			l.log.Warn("load history entry ignored: not a file of the table's metadata folder (timelake tables maintain drops it)",
				"table", n.String(), "entry", e)
		}
	}
	return hist, nil
}

// FindLoaded answers "was the landing file with this key loaded" from the
// loaded version: a snapshot of the current ancestry with that batch id
// (FindBatch), else the load history within the dedupe window. Errors:
// reading the load history.
func (t *Table) FindLoaded(ctx context.Context, key string) (BatchInfo, bool, error) {
	if b, ok := t.FindBatch(key); ok {
		return b, true, nil
	}
	return t.fromHistory(ctx, func(h *LoadHistory) (LoadRecord, bool, error) { return h.Find(ctx, key) })
}

// fromHistory looks a batch up in the loaded version's load history.
//
// A segment the loaded version names may be gone because a newer version
// merged it into another (maintenance deletes what it merged): then the
// table is refreshed and the newest version's history asked instead; only
// a segment the newest version still names and the store lacks is
// ErrLoadHistoryMissing.
func (t *Table) fromHistory(ctx context.Context, find func(*LoadHistory) (LoadRecord, bool, error)) (BatchInfo, bool, error) {
	for refreshed := false; ; refreshed = true {
		hist, err := t.LoadHistory(ctx)
		var r LoadRecord
		var ok bool
		if err == nil {
			r, ok, err = find(hist)
		}
		if errors.Is(err, ErrLoadHistoryMissing) && !refreshed {
			v := t.Version()
			if rerr := t.Refresh(ctx); rerr != nil {
				return BatchInfo{}, false, errors.Join(err, rerr)
			}
			if t.Version() != v {
				continue
			}
		}
		if err != nil || !ok {
			return BatchInfo{}, false, err
		}
		return BatchInfoOf(r), true, nil
	}
}

// FindContent answers "was a landing file with this content loaded" (the hex
// SHA-256 of its decompressed bytes) from the loaded version: the current
// ancestry's snapshots, else the load history within the dedupe window.
func (t *Table) FindContent(ctx context.Context, sum string) (BatchInfo, bool, error) {
	if sum == "" {
		return BatchInfo{}, false, nil
	}
	h, _ := t.loaded()
	if i, ok := h.Contents()[sum]; ok {
		s, err := h.Snapshot(i)
		if err != nil {
			return BatchInfo{}, false, err
		}
		return batchInfo(h.Snaps()[i].Batch, s), true, nil
	}
	return t.fromHistory(ctx, func(h *LoadHistory) (LoadRecord, bool, error) { return h.FindContent(ctx, sum) })
}

// BatchInfoOf describes the batch of load record r (FromHistory is set): its
// Summary holds the source facts the snapshot's summary had
// (timelake.source-size, timelake.source-sha256, timelake.content-sha256,
// added-records); DataFiles and Bytes are unknown (0).
func BatchInfoOf(r LoadRecord) BatchInfo {
	summary := map[string]string{SummaryBatchID: r.Key, SummarySourceSize: strconv.FormatInt(r.Size, 10),
		summaryAddedRecords: strconv.FormatInt(r.Rows, 10)}
	if r.SHA256 != "" {
		summary[SummarySourceSHA256] = r.SHA256
	}
	if r.ContentSHA256 != "" {
		summary[SummaryContentSHA256] = r.ContentSHA256
	}
	if r.RejectedRows > 0 {
		summary[SummaryRejectedRows] = strconv.FormatInt(r.RejectedRows, 10)
	}
	return BatchInfo{BatchID: r.Key, SnapshotID: r.SnapshotID, CommittedAt: r.LoadedAt, Rows: r.Rows,
		Summary: summary, FromHistory: true}
}

func (l *Lake) segmentIndex(ctx context.Context, n TableName, info loadhistory.SegmentInfo) (*loadhistory.Index, error) {
	id := n.String() + "/" + info.Name
	l.segments.mu.Lock()
	ix := l.segments.ix[id]
	l.segments.mu.Unlock()
	if ix != nil {
		return ix, nil
	}
	if b, err := l.readCached(n, info.Name+loadhistory.IndexSuffix); err == nil {
		ix, _ = loadhistory.DecodeIndex(info, b)
	}
	if ix == nil {
		recs, err := l.readSegment(ctx, n, info.Name)
		if err != nil {
			return nil, err
		}
		ix = loadhistory.IndexSegment(info, recs)
		l.writeCached(n, info.Name+loadhistory.IndexSuffix, loadhistory.EncodeIndex(ix))
	}
	l.segments.mu.Lock()
	if l.segments.ix == nil {
		l.segments.ix = map[string]*loadhistory.Index{}
	}
	l.segments.ix[id] = ix
	l.segments.mu.Unlock()
	return ix, nil
}

// Segments returns how many segments the history has.
func (h *LoadHistory) Segments() int { return len(h.segments) }

// Find returns the newest record of key within the dedupe window.
func (h *LoadHistory) Find(ctx context.Context, key string) (LoadRecord, bool, error) {
	fp := loadhistory.Fingerprint(key)
	return h.find(ctx, func(ix *loadhistory.Index) bool { return ix.MayHoldKey(fp) },
		func(r LoadRecord) bool { return r.Key == key })
}

// FindContent returns the newest record whose content (decompressed bytes)
// has the hex SHA-256 sum, within the dedupe window.
func (h *LoadHistory) FindContent(ctx context.Context, sum string) (LoadRecord, bool, error) {
	if sum == "" {
		return LoadRecord{}, false, nil
	}
	fp := loadhistory.Fingerprint(sum)
	return h.find(ctx, func(ix *loadhistory.Index) bool { return ix.MayHoldContent(fp) },
		func(r LoadRecord) bool { return r.ContentHash() == sum })
}

func (h *LoadHistory) find(ctx context.Context, candidate func(*loadhistory.Index) bool, match func(LoadRecord) bool) (LoadRecord, bool, error) {
	cutoff := h.lake.now().Add(-h.window)
	var best LoadRecord
	found := false
	for _, ix := range h.segments {
		if found && ix.Segment.Newest.Before(best.LoadedAt) && !ix.Segment.Newest.IsZero() {
			continue // older than what was found
		}
		if !candidate(ix) {
			continue
		}
		recs, err := h.lake.segmentRecords(ctx, h.name, ix.Segment.Name)
		if err != nil {
			return LoadRecord{}, false, err
		}
		for _, r := range recs {
			if !match(r) || r.LoadedAt.Before(cutoff) {
				continue
			}
			if !found || r.LoadedAt.After(best.LoadedAt) {
				best, found = r, true
			}
		}
	}
	return best, found, nil
}

// segmentRecords returns a segment's records (sorted by key), keeping the
// last few read.
func (l *Lake) segmentRecords(ctx context.Context, n TableName, name string) ([]LoadRecord, error) {
	id := n.String() + "/" + name
	l.segments.mu.Lock()
	recs, ok := l.segments.rec[id]
	l.segments.mu.Unlock()
	if ok {
		return recs, nil
	}
	recs, err := l.readSegment(ctx, n, name)
	if err != nil {
		return nil, err
	}
	l.segments.mu.Lock()
	if len(l.segments.rec) >= 4 {
		clear(l.segments.rec)
	}
	if l.segments.rec == nil {
		l.segments.rec = map[string][]LoadRecord{}
	}
	l.segments.rec[id] = recs
	l.segments.mu.Unlock()
	return recs, nil
}

// Records returns every record of the history within the dedupe window,
// newest load first, one per key (its newest load).
func (h *LoadHistory) Records(ctx context.Context) ([]LoadRecord, error) {
	cutoff := h.lake.now().Add(-h.window)
	newest := map[string]LoadRecord{}
	for _, ix := range h.segments {
		recs, err := h.lake.readSegment(ctx, h.name, ix.Segment.Name)
		if errors.Is(err, errLinkedSegment) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.LoadedAt.Before(cutoff) {
				continue
			}
			if cur, ok := newest[r.Key]; !ok || r.LoadedAt.After(cur.LoadedAt) {
				newest[r.Key] = r
			}
		}
	}
	out := make([]LoadRecord, 0, len(newest))
	for _, r := range newest {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b LoadRecord) int {
		if c := b.LoadedAt.Compare(a.LoadedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return out, nil
}

// writeHistory carries out plan for table n: it writes the new segment (the
// added records, merged with the records of plan.merge still inside the
// window, newest load of a key kept) and returns the segments the next
// version names, oldest first, and the file written ("" if none).
func (l *Lake) writeHistory(ctx context.Context, n TableName, plan loadhistory.Plan, now time.Time, window time.Duration) ([]loadhistory.SegmentInfo, string, error) {
	return l.writeSegment(ctx, n, loadHistoryLog, plan, now, window)
}

// writeSegment is writeHistory for the segments of log g. The load history
// keeps each key's newest load; the outcome log keeps every outcome (a key
// may be rejected, requeued and rejected again), each once.
func (l *Lake) writeSegment(ctx context.Context, n TableName, g recordLog, plan loadhistory.Plan, now time.Time, window time.Duration) ([]loadhistory.SegmentInfo, string, error) {
	recs := slices.Clone(plan.Added)
	cutoff := now.Add(-window)
	for _, s := range plan.Merge {
		old, err := l.readSegment(ctx, n, s.Name)
		if errors.Is(err, errLinkedSegment) {
			continue // not read; the next version no longer names it
		}
		if g == outcomeLog && errors.Is(err, ErrLoadHistoryMissing) {
			continue // lost already: dropped with this merge (outcomes.go)
		}
		if err != nil {
			return nil, "", err
		}
		for _, r := range old {
			if !r.LoadedAt.Before(cutoff) {
				recs = append(recs, r)
			}
		}
	}
	// Keep each key's newest load (the outcome log: each outcome once).
	slices.SortStableFunc(recs, func(a, b LoadRecord) int {
		if c := cmp.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return b.LoadedAt.Compare(a.LoadedAt)
	})
	recs = slices.CompactFunc(recs, func(a, b LoadRecord) bool {
		if g == outcomeLog {
			return a == b
		}
		return a.Key == b.Key
	})
	out := slices.Clone(plan.Keep)
	if len(recs) == 0 {
		return out, "", nil
	}
	var newest time.Time
	for _, r := range recs {
		if r.LoadedAt.After(newest) {
			newest = r.LoadedAt
		}
	}
	body, err := loadhistory.EncodeSegment(recs)
	if err != nil {
		return nil, "", fmt.Errorf("encode load history: %w", err)
	}
	name := g.segmentName(newest, len(recs))
	if err := storage.CreateOwn(ctx, l.store, l.historyKey(n, name), body,
		storage.PutOptions{ContentType: "application/vnd.apache.parquet"}); err != nil {
		return nil, "", fmt.Errorf("write load history of %s: %w", n, err)
	}
	info, _ := loadhistory.ParseSegmentName(name)
	l.writeCached(n, name, body)
	l.writeCached(n, name+loadhistory.IndexSuffix, loadhistory.EncodeIndex(loadhistory.IndexSegment(info, recs)))
	return append(out, info), name, nil
}

// dropMissingSegments removes from the table the load history segments
// that are gone from the store (ErrLoadHistoryMissing), the entries that
// are not a segment's file name (refusedSegments) and those that are
// symbolic links (errLinkedSegment), through the commit
// protocol: each attempt drops them from the newest version's list, so a
// segment another writer added meanwhile stays. It returns the names
// dropped.
func (t *Table) dropMissingSegments(ctx context.Context) ([]string, error) {
	h, _ := t.loaded()
	missing := map[string]bool{}
	names := refusedSegments(h.Props())
	for _, e := range names {
		missing[e] = true
	}
	for _, s := range slices.Concat(historySegments(h.Props()), outcomeLog.segments(h.Props())) {
		_, err := t.lake.store.Stat(ctx, t.lake.historyKey(t.name, s.Name))
		if errors.Is(err, storage.ErrSymlink) {
			t.lake.noteLinked(t.name, s.Name)
		}
		if errors.Is(err, storage.ErrNotExist) || errors.Is(err, storage.ErrSymlink) {
			missing[s.Name] = true
			names = append(names, s.Name)
		} else if err != nil {
			return nil, err
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	res, err := t.commit(ctx, &dropSegmentsMutation{t: t, missing: missing}, CommitOptions{})
	if err != nil {
		return nil, fmt.Errorf("drop missing load history segments of %s: %w", t.name, err)
	}
	return names, t.reconcileHistory(ctx, res.rebased)
}

// dropSegmentsMutation removes segment names from timelake.load-history
// and timelake.load-outcomes.
type dropSegmentsMutation struct {
	t       *Table
	missing map[string]bool
}

func (m *dropSegmentsMutation) build(_ context.Context, base *tablemeta.Indexed, _ versionRef, _ int) (*tablemeta.Change, error) {
	ch := tablemeta.ChangeProperties(base.Props(), nil, nil, m.t.lake.now().UnixMilli())
	for _, g := range []recordLog{loadHistoryLog, outcomeLog} {
		segs, refused := g.entries(base.Props())
		var keep []loadhistory.SegmentInfo
		for _, s := range segs {
			if !m.missing[s.Name] {
				keep = append(keep, s)
			}
		}
		if len(keep) == len(segs) && len(refused) == 0 {
			continue
		}
		g.name(ch, base.Props(), keep)
	}
	return ch, nil // empty when nothing changes: nothing to commit
}

// cleanUp: the change writes nothing but its version.
func (m *dropSegmentsMutation) cleanUp(context.Context, int, bool) {}

// withSegments is the change of base (made at now) whose property of log
// g names segs.
func (g recordLog) withSegments(base *tablemeta.Indexed, segs []loadhistory.SegmentInfo, now time.Time) *tablemeta.Change {
	ch := tablemeta.ChangeProperties(base.Props(), nil, nil, now.UnixMilli())
	g.name(ch, base.Props(), segs)
	return ch
}

// name sets the property of log g to segs in ch (removes it when segs is
// empty), on properties props.
func (g recordLog) name(ch *tablemeta.Change, props iceberg.Properties, segs []loadhistory.SegmentInfo) {
	if len(segs) == 0 {
		ch.SetProperties(props, nil, []string{g.prop})
		return
	}
	ch.SetProperties(props, map[string]string{g.prop: segmentsProperty(segs)}, nil)
}

// reconcileHistory makes good a change of the load history's (or the
// outcome log's) segment list that a REST catalog applied to a newer
// version than the one it was built on (rb; catalog.Catalog.Commit): the list was
// set from the older version, so the other writer's change in between was
// overwritten. The segments that change added (the keys of the snapshots
// it expired, the outcomes it recorded) are named again, and those it
// removed (merged into one it added, or past the dedupe window) are
// dropped, through the commit protocol, so a third writer's change stays
// too. A segment gone from the store meanwhile was merged into another by
// a later change and is not named again.
func (t *Table) reconcileHistory(ctx context.Context, rb *rebase) error {
	if rb == nil {
		return nil
	}
	if rb.applied == "" {
		t.lake.log.Warn("the catalog does not say which version a load history change was applied to (no metadata-log): "+
			"another writer's change of the same list may have been overwritten", "table", t.name.String())
		return nil
	}
	applied, err := t.lake.warehouse().ReadMetadataFile(ctx, t.name, rb.applied, tablemeta.Index)
	if err != nil {
		return fmt.Errorf("reconcile the load history of %s: %w", t.name, err)
	}
	for _, g := range []recordLog{loadHistoryLog, outcomeLog} {
		if err := t.reconcileLog(ctx, g, rb.base, applied); err != nil {
			return err
		}
	}
	return nil
}

// reconcileLog is reconcileHistory for the segments of log g: those the
// version applied names and base did not are named again, those base named
// and applied does not are dropped.
func (t *Table) reconcileLog(ctx context.Context, g recordLog, base, applied *tablemeta.Indexed) error {
	before := map[string]bool{}
	for _, s := range g.segments(base.Props()) {
		before[s.Name] = true
	}
	m := &reconcileSegmentsMutation{t: t, log: g, removed: map[string]bool{}}
	after := map[string]bool{}
	for _, s := range g.segments(applied.Props()) {
		after[s.Name] = true
		if !before[s.Name] {
			m.added = append(m.added, s)
		}
	}
	for name := range before {
		if !after[name] {
			m.removed[name] = true
		}
	}
	if len(m.added) == 0 && len(m.removed) == 0 {
		return nil // the other writer did not change the list
	}
	for i := 0; i < len(m.added); {
		if _, err := t.lake.store.Stat(ctx, t.lake.historyKey(t.name, m.added[i].Name)); errors.Is(err, storage.ErrNotExist) || errors.Is(err, storage.ErrSymlink) {
			m.added = slices.Delete(m.added, i, i+1)
			continue
		} else if err != nil {
			return fmt.Errorf("reconcile the load history of %s: %w", t.name, err)
		}
		i++
	}
	res, err := t.commit(ctx, m, CommitOptions{})
	if err != nil {
		return fmt.Errorf("reconcile the load history of %s with another writer's change: %w", t.name, err)
	}
	return t.reconcileHistory(ctx, res.rebased)
}

// reconcileSegmentsMutation names segments again in the property of its
// log and drops others from it (reconcileHistory).
type reconcileSegmentsMutation struct {
	t       *Table
	log     recordLog
	added   []loadhistory.SegmentInfo
	removed map[string]bool
}

func (m *reconcileSegmentsMutation) build(_ context.Context, base *tablemeta.Indexed, _ versionRef, _ int) (*tablemeta.Change, error) {
	cur := m.log.segments(base.Props())
	var keep []loadhistory.SegmentInfo
	named := map[string]bool{}
	for _, s := range cur {
		if !m.removed[s.Name] {
			keep = append(keep, s)
			named[s.Name] = true
		}
	}
	for _, s := range m.added {
		if !named[s.Name] {
			keep = append(keep, s)
		}
	}
	if segmentsProperty(keep) == segmentsProperty(cur) {
		return nil, errNothingToCommit
	}
	return m.log.withSegments(base, keep, m.t.lake.now()), nil
}

// cleanUp: the change writes nothing but its version.
func (m *reconcileSegmentsMutation) cleanUp(context.Context, int, bool) {}
