package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings/quantity"
	"github.com/timelake/timelake/internal/storage"
)

// fleetRunResult is one run (one simulated minute): a "run" line.
type fleetRunResult struct {
	Kind     string    `json:"kind"`  // run
	Store    string    `json:"store"` // local, s3, or s3+DELAY (fleetStoreName)
	Gateways int       `json:"gateways"`
	Minute   int       `json:"minute"`
	Clock    time.Time `json:"clock"` // the simulated time of the run
	// Seconds is the wall time of the ingest run, its maintenance
	// included; Requests the HTTP requests it sent (S3 store); PeakRSS the
	// process's VmHWM from the run's start (bytes).
	Seconds             float64 `json:"seconds"`
	CPUSeconds          float64 `json:"cpu_seconds"` // user + system CPU time of the run
	Load1               float64 `json:"load1"`       // the machine's 1-minute load average after the run
	Requests            int64   `json:"requests"`
	PeakRSS             int64   `json:"peak_rss"`
	Loaded              int     `json:"loaded"`
	AlreadyLoaded       int     `json:"already_loaded"`
	Quarantined         int     `json:"quarantined"`
	Rows                int64   `json:"rows"`
	MetadataVersion     int     `json:"metadata_version"`
	NewestMetadataBytes int64   `json:"newest_metadata_bytes"`
	// Maintenance is the maintenance object of the run's report as ingest
	// --json renders it (docs/exit-codes.md); empty without a round.
	Maintenance json.RawMessage `json:"maintenance,omitempty"`
}

// fleetRunOptions are the flags of tlbench fleet-run.
type fleetRunOptions struct {
	setup  string
	minute int
	state  bool   // record the table's state after the run
	files  string // write the live data files for DuckDB here ("" = no)
	resend bool   // re-send gateway 0's file of minute 0 and check it is recognised
	// set are table properties (KEY=VALUE) set after the run, as `tables
	// alter --set` does: experiments with other settings (the targets are
	// about the defaults).
	set map[string]string
}

// fleetRun drops the gateways' files of one simulated minute, runs one
// ingest on the simulated clock (measured), then records what was asked
// (not measured). It writes JSON lines to w.
func fleetRun(ctx context.Context, o fleetRunOptions, w io.Writer) error {
	s, err := readFleetSetup(o.setup)
	if err != nil {
		return err
	}
	// Two S3 clients: the run's requests are counted, the bench's own
	// (dropping files, reading the state) are not.
	hc := newCountingClient()
	var counted, plain *s3.Client
	if s.Store == "s3" {
		if counted, err = s.s3Client(ctx, hc); err != nil {
			return err
		}
		if plain, err = s.s3Client(ctx, nil); err != nil {
			return err
		}
	}
	drop, err := openFleetStore(s.Landing, plain)
	if err != nil {
		return err
	}
	for gw := range s.Gateways {
		if _, err := drop.Put(ctx, fleetKey(gw, o.minute), bytes.NewReader(fleetFile(gw, o.minute)), storage.PutOptions{}); err != nil {
			return err
		}
	}
	var resend *fleetResend
	if o.resend {
		if resend, err = fleetResendBefore(ctx, s, plain, drop, o.minute); err != nil {
			return err
		}
	}

	// The measured run: from here on, the clock, RSS and requests are the
	// run's own.
	stopProfiles := func() {}
	if dir := os.Getenv("TLBENCH_PROFILE"); dir != "" {
		if stopProfiles, err = startProfiles(dir, fmt.Sprintf("-%s-%04d", s.name(), o.minute)); err != nil {
			return err
		}
	}
	resetPeakRSS()
	cpu0 := cpuTime()
	t0 := time.Now()
	base := s.ClockStart.Add(time.Duration(o.minute) * time.Minute)
	clock := func() time.Time { return base.Add(min(time.Since(t0), 59*time.Second)) }
	rep, err := fleetIngest(ctx, s, o.setup, counted, clock)
	stopProfiles()
	if err != nil {
		return fmt.Errorf("minute %d: %w", o.minute, err)
	}
	r := fleetRunResult{Kind: "run", Store: s.name(), Gateways: s.Gateways, Minute: o.minute, Clock: base,
		Seconds: time.Since(t0).Seconds(), CPUSeconds: (cpuTime() - cpu0).Seconds(), Load1: loadAverage(),
		Requests: hc.n.Load(), PeakRSS: peakRSS(),
		Loaded: rep.Loaded, AlreadyLoaded: rep.AlreadyLoaded, Quarantined: rep.Quarantined, Rows: rep.Rows,
		MetadataVersion: rep.MetadataVersion}
	if rep.Maintenance != nil {
		if r.Maintenance, err = json.Marshal(rep.Maintenance); err != nil {
			return err
		}
	}
	if r.Quarantined > 0 || rep.Loaded != s.Gateways {
		return fmt.Errorf("minute %d: loaded %d of %d files (%d quarantined)", o.minute, rep.Loaded, s.Gateways, rep.Quarantined)
	}

	// Not measured: what the bench records about the table.
	wh, err := openFleetStore(s.Warehouse, plain)
	if err != nil {
		return err
	}
	info, err := wh.Stat(ctx, metadataDir+fmt.Sprintf("v%d.metadata.json", rep.MetadataVersion))
	if err != nil {
		return err
	}
	r.NewestMetadataBytes = info.Size
	enc := json.NewEncoder(w)
	if err := enc.Encode(r); err != nil {
		return err
	}
	rl, err := lake.Open(ctx, s.Warehouse, lake.Options{S3: plain, Now: clock})
	if err != nil {
		return err
	}
	tbl, err := rl.LoadTable(ctx, fleetTable)
	if err != nil {
		return err
	}
	if resend != nil {
		if err := resend.after(ctx, tbl, rep, drop); err != nil {
			return err
		}
		if err := enc.Encode(resend); err != nil {
			return err
		}
	}
	if len(o.set) > 0 {
		for k, v := range o.set {
			if err := lake.ValidateProperty(k, v); err != nil {
				return err
			}
		}
		if err := tbl.SetProperties(ctx, o.set, nil); err != nil {
			return err
		}
	}
	commits, err := recordCommitTimes(snapshotTimesPath(o.setup), tbl)
	if err != nil {
		return err
	}
	if !o.state && o.files == "" {
		return nil
	}
	live, err := liveDataFiles(ctx, tbl, commits)
	if err != nil {
		return err
	}
	if o.state {
		st, err := fleetStateOf(ctx, s, o.minute, clock(), tbl, wh, live)
		if err != nil {
			return err
		}
		if err := enc.Encode(st); err != nil {
			return err
		}
	}
	if o.files != "" {
		return writeLiveFiles(ctx, o.files, live, plain)
	}
	return nil
}

// fleetIngest runs one ingest of the fleet's landing into its table, with
// the product's defaults, on clock; counted is the S3 client whose
// requests are the run's.
func fleetIngest(ctx context.Context, s fleetSetup, setup string, counted *s3.Client, clock func() time.Time) (*ingest.Report, error) {
	// The cache folder persists between runs, as ~/.cache/timelake does
	// for a poller started by cron.
	l, err := lake.Open(ctx, s.Warehouse, lake.Options{S3: counted, Now: clock,
		CacheDir: filepath.Join(filepath.Dir(setup), "cache-"+s.Store)})
	if err != nil {
		return nil, err
	}
	landing, err := openFleetStore(s.Landing, counted)
	if err != nil {
		return nil, err
	}
	cfg := ingest.Config{
		Landing: landing, Lake: l, Table: fleetTable, SeriesKey: []string{"device_id"}, Partition: lake.Day,
		WorkDir: os.TempDir(), ContentDedupe: true, MaintenanceBudget: ingest.DefaultMaintenanceBudget,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Now:    clock,
		// The bench writes each gateway file whole before the minute's run,
		// on a clock of its own: a local landing folder's settle times,
		// which run on the wall clock, would only delay it.
		SettleTime: -1, OpenEndSettleTime: -1,
	}
	restore := ingest.TuneRuntime(cfg.MemoryBudget, os.LookupEnv)
	defer restore()
	return ingest.Run(ctx, cfg)
}

// metadataDir is the table's metadata folder in the warehouse store.
var metadataDir = fleetTable.Namespace + "/" + fleetTable.Name + "/metadata/"

// resetPeakRSS restarts the process's VmHWM from its current RSS (Linux
// /proc/self/clear_refs "5"), so the peak is the run's, not the file
// drop's before it. Where that is not possible the peak covers both.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the machine's 1-minute load average (Linux /proc/loadavg;
// 0 elsewhere): on a shared machine it says how much of a run's wall time
// was waiting for a core.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// fleetLiveFile is a live data file of the current snapshot.
type fleetLiveFile struct {
	path, partition string
	bytes           int64
	committed       time.Time // its snapshot's time
}

// recordCommitTimes adds the table's snapshots to the bench's own record
// of every snapshot's time (id<TAB>timestamp-ms lines in p) and returns
// the record. Snapshots expire within minutes; the bench still needs to
// know when each live file was committed to tell cold partitions.
func recordCommitTimes(p string, tbl *lake.Table) (map[int64]int64, error) {
	times := map[int64]int64{}
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var id, ms int64
		if _, err := fmt.Sscanf(line, "%d\t%d", &id, &ms); err == nil {
			times[id] = ms
		}
	}
	var add strings.Builder
	for _, sn := range tbl.Metadata().Snapshots() {
		if _, ok := times[sn.SnapshotID]; !ok {
			times[sn.SnapshotID] = sn.TimestampMs
			fmt.Fprintf(&add, "%d\t%d\n", sn.SnapshotID, sn.TimestampMs)
		}
	}
	if add.Len() == 0 {
		return times, nil
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(add.String()); err != nil {
		f.Close()
		return nil, err
	}
	return times, f.Close()
}

// liveDataFiles reads the current snapshot's manifests: every live data
// file with its partition and commit time (from commits, the bench's
// record of snapshot times).
func liveDataFiles(ctx context.Context, tbl *lake.Table, commits map[int64]int64) ([]fleetLiveFile, error) {
	meta := tbl.Metadata()
	cur := meta.CurrentSnapshot()
	if cur == nil {
		return nil, nil
	}
	fs, err := tbl.Iceberg().FS(ctx)
	if err != nil {
		return nil, err
	}
	mfs, err := cur.Manifests(fs)
	if err != nil {
		return nil, err
	}
	var out []fleetLiveFile
	for _, mf := range mfs {
		if mf.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		entries, err := mf.FetchEntries(fs, true)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			ts, ok := commits[e.SnapshotID()]
			if !ok {
				return nil, fmt.Errorf("live data file %s: snapshot %d is not in the bench's record", e.DataFile().FilePath(), e.SnapshotID())
			}
			p := e.DataFile().FilePath()
			out = append(out, fleetLiveFile{path: p, partition: path.Base(path.Dir(p)),
				bytes: e.DataFile().FileSizeBytes(), committed: time.UnixMilli(ts).UTC()})
		}
	}
	return out, nil
}

// writeLiveFiles writes "partition<TAB>local path<TAB>bytes" lines for
// bench/duckdb: local paths as they are, S3 objects downloaded next to the
// list first (DuckDB reads local files here; the layout is what is
// measured, not the transport).
func writeLiveFiles(ctx context.Context, list string, live []fleetLiveFile, c *s3.Client) error {
	dir := strings.TrimSuffix(list, filepath.Ext(list)) + ".d"
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	var b strings.Builder
	for i, f := range live {
		p := strings.TrimPrefix(f.path, "file://")
		if strings.HasPrefix(f.path, "s3://") {
			loc, err := storage.ParseLocation(f.path, false)
			if err != nil {
				return err
			}
			p = filepath.Join(dir, f.partition, fmt.Sprintf("%06d.parquet", i))
			if err := download(ctx, c, loc.Bucket, loc.Prefix, p); err != nil {
				return err
			}
		}
		fmt.Fprintf(&b, "%s\t%s\t%d\n", f.partition, p, f.bytes)
	}
	return os.WriteFile(list, []byte(b.String()), 0o644)
}

func download(ctx context.Context, c *s3.Client, bucket, key, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("get s3://%s/%s: %w", bucket, key, err)
	}
	defer out.Body.Close()
	f, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, out.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fleetState is the table after a run: a "state" line.
type fleetState struct {
	Kind     string    `json:"kind"` // state
	Store    string    `json:"store"`
	Gateways int       `json:"gateways"`
	Minute   int       `json:"minute"`
	Clock    time.Time `json:"clock"`
	// Everything under data/ (live files, files of snapshots not yet
	// expired, orphans) and the live data files of the current snapshot.
	DataBytes     int64 `json:"data_bytes"`
	DataObjects   int   `json:"data_objects"`
	LiveDataBytes int64 `json:"live_data_bytes"`
	LiveDataFiles int   `json:"live_data_files"`
	// Partitions: the live files of each partition, oldest first.
	Partitions []fleetPartition `json:"partitions"`
	// Everything under metadata/, and its parts: metadata versions,
	// manifest lists (snap-*.avro), manifests (other .avro), the load
	// history's segments named by the table (HistoryKeys records in them)
	// and other files (orphan segments, version hint, head cache, state).
	MetadataBytes     int64 `json:"metadata_bytes"`
	MetadataObjects   int   `json:"metadata_objects"`
	VersionBytes      int64 `json:"version_bytes"`
	VersionsKept      int   `json:"versions_kept"`
	ManifestListBytes int64 `json:"manifest_list_bytes"`
	ManifestLists     int   `json:"manifest_lists"`
	ManifestBytes     int64 `json:"manifest_bytes"`
	Manifests         int   `json:"manifests"`
	HistoryBytes      int64 `json:"history_bytes"`
	HistorySegments   int   `json:"history_segments"`
	HistoryKeys       int   `json:"history_keys"`
	OtherBytes        int64 `json:"other_metadata_bytes"`
	// NewestMetadataBytes is the size of the current vN.metadata.json;
	// Snapshots the snapshots it holds.
	NewestMetadataBytes int64 `json:"newest_metadata_bytes"`
	Snapshots           int   `json:"snapshots"`
	// TotalRows is the current snapshot's total-records; ExpectedRows the
	// rows dropped so far.
	TotalRows    int64 `json:"total_rows"`
	ExpectedRows int64 `json:"expected_rows"`
	// The table's compaction settings the targets refer to.
	ColdAfterSeconds float64 `json:"cold_after_seconds"`
	TargetFileSize   int64   `json:"target_file_size"`
}

// fleetPartition is one partition's live data files.
type fleetPartition struct {
	Name  string `json:"name"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
	// NewestCommit is when the newest of them was committed; Cold: more
	// than cold-after before the state.
	NewestCommit time.Time `json:"newest_commit"`
	Cold         bool      `json:"cold"`
}

var versionFile = regexp.MustCompile(`^v(\d+)\.metadata\.json$`)

// fleetStateOf measures the table: listings of data/ and metadata/, the
// live files, the load history and the current metadata.
func fleetStateOf(ctx context.Context, s fleetSetup, minute int, now time.Time, tbl *lake.Table, wh storage.Store, live []fleetLiveFile) (fleetState, error) {
	props := tbl.Properties()
	coldAfter := lake.DefaultCompactColdAfter
	if d, err := quantity.ParseAge(props[lake.PropCompactColdAfter]); err == nil && d > 0 {
		coldAfter = d
	}
	target := int64(lake.DefaultTargetFileSize)
	if n, err := quantity.ParseSize(props[lake.PropTargetFileSize]); err == nil && n > 0 {
		target = n
	}
	st := fleetState{Kind: "state", Store: s.name(), Gateways: s.Gateways, Minute: minute, Clock: now,
		ExpectedRows:     s.rowsAfter(minute),
		ColdAfterSeconds: coldAfter.Seconds(), TargetFileSize: target}
	prefix := fleetTable.Namespace + "/" + fleetTable.Name + "/"
	if err := wh.List(ctx, prefix+"data/", func(o storage.ObjectInfo) error {
		st.DataBytes += o.Size
		st.DataObjects++
		return nil
	}); err != nil {
		return st, err
	}
	segments := map[string]bool{}
	for _, n := range strings.Split(props[lake.PropLoadHistory], ",") {
		if n = strings.TrimSpace(n); n != "" {
			segments[n] = true
		}
	}
	if err := wh.List(ctx, metadataDir, func(o storage.ObjectInfo) error {
		st.MetadataBytes += o.Size
		st.MetadataObjects++
		name := strings.TrimPrefix(o.Key, metadataDir)
		switch {
		case versionFile.MatchString(name):
			st.VersionBytes += o.Size
			st.VersionsKept++
		case strings.HasPrefix(name, "snap-") && strings.HasSuffix(name, ".avro"):
			st.ManifestListBytes += o.Size
			st.ManifestLists++
		case strings.HasSuffix(name, ".avro"):
			st.ManifestBytes += o.Size
			st.Manifests++
		case segments[name]:
			st.HistoryBytes += o.Size
			st.HistorySegments++
		default:
			st.OtherBytes += o.Size
		}
		return nil
	}); err != nil {
		return st, err
	}
	info, err := wh.Stat(ctx, metadataDir+fmt.Sprintf("v%d.metadata.json", tbl.Version()))
	if err != nil {
		return st, err
	}
	st.NewestMetadataBytes = info.Size
	st.Snapshots = len(tbl.Metadata().Snapshots())
	st.TotalRows = totalRows(tbl)
	hist, err := tbl.LoadHistory(ctx)
	if err != nil {
		return st, err
	}
	recs, err := hist.Records(ctx)
	if err != nil {
		return st, err
	}
	st.HistoryKeys = len(recs)

	parts := map[string]*fleetPartition{}
	newest := map[string]time.Time{}
	for _, f := range live {
		st.LiveDataBytes += f.bytes
		st.LiveDataFiles++
		p := parts[f.partition]
		if p == nil {
			p = &fleetPartition{Name: f.partition}
			parts[f.partition] = p
		}
		p.Files++
		p.Bytes += f.bytes
		if f.committed.After(newest[f.partition]) {
			newest[f.partition] = f.committed
		}
	}
	for name, p := range parts {
		p.NewestCommit = newest[name]
		p.Cold = newest[name].Before(now.Add(-coldAfter))
		st.Partitions = append(st.Partitions, *p)
	}
	sort.Slice(st.Partitions, func(i, j int) bool { return st.Partitions[i].Name < st.Partitions[j].Name })
	return st, nil
}

// fleetResend is the check of a key re-sent after its snapshot expired: a
// "resend" line.
type fleetResend struct {
	Kind   string `json:"kind"` // resend
	Store  string `json:"store"`
	Minute int    `json:"minute"` // the run that re-sent it
	Key    string `json:"key"`
	// Before the run: whether a snapshot still carried the key, and
	// whether the table knew it as loaded (from the load history).
	InSnapshots bool `json:"in_snapshots"`
	InHistory   bool `json:"in_history"`
	// The run: the key's status, the rows it loaded (the minute's other
	// files) and the table's rows before and after.
	Status     string `json:"status"`
	SameAs     string `json:"same_as,omitempty"` // recognised by its content, not its key
	RunRows    int64  `json:"run_rows"`
	RowsBefore int64  `json:"rows_before"`
	RowsAfter  int64  `json:"rows_after"`
	// StillInLanding: the re-sent file was left in the landing bucket.
	StillInLanding bool `json:"still_in_landing"`
	OK             bool `json:"ok"`
}

// fleetResendBefore drops gateway 0's file of minute 0 again (same key,
// same bytes) and records what the table knows of it before the run.
func fleetResendBefore(ctx context.Context, s fleetSetup, c *s3.Client, drop storage.Store, minute int) (*fleetResend, error) {
	r := &fleetResend{Kind: "resend", Store: s.name(), Minute: minute, Key: fleetKey(0, 0)}
	l, err := lake.Open(ctx, s.Warehouse, lake.Options{S3: c, Now: func() time.Time {
		return s.ClockStart.Add(time.Duration(minute) * time.Minute)
	}})
	if err != nil {
		return nil, err
	}
	tbl, err := l.LoadTable(ctx, fleetTable)
	if err != nil {
		return nil, err
	}
	_, r.InSnapshots = tbl.FindBatch(r.Key)
	bi, found, err := tbl.FindLoaded(ctx, r.Key)
	if err != nil {
		return nil, err
	}
	r.InHistory = found && bi.FromHistory
	r.RowsBefore = totalRows(tbl)
	if _, err := drop.Put(ctx, r.Key, bytes.NewReader(fleetFile(0, 0)), storage.PutOptions{}); err != nil {
		return nil, err
	}
	return r, nil
}

// after completes the check from the run's report and the table after it.
func (r *fleetResend) after(ctx context.Context, tbl *lake.Table, rep *ingest.Report, drop storage.Store) error {
	for _, f := range rep.Files {
		if f.Key == r.Key {
			r.Status, r.SameAs = string(f.Status), f.SameAs
		}
	}
	r.RunRows, r.RowsAfter = rep.Rows, totalRows(tbl)
	_, err := drop.Stat(ctx, r.Key)
	switch {
	case err == nil:
		r.StillInLanding = true
	case !errors.Is(err, storage.ErrNotExist):
		return err
	}
	// Rows unchanged: the run added its minute's files and nothing else.
	r.OK = r.Status == string(ingest.AlreadyLoaded) && r.SameAs == "" && !r.StillInLanding &&
		r.RowsAfter == r.RowsBefore+int64(rep.Loaded*fleetRowsPerFile) && r.RunRows == int64(rep.Loaded*fleetRowsPerFile)
	return nil
}

// totalRows is the current snapshot's total-records.
func totalRows(tbl *lake.Table) int64 {
	cur := tbl.Metadata().CurrentSnapshot()
	if cur == nil || cur.Summary == nil {
		return 0
	}
	n, _ := strconv.ParseInt(cur.Summary.Properties["total-records"], 10, 64)
	return n
}
