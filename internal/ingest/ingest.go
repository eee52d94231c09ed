// Package ingest is the main job: one run that moves every file of the
// landing bucket into an Iceberg table, crash-safe (docs/ingest.md). For each file, in key order: download it, decode it to the table's
// schema, append it with batch id = object key, and delete it only after
// the commit (or after finding the batch already committed). A file that
// cannot be loaded is quarantined with a report; the run goes on.
//
// Run is one run (`timelake ingest`). A Session keeps the same machinery
// open, with one table and the lease held, for loads of a set of keys at a
// time (`timelake serve`: the files notifications announce, a sweep's
// listing).
package ingest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/profile"
	"github.com/timelake/timelake/internal/retry"
	"github.com/timelake/timelake/internal/storage"
)

// ErrLeaseHeld is returned when another run holds the table's ingest lease.
var ErrLeaseHeld = landing.ErrLeaseHeld

// ErrNoTable is returned when the table does not exist and creating it is
// not allowed (--no-create).
var ErrNoTable = errors.New("table does not exist and --no-create is set")

// Defaults of the pipeline.
const (
	DefaultParallel       = 4
	DefaultFilesPerCommit = 100
	DefaultMemoryBudget   = 64 << 20
	// DefaultCommitWait bounds how long prepared files wait for others to
	// fill a commit.
	DefaultCommitWait = time.Second
)

// Config is one ingest run's input.
type Config struct {
	Landing          storage.Store
	QuarantinePrefix string // "" means _rejected/
	Prefix           string // only keys with this prefix
	Lake             *lake.Lake
	Table            lake.TableName

	// Accept, when set, says which listed keys (below Prefix) are this
	// table's: the others are left alone, neither loaded, reported nor
	// counted against MaxFiles. A routed run (`ingest --route`) gives each
	// table's run the keys its routes take; nil takes every key. A folder
	// of a local landing folder that cannot be listed is reported by every
	// run, whatever Accept says: its keys are unknown.
	Accept func(key string) bool

	// Table creation from the first file when the table does not exist.
	NoCreate   bool
	TimeColumn string   // "" means infer
	SeriesKey  []string // optional
	Partition  lake.Granularity

	TimeUnit       string         // numeric epoch unit of the time column: s, ms, us, ns
	AssumeLocation *time.Location // zone of text times without offset; nil = UTC

	// CSV is how the landing files' CSV and TSV text is written.
	CSV decode.CSV
	// Columns are explicit column types by name: of the table created
	// from the first file, and of the columns Evolve adds.
	Columns map[string]arrow.DataType
	// Evolve says which schema changes a landing file may bring
	// (docs/schema.md); "" means the table's timelake.evolve property,
	// else off. A table this run creates gets the property when it is set.
	Evolve decode.Evolution
	// OnError says what a row that cannot be loaded does to its file
	// (docs/schema.md, "Bad rows set aside"); "" means the table's
	// timelake.on-error, else decode.OnErrorFile. MaxBadRows bounds the
	// rows skip-rows sets aside in one file; unset
	// (decode.MaxBadRows.IsSet), the table's timelake.max-bad-rows, else
	// decode.DefaultMaxBadRows. A source profile the key matches
	// (profile.Set, from the table's properties) wins over both, and over
	// the CSV, Columns, time and Evolve settings above.
	OnError    decode.OnError
	MaxBadRows decode.MaxBadRows
	// SourceColumn and LoadTimeColumn name the columns that hold each
	// row's landing key and the time its file was loaded (docs/schema.md,
	// "Source columns"); "" means the table's timelake.source-column and
	// timelake.load-time-column, else none. A table this run creates gets
	// the properties when they are set.
	SourceColumn   string
	LoadTimeColumn string

	MaxFiles int  // 0 = no limit
	DryRun   bool // list what would be loaded, change nothing

	// Parallel is how many files are downloaded, decoded and written at
	// once; 0 means DefaultParallel. 1 with FilesPerCommit 1 is the plain
	// sequential loop of the public poller (get, decode, append, delete).
	Parallel int
	// FilesPerCommit bounds how many files (one snapshot each) go into one
	// metadata write; 0 means DefaultFilesPerCommit.
	FilesPerCommit int
	// CommitWait bounds how long a prepared file waits for more to fill
	// its commit (up to FilesPerCommit); 0 means DefaultCommitWait.
	CommitWait time.Duration
	// MemoryBudget bounds the decoded bytes of landing files being decoded
	// and written at once (decode.DecodedSize: the decompressed text of a
	// CSV or TSV file, gzipped or not; the values of a Parquet file): each
	// file holds its share (admission) while it loads, and a file larger
	// than the budget is decoded and written in pieces of the budget.
	// Decoded data takes a small multiple of it (docs/performance.md).
	// Downloads (to WorkDir, not memory) do not count: up to Parallel
	// files download while others are decoded. 0 means
	// DefaultMemoryBudget.
	MemoryBudget int64
	// MaxColumns is the most columns a file may give a table (creating it,
	// or with --evolve add-columns); 0 means lake.MaxColumns.
	MaxColumns int

	// ContentDedupe reports a file whose decompressed bytes equal those of
	// a file loaded within the table's dedupe window (under another key)
	// as already loaded, naming the first key, and deletes it.
	ContentDedupe bool
	// MaintenanceBudget bounds the table maintenance run after the loading
	// (lake.Table.Maintain: compaction, snapshot expiry, orphan files) on
	// tables whose settings enable it; 0 runs none (maintenance from cron
	// with `timelake tables maintain`).
	MaintenanceBudget time.Duration
	// ExpireDue bounds the snapshots due for expiry that a run lets pile
	// up: past it, snapshot expiry runs between the run's commits, within
	// a tenth of the run's time, and past twice it whatever time it takes
	// (expireBetween; docs/ingest.md, "A long run"). 0 means
	// DefaultExpireDue; negative: none during the run. MaintenanceBudget 0
	// turns it off too.
	ExpireDue int

	LeaseTTL time.Duration // 0 means 10 minutes
	// Holder names this run in the lease; the zero value means
	// landing.NewHolder() (host, PID and a random run id).
	Holder landing.Holder
	// LeaseStore holds the lease, and LeasePrefix is the landing prefix it
	// covers, relative to LeaseStore. Leave both empty to keep the lease in
	// Landing on Prefix; a landing location with a key prefix of its own
	// (s3://bucket/gateways) keeps it at the bucket's root instead
	// (LeaseStore the bucket, LeasePrefix "gateways/"+Prefix), so that
	// pollers given overlapping locations still see each other's leases.
	LeaseStore  storage.Store
	LeasePrefix string
	// BreakLease removes the leases that would block this run (its own
	// table and prefix, and overlapping prefixes) before taking its own;
	// each one removed is reported in Report.BrokenLeases.
	BreakLease bool
	WorkDir    string // temp folder for downloads; "" = os.TempDir()

	// SettleTime and OpenEndSettleTime are the rule of when a file of a
	// local landing folder (*storage.LocalStore) is complete
	// (landing.Settle): unmodified for SettleTime, and for
	// OpenEndSettleTime when its end is open (a CSV line without its line
	// end). A file not complete yet is reported as waiting (with when it
	// may be: FileResult.ReadyAt) and left for a later run; the run waits
	// for those that settle within MaxSettleWait. 0 means the default
	// (landing.DefaultSettleTime, landing.DefaultOpenEndSettleTime),
	// negative none. S3 landing buckets take no rule: an object is visible
	// only once complete.
	SettleTime        time.Duration
	OpenEndSettleTime time.Duration

	// Warehouse is the warehouse's store, for the check that a table that
	// does not exist is not a missing lake bucket; nil skips the check.
	Warehouse storage.Store
	// Explain names the landing bucket, the warehouse and the settings
	// behind them in the explanations of setup errors (storage.Diagnose).
	Explain Explain

	Logger *slog.Logger
	Now    func() time.Time

	// OnFile is called after each file with its result (output lines).
	OnFile func(FileResult)
	// OnPlan is called once, before the first file, with the report so
	// far: the table it would create (a dry run, WouldCreate) and the
	// leases it broke (BrokenLeases).
	OnPlan func(*Report)
	// OnCreate is called when the run creates the table.
	OnCreate func(*Created)
	// OnCommit is called after each metadata write of loaded files with
	// their keys (batch ids), how long the write took, and its error (nil
	// when it succeeded): serve's commit metrics, the latency benchmark.
	OnCommit func(keys []string, took time.Duration, err error)
	// AfterCommit runs after a file's rows are committed and before the
	// landing object is deleted; an error aborts the run there. Tests use it
	// to simulate a crash between commit and delete.
	AfterCommit func(key string) error
	// FaultHook is called with a stage and the key of every file
	// decoded: "decode" on the decoder's stack, where a reader's code
	// runs, and "write" where a piece of it is written. Tests make it
	// panic to stand for a reader or writer that panics on a file.
	FaultHook func(stage, key string)
}

// MaxSettleWait bounds the wait of a run for files of a local landing
// folder that are complete a moment later (Config.SettleTime): the others
// wait for a later run.
const MaxSettleWait = 2 * time.Second

// Explain names the stores of a run for storage.Diagnose. Empty Where
// fields are filled from the stores' URIs.
type Explain struct {
	Landing, Lake storage.Where
	Names         storage.Names
}

// Status is what happened to one landing file.
type Status string

// File statuses.
const (
	Loaded        Status = "loaded"
	AlreadyLoaded Status = "already-loaded"
	Quarantined   Status = "quarantined"
	WouldLoad     Status = "would-load" // dry run
	// Waiting: left in the landing bucket for the next run: the file was
	// modified too recently or changed while it was read (it may still be
	// being written), or its content is being loaded under another key in
	// this run.
	Waiting Status = "waiting"
	// Failed: left in the landing bucket, the reason says why: it could
	// not be fetched (or did not fit in the download folder), or could not
	// be quarantined. A later run tries again; the run is partial.
	Failed Status = "failed"
)

// FileResult is one output line.
type FileResult struct {
	Key    string `json:"key"`
	Status Status `json:"status"`
	Size   int64  `json:"size"`
	Rows   int64  `json:"rows"`
	// DuplicateRows counts the rows loaded whose (series key, time) an
	// earlier row of the same file has: kept, and said so; under
	// timelake.read-dedup replaced by the later row (ReplacedRows).
	DuplicateRows int64 `json:"duplicate_rows,omitempty"`
	ReplacedRows  int64 `json:"replaced_rows,omitempty"`
	// RejectedRows counts the rows set aside under --on-error skip-rows,
	// RejectsTo is the rejects file that holds them (with its report).
	RejectedRows int64  `json:"rejected_rows,omitempty"`
	RejectsTo    string `json:"rejects_to,omitempty"`
	// Profile names the source profile the file was read with.
	Profile       string `json:"profile,omitempty"`
	SnapshotID    int64  `json:"snapshot_id,omitempty"`
	DataFiles     int    `json:"data_files,omitempty"`
	Reason        string `json:"reason,omitempty"`
	QuarantinedTo string `json:"quarantined_to,omitempty"`
	// SameAs names the key under which the same content was loaded
	// (content dedupe).
	SameAs string `json:"same_as,omitempty"`
	// SchemaChanges says how the file's commit changed the table's
	// schema (`added "battery" double`, `widened "n" int -> long`).
	SchemaChanges []string `json:"schema_changes,omitempty"`
	// ReadyAt is, for a file of a local folder waiting to be complete,
	// when it is if it does not change meanwhile (landing.Wait.Until).
	ReadyAt time.Time `json:"ready_at,omitzero"`
	Seconds float64   `json:"seconds"`

	// For the table's outcome log (lake.Table.RecordOutcomes): the
	// landing object's SHA-256 and modification time.
	sha256 string
	landed time.Time
}

// Created describes a table created by this run.
type Created struct {
	Table      string   `json:"table"`
	Location   string   `json:"location"`
	TimeColumn string   `json:"time_column"`
	SeriesKey  []string `json:"series_key"`
	Partition  string   `json:"partition"`
	Columns    []Column `json:"columns"`
	FromFile   string   `json:"from_file"`
}

// CreatedFrom describes a table created from file fromFile, from its
// metadata: location, contract (timelake.* properties) and columns.
func CreatedFrom(name lake.TableName, meta table.Metadata, fromFile string) *Created {
	c := &Created{Table: name.String(), Location: meta.Location(), FromFile: fromFile,
		SeriesKey: []string{}, Columns: []Column{}}
	if ct, err := lake.ContractOf(meta); err == nil {
		c.TimeColumn, c.Partition = ct.TimeColumn, string(ct.Chunk)
		c.SeriesKey = append(c.SeriesKey, ct.SeriesKey...)
	}
	for _, f := range meta.CurrentSchema().Fields() {
		c.Columns = append(c.Columns, Column{Name: f.Name, Type: f.Type.String(), Required: f.Required})
	}
	return c
}

// Column is a column of a created table.
type Column struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
}

// Report is the outcome of a run (the --json document).
type Report struct {
	Table     string `json:"table"`
	Warehouse string `json:"warehouse"`
	Landing   string `json:"landing"`
	DryRun    bool   `json:"dry_run"`
	// WouldCreate is set by a dry run when the table does not exist: the
	// run would create it from the first file that decodes.
	WouldCreate     string              `json:"would_create,omitempty"`
	Created         *Created            `json:"created,omitempty"`
	BrokenLeases    []landing.LeaseInfo `json:"broken_leases,omitempty"`
	Files           []FileResult        `json:"files"`
	Loaded          int                 `json:"loaded"`
	AlreadyLoaded   int                 `json:"already_loaded"`
	Quarantined     int                 `json:"quarantined"`
	Waiting         int                 `json:"waiting"`
	Failed          int                 `json:"failed"`
	Rows            int64               `json:"rows"`
	RejectedRows    int64               `json:"rejected_rows"` // rows set aside (--on-error skip-rows)
	Remaining       bool                `json:"remaining"`     // --max-files stopped the run early
	SnapshotID      int64               `json:"snapshot_id,omitempty"`
	MetadataVersion int                 `json:"metadata_version,omitempty"`
	// ExpiredDuringRun is what snapshot expiry between the run's commits
	// did; nil when none ran.
	ExpiredDuringRun *RunExpiry `json:"expired_during_run,omitempty"`
	// Maintenance is what the maintenance after the loading did; nil when
	// none ran.
	Maintenance *Maintenance `json:"maintenance,omitempty"`
	// OutcomesError says why the duplicates and rejections of the run
	// could not be written to the table's outcome log (the files are
	// settled whatever it says; docs/tables.md, "tables history").
	OutcomesError string `json:"outcomes_error,omitempty"`
	// ClockAhead is set when files of the run were modified in the future
	// (landing.ClockAhead): the clock of the machine that wrote them is
	// ahead of this host's.
	ClockAhead *ClockAhead `json:"clock_ahead,omitempty"`
	Seconds    float64     `json:"seconds"`
}

// ClockAhead is what a run saw of files modified in the future: how many,
// the one furthest ahead and by how much.
type ClockAhead struct {
	Files   int     `json:"files"`
	Key     string  `json:"key"`
	Seconds float64 `json:"seconds"`
}

// Partial reports whether some files were quarantined or failed, or rows
// set aside.
func (r *Report) Partial() bool { return r.Quarantined > 0 || r.Failed > 0 || r.RejectedRows > 0 }

type runner struct {
	cfg      Config
	complete landing.Settle // when a local file is complete; zero on S3
	bucket   *landing.Bucket
	tbl      *lake.Table // nil until the table exists
	rep      *Report
	log      *slog.Logger
	waiting  []FileResult // recorded at the end of the run

	mu       sync.Mutex
	contents map[string]string        // content hash -> key, of the files of this run being loaded
	ahead    map[string]time.Duration // files modified in the future: how far (noteClockAhead)

	// leaseKey is the run's lease in LeaseStore, which fetchStopsRun reads back
	// (once, probeOnce) to tell a refusal of every read from one object's.
	leaseKey  string
	probeOnce sync.Once
	probeErr  error

	// tempSwept is when removeStaleTemp last looked (a session lists
	// again and again).
	tempSwept time.Time

	// loadedBy says how a key of this run or load reached it
	// (lake.LoadedByPoll, ...: the snapshot summary's timelake.loaded-by;
	// "" for nothing said); nil says nothing.
	loadedBy func(key string) string
	// outcomes are the duplicates and rejections recorded so far, for the
	// table's outcome log at the end of the run or load.
	outcomes []lake.LoadRecord
}

// Run performs one ingest run. It returns the report so far together with
// an error when the run could not finish: ErrLeaseHeld (another run is
// active), ErrNoTable, a *lake.SourceColumnError (the source columns
// name columns the table cannot fill), ctx cancellation, or a
// storage/commit error (the file being loaded stays in the landing bucket for the next run). Files that
// cannot be loaded are not errors of the run: they are quarantined and
// counted in Report.Quarantined.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	start := time.Now()
	r := newRunner(cfg, landing.HolderIngest)
	r.loadedBy = func(string) string { return lake.LoadedByPoll }
	err := r.run(ctx)
	r.recordOutcomes(ctx)
	if err == nil && r.tbl != nil && !r.cfg.DryRun && r.cfg.MaintenanceBudget > 0 && ctx.Err() == nil {
		r.rep.Maintenance = Maintain(ctx, r.tbl, r.cfg.MaintenanceBudget)
	}
	if err == nil && ctx.Err() != nil {
		// Stopped after the last file (during maintenance, or before it):
		// the files are committed, the run is not complete.
		err = fmt.Errorf("%s: stopped after its files were loaded: %w", r.cfg.Table, ctx.Err())
	}
	r.finishReport(start)
	return r.rep, err
}

// newRunner fills cfg's defaults and starts an empty report; kind is what
// its lease says holds it (landing.HolderIngest, landing.HolderServe).
func newRunner(cfg Config, kind string) *runner {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 10 * time.Minute
	}
	if cfg.Holder.Token == "" {
		cfg.Holder = landing.NewHolder()
	}
	if cfg.Holder.Kind == "" {
		cfg.Holder.Kind = kind
	}
	if cfg.LeaseStore == nil {
		cfg.LeaseStore, cfg.LeasePrefix = cfg.Landing, cfg.Prefix
	}
	ex := &cfg.Explain
	if ex.Landing.Location == (storage.Location{}) {
		ex.Landing.Location, _ = storage.ParseLocation(cfg.Landing.URI(), false)
	}
	if ex.Landing.What == "" {
		ex.Landing.What = "landing"
	}
	if ex.Lake.Location == (storage.Location{}) {
		ex.Lake.Location, _ = storage.ParseLocation(cfg.Lake.URI(), false)
	}
	if ex.Lake.What == "" {
		ex.Lake.What = "warehouse"
	}
	r := &runner{
		cfg:      cfg,
		complete: settleRule(cfg),
		bucket:   &landing.Bucket{Store: cfg.Landing, QuarantinePrefix: cfg.QuarantinePrefix},
		log:      cfg.Logger,
	}
	r.newReport()
	return r
}

// settleRule is the completeness rule of cfg's landing files: the settle
// times (their defaults for 0, none for negative values) on a local
// folder, none on S3.
func settleRule(cfg Config) landing.Settle {
	if _, local := cfg.Landing.(*storage.LocalStore); !local {
		return landing.Settle{}
	}
	pick := func(d, def time.Duration) time.Duration {
		switch {
		case d == 0:
			return def
		case d < 0:
			return 0
		}
		return d
	}
	return landing.Settle{Time: pick(cfg.SettleTime, landing.DefaultSettleTime),
		OpenEndTime: pick(cfg.OpenEndSettleTime, landing.DefaultOpenEndSettleTime)}
}

// newReport starts an empty report (a run's, or one load's of a Session).
func (r *runner) newReport() {
	r.rep = &Report{Table: r.cfg.Table.String(), Warehouse: r.cfg.Lake.URI(), Landing: r.cfg.Landing.URI(),
		DryRun: r.cfg.DryRun, Files: []FileResult{}}
}

// finishReport records the files left waiting, puts the report's files in
// key order and stamps it with its duration since start and the table's
// current version and snapshot.
func (r *runner) finishReport(start time.Time) {
	for _, w := range r.waiting {
		r.record(w)
	}
	r.waiting = nil
	r.reportClockAhead()
	sort.SliceStable(r.rep.Files, func(i, j int) bool { return r.rep.Files[i].Key < r.rep.Files[j].Key })
	r.rep.Seconds = time.Since(start).Seconds()
	if r.tbl != nil {
		r.rep.MetadataVersion = r.tbl.Version()
		if id, ok := r.tbl.CurrentSnapshotID(); ok {
			r.rep.SnapshotID = id
		}
	}
}

func (r *runner) run(ctx context.Context) (err error) {
	defer func() { err = withCause(ctx, err) }()
	var release func()
	ctx, release, err = r.open(ctx)
	if err != nil {
		return err
	}
	defer release()
	if r.cfg.OnPlan != nil {
		r.cfg.OnPlan(r.rep)
	}
	files, unlisted, err := r.list(ctx)
	if err != nil {
		return err
	}
	for _, u := range unlisted {
		r.record(u)
	}
	return r.load(ctx, files)
}

// withCause returns the reason ctx was cancelled instead of err when there
// is one: a lost lease cancels the run's context with the reason.
func withCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// open loads the table (nil when it does not exist yet and may be
// created), checks the landing bucket and, unless this is a dry run, takes
// the table's ingest lease and keeps renewing it. The returned context is
// cancelled, with ErrLeaseLost as its cause, when a renewal fails; release
// stops the renewals and releases the lease (with its own deadline: it
// runs when ctx may be done). It first removes the download copies of runs
// that were killed (ingest's runs and serve's session both open here).
func (r *runner) open(ctx context.Context) (_ context.Context, release func(), err error) {
	release = func() {}
	if n := removeStaleDownloads(r.cfg.WorkDir, time.Now()); n > 0 {
		r.log.Info("removed download copies left by runs that ended without cleaning up", "files", n)
	}
	tbl, err := r.cfg.Lake.LoadTable(ctx, r.cfg.Table)
	switch {
	case err == nil:
		r.tbl = tbl
		// Source columns the table cannot fill would refuse every file:
		// refuse the run instead, before a file is moved.
		if err := tbl.CheckSourceColumns(r.sourceColumnNames()); err != nil {
			return ctx, release, err
		}
	case errors.Is(err, lake.ErrTableNotFound):
		// A missing lake bucket reads as an empty warehouse: tell them
		// apart before anything would be created (or reported as done).
		if err := r.checkWarehouse(ctx); err != nil {
			return ctx, release, err
		}
		if r.cfg.NoCreate {
			return ctx, release, fmt.Errorf("%w: %v", ErrNoTable, err)
		}
		if r.cfg.DryRun {
			r.rep.WouldCreate = r.cfg.Table.String()
		}
		// Created from the first file that decodes.
	default:
		return ctx, release, r.lakeErr(err)
	}

	// A missing landing bucket or folder (a typo) is an error, not an
	// empty landing bucket; check before the lease would create anything.
	var gaps *storage.UnlistedError // the folder is there: a gap below it is the listing's to report
	if err := r.cfg.Landing.List(ctx, landing.ReservedPrefix, func(storage.ObjectInfo) error { return nil }); err != nil && !errors.As(err, &gaps) {
		if p := storage.Diagnose(err, r.cfg.Explain.Landing, r.cfg.Explain.Names); p != nil {
			return ctx, release, p
		}
		return ctx, release, fmt.Errorf("landing %s: %w", r.cfg.Landing.URI(), err)
	}

	if !r.cfg.DryRun {
		held, err := r.takeLease(ctx)
		if err != nil {
			return ctx, release, err
		}
		r.leaseKey = held.lease.Key()
		var leaseCtx context.Context
		var stopRenew func()
		leaseCtx, stopRenew = r.keepLease(ctx, held.lease)
		release = func() {
			stopRenew() // before the release: the renewer writes the lease too
			held.release(ctx)
		}
		ctx = leaseCtx
		if r.tbl != nil {
			// The table may have moved while we waited for nothing: use the
			// newest version for the already-loaded checks.
			if err := r.tbl.Refresh(ctx); err != nil {
				release()
				return ctx, func() {}, r.lakeErr(err)
			}
		}
	}
	return ctx, release, nil
}

// staleTempAge is the age after which a temporary file of a write to a
// local landing folder (storage.LocalStore's .tl-tmp-* files: an upload
// into the folder, a quarantine copy and its report, a requeue, a lease
// write) and a lock file of its compare-and-swaps (*.tl-lock) are left by
// a process that died: a write keeps its temporary file's modification
// time fresh while it copies (from a local file or memory, without pauses),
// and a lock is held for the microseconds of a stat and a rename (a lock
// older than 30 seconds is broken by the next writer anyway). An hour is
// far beyond both: no write under way, timelake's or another run's, loses
// its file. Names of other writers (.name.tmp, rsync's .name.XXXXXX) are
// never touched.
const staleTempAge = time.Hour

// removeStaleTemp removes, in a local landing folder, the temporary and
// lock files older than staleTempAge that killed processes left below the
// run's prefix, below the quarantine of that prefix, and in the lease
// folder (storage.LocalStore.StaleTemp; orphan removal does the same for
// a local table). It runs once per run, at most every staleTempAge/6 in a
// session, only under the lease; it is best effort: a failure is logged.
func (r *runner) removeStaleTemp(ctx context.Context) {
	if r.cfg.DryRun || r.leaseKey == "" || time.Since(r.tempSwept) < staleTempAge/6 {
		return
	}
	r.tempSwept = time.Now()
	before := time.Now().Add(-staleTempAge)
	type sweep struct {
		store  storage.Store
		prefix string
	}
	q := r.bucket.QuarantineFolder()
	sweeps := []sweep{{r.cfg.Landing, r.cfg.Prefix}}
	if r.cfg.Prefix != "" { // else the first sweep covers them
		sweeps = append(sweeps, sweep{r.cfg.Landing, q + r.cfg.Prefix}, sweep{r.cfg.Landing, q + landing.HashedFolder})
	}
	if r.cfg.LeaseStore != r.cfg.Landing || r.cfg.Prefix != "" {
		sweeps = append(sweeps, sweep{r.cfg.LeaseStore, landing.ReservedPrefix + "lease/"})
	}
	removed := 0
	for _, sw := range sweeps {
		st, ok := sw.store.(*storage.LocalStore)
		if !ok {
			continue
		}
		gone, err := st.StaleTemp(ctx, sw.prefix, before, false)
		removed += len(gone)
		if err != nil {
			r.log.Warn("temporary files of killed writes not removed", "folder", st.URI(), "prefix", sw.prefix, "err", err)
		}
	}
	if removed > 0 {
		r.log.Info("removed temporary and lock files that killed writes left in the landing folder", "files", removed)
	}
}

// list lists the files to load, in key order, up to MaxFiles (Remaining
// is set when more wait). A folder of a local landing folder that cannot
// be read (storage.UnlistedError) fails alone: the others are listed, and
// each gap is logged and returned as a failed result (unlisted) naming it
// and the fix.
func (r *runner) list(ctx context.Context) (files []storage.ObjectInfo, unlisted []FileResult, err error) {
	r.removeStaleTemp(ctx)
	errEnough := errors.New("enough")
	err = r.bucket.List(ctx, r.cfg.Prefix, func(o storage.ObjectInfo) error {
		if r.cfg.Accept != nil && !r.cfg.Accept(o.Key) {
			return nil
		}
		if r.cfg.MaxFiles > 0 && len(files) == r.cfg.MaxFiles {
			r.rep.Remaining = true
			return errEnough
		}
		files = append(files, o)
		return nil
	})
	var gaps *storage.UnlistedError
	if errors.As(err, &gaps) {
		for _, g := range gaps.Gaps {
			if r.bucket.Skipped(g.Key) {
				continue // a hidden folder, the quarantine: nothing there is loaded anyway
			}
			res := unlistedResult(r.cfg.Landing, g)
			r.log.Warn("a landing folder could not be listed: its files are not loaded until it can be", "key", g.Key, "err", g.Err, "fix", unlistedFix(r.cfg.Landing, g))
			unlisted = append(unlisted, res)
		}
		err = nil
	}
	if err != nil && !errors.Is(err, errEnough) {
		return nil, nil, r.landingErr(fmt.Errorf("list landing %s: %w", r.cfg.Landing.URI(), err))
	}
	return files, unlisted, nil
}

// unlistedResult is the failed result of a gap of a local landing folder's
// listing: the folder (its key ends in "/") or the file, why, and the fix.
func unlistedResult(st storage.Store, g storage.Unlisted) FileResult {
	what := "folder"
	if !strings.HasSuffix(g.Key, "/") {
		what = "file"
	}
	return FileResult{Key: g.Key, Status: Failed,
		Reason: fmt.Sprintf("this %s could not be listed (%v): %s; its files stay in the landing folder and a later run lists it again",
			what, g.Err, unlistedFix(st, g))}
}

// unlistedFix says how to let timelake list a gap of a listing.
func unlistedFix(st storage.Store, g storage.Unlisted) string {
	path := g.Key
	if ls, ok := st.(interface{ Path(string) string }); ok {
		path = ls.Path(strings.TrimSuffix(g.Key, "/"))
	}
	if errors.Is(g.Err, fs.ErrPermission) {
		return "let the user that runs timelake read " + path + " (a folder also needs execute permission: chmod, chown)"
	}
	return "check " + path + " and its disk"
}

// load loads files in the order given: one by one until the table exists
// (the first file that decodes creates it), then through the pipeline.
func (r *runner) load(ctx context.Context, files []storage.ObjectInfo) error {
	files, err := r.settle(ctx, files)
	if err != nil {
		return err
	}
	i := 0
	// Until the table exists, files go one by one: the first one that
	// decodes creates it. A file that cannot create the table is not
	// quarantined yet: the settings (--time-column, --series-key) may be
	// what is wrong. Once a table exists such files are tried again
	// against it; if none can create it, the run fails and moves nothing.
	var deferred []storage.ObjectInfo
	var firstCause error
	for ; i < len(files) && (r.tbl == nil || r.cfg.DryRun); i++ {
		it := r.prepare(ctx, files[i], func(int64) error { return nil }) // one at a time
		if it.deferred != nil {
			deferred = append(deferred, files[i])
			if firstCause == nil {
				firstCause = it.deferred
			}
			continue
		}
		finish, err := r.commit(ctx, []*item{it})
		if ferr := finish(); err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
	}
	if r.tbl == nil && firstCause != nil {
		return fmt.Errorf("%w: no file of this run could create table %s; first problem: %w (check --time-column and --series-key; the files stay in the landing bucket)",
			ErrCannotCreate, r.cfg.Table, firstCause)
	}
	return r.pipeline(ctx, append(deferred, files[i:]...))
}

// ErrCannotCreate is returned when the table does not exist and no landing
// file of the run could create it.
var ErrCannotCreate = errors.New("cannot create the table")

// ErrLeaseLost stops a run whose lease renewal failed (another run took the
// lease over, or the landing store refused the write): the files committed
// so far stay committed, the others stay in the landing bucket.
var ErrLeaseLost = errors.New("lease lost, run stopped")

// takeLease breaks the blocking leases if asked, then takes this run's
// lease. The returned release removes it (with its own deadline: it runs
// when ctx may be done).
func (r *runner) takeLease(ctx context.Context) (*heldLease, error) {
	opts := landing.LeaseOptions{Table: r.cfg.Table.String(), Prefix: r.cfg.LeasePrefix, Holder: r.cfg.Holder,
		TTL: r.cfg.LeaseTTL, Now: r.cfg.Now, Logger: r.log}
	if r.cfg.BreakLease {
		broken, err := landing.BreakLeases(ctx, r.cfg.LeaseStore, opts)
		r.rep.BrokenLeases = append(r.rep.BrokenLeases, broken...)
		if err != nil {
			return nil, r.landingErr(err)
		}
	}
	lease, err := landing.AcquireLease(ctx, r.cfg.LeaseStore, opts)
	if errors.Is(err, landing.ErrLeaseHeld) {
		return nil, err
	}
	if err != nil {
		return nil, r.landingErr(err)
	}
	return &heldLease{lease: lease, log: r.log}, nil
}

// heldLease is the run's lease.
type heldLease struct {
	lease *landing.Lease
	log   *slog.Logger
}

// release deletes the lease even when ctx was cancelled. A failure is only
// logged: the run's outcome stands, and the lease expires by itself.
func (h *heldLease) release(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := h.lease.Release(rctx); err != nil {
		h.log.Warn("lease not released (it expires by itself)", "lease", h.lease.Key(), "err", err)
	}
}

// keepLease renews the lease every third of its TTL until the returned stop
// function is called. A renewal that fails for a passing reason (a 5xx
// answer, a lost connection) is tried again while the lease has time left;
// a renewal that cannot succeed (the lease was taken over, a permanent
// error, no time left) cancels the returned context, so the run stops
// instead of working without the lease.
func (r *runner) keepLease(ctx context.Context, lease *landing.Lease) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	stopped := make(chan struct{})
	ttl := r.cfg.LeaseTTL
	retryWait := min(max(ttl/30, 10*time.Millisecond), 5*time.Second)
	wait := func(d time.Duration) bool { return retry.Wait(ctx, d, done) }
	go func() {
		defer close(stopped)
		for wait(max(ttl/3, time.Millisecond)) {
			err := lease.Renew(ctx)
			for err != nil && !errors.Is(err, landing.ErrLeaseTaken) && !storage.IsPermanent(err) &&
				lease.Expires().Sub(r.cfg.Now()) > ttl/6+retryWait {
				r.log.Warn("lease renewal failed, trying again", "lease", lease.Key(), "err", err)
				if !wait(retryWait) {
					return
				}
				err = lease.Renew(ctx)
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				// Not wrapped: a lease taken over is a failure of this
				// run (exit 1), not "another run holds it" (exit 11).
				cancel(fmt.Errorf("%w (is another run working on the table?): %v", ErrLeaseLost, r.landingErr(err)))
				return
			}
		}
	}()
	return ctx, func() {
		close(done)
		<-stopped
		cancel(nil)
	}
}

// checkWarehouse makes sure the warehouse's bucket exists and answers (a
// listing of a prefix that holds nothing costs one request).
func (r *runner) checkWarehouse(ctx context.Context) error {
	if r.cfg.Warehouse == nil {
		return nil
	}
	err := r.cfg.Warehouse.List(ctx, landing.ReservedPrefix+"none/", func(storage.ObjectInfo) error { return nil })
	if err == nil {
		return nil
	}
	if _, local := r.cfg.Warehouse.(*storage.LocalStore); local && errors.Is(err, storage.ErrNotExist) {
		return nil // a warehouse folder is created by the first commit
	}
	if p := storage.Diagnose(err, r.cfg.Explain.Lake, r.cfg.Explain.Names); p != nil {
		return p
	}
	return fmt.Errorf("warehouse %s: %w", r.cfg.Warehouse.URI(), err)
}

// landingErr and lakeErr explain a setup error of the landing bucket or the
// warehouse (storage.Diagnose); other errors are returned as they are.
func (r *runner) landingErr(err error) error {
	return storage.Explain(err, r.cfg.Explain.Landing, r.cfg.Explain.Names)
}

func (r *runner) lakeErr(err error) error {
	return storage.Explain(err, r.cfg.Explain.Lake, r.cfg.Explain.Names)
}

// settle holds back the files of a local folder that may still be being
// written: those modified within the settle time (landing.Settle.ByAge;
// the rest of the rule applies once a file is read, in prepare). It waits
// for those complete within MaxSettleWait (not in a dry run), looks at them
// again and keeps those that did not change meanwhile; the others are
// reported as waiting at the end of the run and stay for a later one.
func (r *runner) settle(ctx context.Context, files []storage.ObjectInfo) ([]storage.ObjectInfo, error) {
	if r.complete.Time <= 0 {
		return files, nil
	}
	now := time.Now()
	waiting := map[string]landing.Wait{}
	soon := map[string]storage.ObjectInfo{} // complete within MaxSettleWait
	var last time.Time
	for _, f := range files {
		if ahead := landing.ClockAhead(f.LastModified, now); ahead > 0 {
			r.noteClockAhead(f.Key, ahead)
		}
		w := r.complete.ByAge(landing.AgeFrom(f.LastModified, f.Changed, now), now)
		switch {
		case !w.Waiting():
		case !r.cfg.DryRun && w.Until.Sub(now) <= MaxSettleWait:
			soon[f.Key] = f
			last = maxTime(last, w.Until)
		default:
			waiting[f.Key] = w
		}
	}
	if len(soon) > 0 {
		t := time.NewTimer(time.Until(last))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		now = time.Now()
		for key, f := range soon {
			info, err := r.cfg.Landing.Stat(ctx, key)
			switch {
			case errors.Is(err, storage.ErrNotExist):
				waiting[key] = landing.Wait{} // gone (renamed, moved): not ours to report
			case err != nil:
				return nil, r.landingErr(err)
			case info.ETag != f.ETag:
				if w := r.complete.ByAge(landing.AgeFrom(info.LastModified, info.Changed, now), now); w.Waiting() {
					waiting[key] = w
				}
			}
		}
	}
	ready := files[:0:0]
	for _, f := range files {
		w, ok := waiting[f.Key]
		switch {
		case !ok:
			ready = append(ready, f)
		case w.Waiting():
			r.waiting = append(r.waiting, FileResult{Key: f.Key, Status: Waiting, Size: f.Size,
				Reason: w.Reason + "; a later run loads it", ReadyAt: w.Until})
		}
	}
	return ready, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// item is one landing file on its way through the pipeline.
type item struct {
	obj      storage.ObjectInfo
	res      FileResult
	start    time.Time
	src      *download      // size and checksum; its temp file is closed after prepare
	prepared *lake.Prepared // data files written, to commit
	done     bool           // res is final (already loaded, quarantined, dry run)
	gone     bool           // deleted by someone else since the listing: not reported
	err      error          // fatal: stop the run, leave the file in place
	deferred error          // could not create the table: retried once it exists
}

// pipeline loads files with Parallel workers that download, decode and
// write data files, while this goroutine commits what is ready, up to
// FilesPerCommit snapshots per metadata write, and deletes the committed
// landing objects. The decoded bytes of files being decoded at once stay
// within MemoryBudget (admission); a worker takes its share only once its
// file is downloaded, so downloads overlap the decoding of other files.
func (r *runner) pipeline(ctx context.Context, files []storage.ObjectInfo) error {
	if len(files) == 0 {
		return nil
	}
	workers, perCommit, budget := r.cfg.Parallel, r.cfg.FilesPerCommit, r.memoryBudget()
	if workers <= 0 {
		workers = DefaultParallel
	}
	if perCommit <= 0 {
		perCommit = DefaultFilesPerCommit
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := semaphore.NewWeighted(budget)

	jobs := make(chan storage.ObjectInfo)
	// Prepared items hold no decoded data (only the data files' metadata),
	// so up to a whole commit's worth may wait while the previous commit
	// runs: commits then carry many snapshots each.
	ready := make(chan *item, perCommit)
	go func() {
		defer close(jobs)
		for _, o := range files {
			select {
			case jobs <- o:
			case <-ctx.Done():
				return
			}
		}
	}()
	// A worker that meets a fatal error (the store refused a request, a
	// data file could not be written) stops the others at once: the next
	// files would most likely meet the same error.
	var stopOnce sync.Once
	var stopErr error
	stop := func(err error) {
		stopOnce.Do(func() { stopErr = err; cancel() })
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range jobs {
				// The semaphore serves waiters in order, so a large file
				// is not starved by smaller ones behind it.
				var held int64
				it := r.prepare(ctx, o, func(share int64) error {
					if err := sem.Acquire(ctx, share); err != nil {
						return err
					}
					held = share
					return nil
				})
				if held > 0 {
					sem.Release(held)
				}
				if it.err != nil && ctx.Err() == nil {
					stop(it.err)
				}
				ready <- it
			}
		}()
	}
	go func() { wg.Wait(); close(ready) }()

	var firstErr error
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
			cancel()
		}
	}
	wait := r.cfg.CommitWait
	if wait <= 0 {
		wait = DefaultCommitWait
	}
	ex := &runExpirer{start: time.Now()}
	var finishing chan error // the previous batch's finish, while it runs
	waitFinish := func() {
		if finishing != nil {
			if err := <-finishing; err != nil {
				fail(err)
			}
			finishing = nil
		}
	}
	for it := range ready {
		// Gather up to perCommit prepared files, waiting at most wait for
		// more: every metadata write rewrites the whole table history, so
		// fewer, fuller commits cost less; the wait ends at once when the
		// last file is ready.
		batch := []*item{it}
		timer := time.NewTimer(wait)
	gather:
		for len(batch) < perCommit && firstErr == nil {
			select {
			case more, ok := <-ready:
				if !ok {
					break gather
				}
				batch = append(batch, more)
			case <-timer.C:
				break gather
			}
		}
		timer.Stop()
		if firstErr != nil {
			r.discard(ctx, batch)
			continue
		}
		finish, err := r.commit(ctx, batch)
		waitFinish()
		if err != nil {
			if ferr := finish(); ferr != nil {
				fail(ferr)
			}
			fail(err)
			continue
		}
		// The deletes of this batch overlap the next commit; results are
		// still recorded batch by batch, in order.
		finishing = make(chan error, 1)
		go func(done chan<- error) { done <- finish() }(finishing)
		// A long run keeps its table small: the snapshots past their
		// retention expire between its commits.
		r.expireBetween(ctx, ex)
	}
	waitFinish()
	if stopErr != nil && (firstErr == nil || errors.Is(firstErr, context.Canceled)) {
		return stopErr
	}
	return firstErr
}

// discard deletes the data files of prepared items that will not be
// committed; their landing files stay for the next run.
func (r *runner) discard(ctx context.Context, items []*item) {
	// Runs on cancellation paths too: clean up within a bounded time.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, it := range items {
		if it.prepared != nil {
			r.tbl.Discard(ctx, it.prepared)
		}
	}
}

// commit commits the prepared items of a batch in one metadata write and
// returns the rest of the batch's work: deleting the committed landing
// objects (or settling duplicates) and recording every item's result in
// order, which may run while the next batch commits. finish returns the
// first error, a fatal item error after the others are recorded. When the
// commit itself fails, commit returns its error and finish only records the
// items that were already final.
func (r *runner) commit(ctx context.Context, items []*item) (finish func() error, err error) {
	var firstErr error
	var ps []*lake.Prepared
	var pending []*item
	for _, it := range items {
		switch {
		case it.err != nil:
			if firstErr == nil {
				firstErr = it.err
			}
		case it.prepared != nil:
			ps = append(ps, it.prepared)
			pending = append(pending, it)
		}
	}
	// Already loaded, quarantined or a dry run: final; and the committed
	// items once finished.
	recordDone := func() {
		for _, it := range items {
			if it.done {
				r.recordItem(it)
			}
		}
	}
	var results []lake.AppendResult
	if len(ps) > 0 {
		t0 := time.Now()
		results, err = r.tbl.Commit(ctx, ps, lake.CommitOptions{})
		if r.cfg.OnCommit != nil {
			keys := make([]string, len(pending))
			for i, it := range pending {
				keys[i] = it.obj.Key
			}
			r.cfg.OnCommit(keys, time.Since(t0), err)
		}
		if err != nil {
			return func() error { recordDone(); return firstErr }, r.lakeErr(err)
		}
		if pending, results, err = r.afterSchemaConflicts(ctx, pending, results); err != nil {
			return func() error { recordDone(); return firstErr }, err
		}
	}
	return func() error {
		// Each delete is one request, independent of the others.
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for i, it := range pending {
			g.Go(func() error {
				if err := r.finish(gctx, it, results[i]); err != nil {
					return err
				}
				it.done = true
				return nil
			})
		}
		err := g.Wait()
		// Report every file that is finished, even when another failed.
		recordDone()
		if err != nil {
			return err
		}
		return firstErr
	}, nil
}

func (r *runner) recordItem(it *item) {
	if it.gone {
		return
	}
	it.res.Seconds = time.Since(it.start).Seconds()
	r.record(it.res)
}

// finish completes a committed item: delete the landing object, or settle a
// batch that another writer committed first.
func (r *runner) finish(ctx context.Context, it *item, ar lake.AppendResult) error {
	if ar.Duplicate {
		res, err := r.settleLoaded(ctx, it.res, it.src, *ar.Existing)
		if err != nil {
			return err
		}
		it.res = res
		return nil
	}
	if r.cfg.AfterCommit != nil {
		if err := r.cfg.AfterCommit(it.obj.Key); err != nil {
			return err
		}
	}
	it.res.Status, it.res.Rows, it.res.SnapshotID, it.res.DataFiles = Loaded, ar.Rows, ar.SnapshotID, ar.DataFiles
	it.res.SchemaChanges = ar.SchemaChanges
	// Delete only what was loaded: an object replaced since it was read
	// (a file still being written, a key re-sent) stays, and the next run
	// quarantines it as different content under a loaded key.
	err := r.cfg.Landing.DeleteIfMatch(ctx, it.obj.Key, it.src.info.ETag)
	if errors.Is(err, storage.ErrPreconditionFailed) {
		it.res.Reason = "the file changed after it was read; the new content stays in the landing bucket"
		r.log.Warn("loaded file changed after it was read: not deleted", "key", it.obj.Key, "snapshot", ar.SnapshotID)
		return nil
	}
	if err != nil {
		err = fmt.Errorf("committed %s in snapshot %d but could not delete it (the next run will): %w", it.obj.Key, ar.SnapshotID, err)
		if r.stopsRun(ctx, err) {
			return r.landingErr(err)
		}
		r.log.Info("could not delete a loaded file; the next run finds it loaded and deletes it", "key", it.obj.Key, "err", err)
		it.res.Reason = fmt.Sprintf("not deleted (%v): the next run finds it loaded and deletes it", errors.Unwrap(err))
	}
	return nil
}

func (r *runner) record(res FileResult) {
	r.rep.Files = append(r.rep.Files, res)
	r.noteOutcome(res)
	switch res.Status {
	case Loaded:
		r.rep.Loaded++
		r.rep.Rows += res.Rows
		r.rep.RejectedRows += res.RejectedRows
	case AlreadyLoaded:
		r.rep.AlreadyLoaded++
	case Quarantined:
		r.rep.Quarantined++
	case Waiting:
		r.rep.Waiting++
	case Failed:
		r.rep.Failed++
	}
	if r.cfg.OnFile != nil {
		r.cfg.OnFile(res)
	}
}

// download copies an object to a temp file, hashing it on the way.
type download struct {
	f      *os.File
	info   storage.ObjectInfo
	sha256 string
	// content is the hex SHA-256 of the decompressed bytes of a gzip file,
	// the sha256 of any other; "" when the gzip stream does not read (the
	// decoder says why).
	content string
	// decompressed is the size of the decompressed bytes of a gzip file
	// (as far as they read), the size of any other.
	decompressed int64
}

// compressed reports a gzip file, whose content hash differs from its
// hash.
func (d *download) compressed() bool { return d.content != d.sha256 }

func (d *download) close() {
	if d != nil && d.f != nil {
		d.f.Close()
		os.Remove(d.f.Name())
	}
}

// downloadPrefix names the temporary copies of landing files this process
// downloads: timelake-ingest-<pid>-<process start>-, so that a later run
// can tell the copies of a run that died (kill -9, a lost host) from those
// of one still running (removeStaleDownloads).
func downloadPrefix(h landing.Holder) string {
	return fmt.Sprintf("timelake-ingest-%d-%d-", h.PID, h.Start)
}

// staleDownloadAge is the age after which a download copy whose process
// cannot be identified (an older name without it) is removed.
const staleDownloadAge = time.Hour

// removeStaleDownloads removes the download copies in dir ("" is
// os.TempDir()) of processes that ended (killed runs leave them; they hold
// landing data), and unidentifiable ones older than staleDownloadAge. It
// returns how many it removed; it is best effort (a copy a running run
// still reads stays readable through its open file on Unix).
func removeStaleDownloads(dir string, now time.Time) int {
	if dir == "" {
		dir = os.TempDir()
	}
	names, err := filepath.Glob(filepath.Join(dir, "timelake-ingest-*"))
	if err != nil {
		return 0
	}
	removed := 0
	for _, path := range names {
		var pid int
		var start uint64
		stale := false
		if _, err := fmt.Sscanf(filepath.Base(path), "timelake-ingest-%d-%d-", &pid, &start); err == nil && pid > 0 {
			stale = pid != os.Getpid() && landing.ProcessGone(pid, start)
		} else if fi, err := os.Stat(path); err == nil {
			stale = now.Sub(fi.ModTime()) > staleDownloadAge
		}
		if stale && os.Remove(path) == nil {
			removed++
		}
	}
	return removed
}

// download copies a landing object to a temp file in the download folder
// (WorkDir). Errors: the store's (ErrNotExist: gone since the listing),
// errChanging, a *workDirError when the download folder cannot take it.
func (r *runner) download(ctx context.Context, o storage.ObjectInfo) (*download, error) {
	key := o.Key
	if err := r.roomFor(o); err != nil {
		return nil, err
	}
	rc, info, err := r.cfg.Landing.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	f, err := os.CreateTemp(r.cfg.WorkDir, downloadPrefix(r.cfg.Holder)+"*")
	if err != nil {
		return nil, &workDirError{dir: r.workDir(), err: err}
	}
	d := &download{f: f, info: info}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), rc)
	if err != nil {
		d.close()
		if errors.Is(err, syscall.ENOSPC) {
			return nil, r.noRoom(key, info.Size, err)
		}
		return nil, fmt.Errorf("download %s: %w", key, err)
	}
	if _, local := r.cfg.Landing.(*storage.LocalStore); n != info.Size && (local || info.Size > 0) {
		// Bytes were added (or cut) while it was read: a file still being
		// written in place.
		d.close()
		return nil, fmt.Errorf("%s: read %d bytes, the store said %d: %w", key, n, info.Size, errChanging)
	}
	d.info.Size = n
	d.sha256 = hex.EncodeToString(h.Sum(nil))
	d.content, d.decompressed = d.sha256, n
	gz, size, err := contentHash(f)
	switch {
	case err != nil:
		d.content, d.decompressed = "", size
	case gz != "":
		d.content, d.decompressed = gz, size
	}
	return d, nil
}

// noteClockAhead notes a file modified ahead of this host's clock, for
// the run's report (reportClockAhead).
func (r *runner) noteClockAhead(key string, ahead time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ahead == nil {
		r.ahead = map[string]time.Duration{}
	}
	r.ahead[key] = max(r.ahead[key], ahead)
}

// reportClockAhead puts the files noted ahead in the report, with one
// warning for the run.
func (r *runner) reportClockAhead() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ahead) == 0 {
		return
	}
	ca := &ClockAhead{Files: len(r.ahead)}
	for _, k := range slices.Sorted(maps.Keys(r.ahead)) {
		if s := r.ahead[k].Seconds(); s > ca.Seconds {
			ca.Key, ca.Seconds = k, s
		}
	}
	r.rep.ClockAhead = ca
	r.ahead = nil
	r.log.Warn("files modified in the future: the clock of the machine that wrote them is ahead of this host's; set it right (NTP)",
		"files", ca.Files, "key", ca.Key, "ahead", time.Duration(ca.Seconds*float64(time.Second)).Round(time.Second).String())
}

// errChanging marks a landing file that changed while it was read.
var errChanging = errors.New("the file changed while it was read")

// contentHash returns the hex SHA-256 of the decompressed bytes of f and
// their size when it is gzip-compressed (by its magic bytes), "" when it is
// not, and an error when the gzip stream does not read to its end (size is
// then what did).
func contentHash(f io.ReaderAt) (string, int64, error) {
	var magic [2]byte
	if n, _ := f.ReadAt(magic[:], 0); n < 2 || magic != [2]byte{0x1f, 0x8b} {
		return "", 0, nil
	}
	zr, err := decode.NewGzipReader(io.NewSectionReader(f, 0, 1<<62))
	if err != nil {
		return "", 0, err
	}
	defer zr.Close()
	h := sha256.New()
	n, err := io.Copy(h, zr)
	if err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// admission is the share of the memory budget a file of the given decoded
// size (decode.DecodedSize: a compressed file by its decompressed bytes)
// holds while it is decoded and written: its size, or the whole budget for
// a file larger than it, which is decoded in pieces of the budget.
func admission(decoded, budget int64) int64 { return min(max(decoded, 1), budget) }

// prepare takes one landing object as far as it goes before the commit:
// download, the already-loaded check, decode, data files written. Problems
// with the file itself end in quarantine (done); anything else is a fatal
// item error that leaves the object in place. admit is called once, after
// the download and before the decode, with the file's share of the memory
// budget (admission), and blocks until the share is free (an error: ctx is
// done). The file is decoded and written in pieces of at most the budget
// (decode.DecodeEach, lake.BatchWriter), which commit as one snapshot.
func (r *runner) prepare(ctx context.Context, o storage.ObjectInfo, admit func(share int64) error) *item {
	it := &item{obj: o, res: FileResult{Key: o.Key, Size: o.Size, landed: o.LastModified}, start: time.Now()}
	if r.cfg.DryRun {
		it.res.Status, it.done = WouldLoad, true
		if r.tbl != nil {
			b, ok, err := r.tbl.FindLoaded(ctx, o.Key)
			if err != nil {
				it.err = err
				return it
			}
			if ok {
				it.res.Status, it.res.SnapshotID, it.res.Rows = AlreadyLoaded, b.SnapshotID, b.Rows
				return it
			}
			// The profile the file would be read with, or why it would
			// be refused (two match its key).
			if _, prof, err := r.fileSettings(o.Key); err != nil {
				it.res.Reason = strings.TrimPrefix(err.Error(), o.Key+": ")
			} else if prof != nil {
				it.res.Profile = prof.Name
			}
		}
		return it
	}
	d, err := r.download(ctx, o)
	if err != nil {
		r.notFetched(ctx, it, err)
		return it
	}
	// A requeued file says when it first landed; one its writer dated
	// ahead landed when this host saw it change.
	now := time.Now()
	o.LastModified = landing.LandedAt(storage.ObjectInfo{LastModified: o.LastModified, Metadata: d.info.Metadata})
	if ahead := landing.ClockAhead(o.LastModified, now); ahead > 0 {
		r.noteClockAhead(o.Key, ahead)
		o.LastModified = landing.LandedTime(o.LastModified, d.info.Changed, now)
	}
	it.res.landed = o.LastModified
	defer d.close()
	it.src = d
	it.res.Size, it.res.sha256 = d.info.Size, d.sha256
	if r.complete != (landing.Settle{}) {
		w, err := r.complete.Judge(o.Key, d.f, d.info.Size, landing.AgeFrom(d.info.LastModified, d.info.Changed, now), now)
		if err != nil {
			it.err = fmt.Errorf("read the download of %s: %w", o.Key, err)
			return it
		}
		if w.Waiting() {
			it.res.Status, it.res.Reason, it.res.ReadyAt, it.done = Waiting, w.Reason+"; a later run loads it", w.Until, true
			return it
		}
	}

	if r.tbl != nil {
		b, ok, err := r.tbl.FindLoaded(ctx, o.Key)
		if err != nil {
			it.err = err
			return it
		}
		if ok {
			it.res, it.err = r.settleLoaded(ctx, it.res, d, b)
			it.done = true
			return it
		}
		if done := r.sameContent(ctx, it, d); done {
			return it
		}
	}
	reject := func(cause error) *item {
		// Before the table exists a refusal may come from a setting
		// (--time-column, --series-key), so the file waits; one that no
		// setting can make readable is quarantined at once.
		if r.tbl == nil && ctx.Err() == nil && !errors.Is(cause, errNameNotUTF8) && !decode.IsUnreadable(cause) && !errors.Is(cause, lake.ErrTooWide) {
			it.deferred = cause
			return it
		}
		it.res, it.err = r.reject(ctx, it.res, d, cause)
		it.done = true
		return it
	}
	if !utf8.ValidString(o.Key) {
		// A batch id is a string of the table's metadata (JSON, UTF-8):
		// this key could not be recognised as loaded again.
		return reject(fmt.Errorf("%q: %w", o.Key, errNameNotUTF8))
	}
	share := admission(decode.DecodedSize(d.source(), d.decompressed), r.memoryBudget())
	if err := admit(share); err != nil {
		it.err = err
		return it
	}
	summary := map[string]string{
		lake.SummarySourceSize:   strconv.FormatInt(d.info.Size, 10),
		lake.SummarySourceSHA256: d.sha256,
		lake.SummarySourceETag:   d.info.ETag,
	}
	if by := r.loadedByOf(o.Key); by != "" {
		summary[lake.SummaryLoadedBy] = by
	}
	if !o.LastModified.IsZero() {
		summary[lake.SummarySourceModified] = o.LastModified.UTC().Format(time.RFC3339Nano)
	}
	if d.content != "" && d.compressed() {
		summary[lake.SummaryContentSHA256] = d.content
	}
	wr, err := r.writePieces(ctx, o.Key, d, summary)
	var fatal *fatalError
	var unset *setAsideError
	switch {
	case errors.As(err, &fatal):
		it.err = fatal.err
		return it
	case errors.As(err, &unset):
		if r.stopsRun(ctx, unset.err) {
			it.err = r.landingErr(unset.err)
			return it
		}
		r.log.Info("could not set the refused rows of a file aside; it stays in the landing bucket", "key", o.Key, "err", unset.err)
		it.res.Status, it.done = Failed, true
		it.res.Reason = fmt.Sprintf("%d rows are refused (--on-error skip-rows) and could not be set aside (%v); the file stays in the landing bucket and a later run tries again", unset.rows, unset.err)
		return it
	case err != nil:
		return reject(err)
	}
	it.prepared, it.res.DuplicateRows, it.res.Profile = wr.prepared, wr.dups, wr.profile
	it.res.ReplacedRows = wr.prepared.Replaced
	it.res.RejectedRows, it.res.RejectsTo = wr.rejected, wr.rejectsTo
	return it
}

// fatalError marks an error of writePieces that is not the file's: the
// file stays in the landing bucket.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

// setAsideError says the rows refused under --on-error skip-rows could not
// be set aside (rows of them): the file stays in the landing bucket.
type setAsideError struct {
	rows int
	err  error
}

func (e *setAsideError) Error() string { return e.err.Error() }

// written is what writePieces made of a file: its batch to commit, the
// rows of a piece whose (series key, time) an earlier row of the piece
// has (dups), its source profile, and the rows set aside under
// --on-error skip-rows with their rejects file.
type written struct {
	prepared  *lake.Prepared
	dups      int64
	profile   string
	rejected  int64
	rejectsTo string
}

// writePieces decodes d in pieces of at most the memory budget (decoded
// bytes, decode.DecodedSize) and writes each as data files of one batch
// (the file's snapshot, to commit), with the source columns filled
// (sourceColumns). When there is no table yet, the whole file is decoded
// first (nothing kept but its schema), and the table is created from it
// only if every row decodes. Rows refused under --on-error skip-rows come
// with the last piece: they are set aside (setAside) before the batch is
// returned, since once its rows are committed the landing file goes, and
// the rows refused with it. The file's own problems (it does not decode,
// a required column is null) come back as they are, to quarantine it; a
// rejects file that cannot be written as a *setAsideError; others as a
// *fatalError.
func (r *runner) writePieces(ctx context.Context, key string, d *download, summary map[string]string) (*written, error) {
	if r.tbl == nil {
		var first decode.Decoded
		_, err := r.decodeEach(ctx, d, func(dec *decode.Decoded) error {
			defer dec.Release()
			if dec.Piece == 0 {
				// Too wide a file is refused at its first piece,
				// before the rest is decoded.
				if err := lake.CheckCreateWidth(dec.Schema, r.cfg.MaxColumns); err != nil {
					return widthError(key, err)
				}
			}
			first.Schema, first.TimeColumn = dec.Schema, dec.TimeColumn
			return nil
		})
		if err != nil {
			return nil, err
		}
		if err := r.createTable(ctx, key, &first); err != nil {
			var fe *decode.FileError
			if errors.As(err, &fe) {
				return nil, err
			}
			return nil, &fatalError{r.lakeErr(err)}
		}
	}
	var w *lake.BatchWriter
	out := &written{}
	var rows int64
	drop := func() {
		if w != nil {
			w.Discard(context.WithoutCancel(ctx))
			w = nil
		}
	}
	loadTime := r.cfg.Now()
	prof, err := r.decodeEach(ctx, d, func(dec *decode.Decoded) (err error) {
		defer dec.Release()
		// A panic while the piece is converted or written (arrow-go's
		// writer, the sort) refuses this file alone; the commit protocol
		// does not run here.
		defer func() {
			if v := recover(); v != nil {
				err = decode.Recovered(key, "the writer", "writing its data files", "", v)
			}
		}()
		if r.cfg.FaultHook != nil {
			r.cfg.FaultHook("write", key)
		}
		if dec.Piece == 0 {
			drop() // the decode started over
			out.dups, rows = 0, 0
			// Columns the file adds (--evolve add-columns) must
			// leave a table its manifests can carry.
			if err := r.tbl.CheckWidth(dec.Schema, r.cfg.MaxColumns); err != nil {
				return widthError(key, err)
			}
		}
		if w == nil {
			var err error
			if w, err = r.tbl.NewBatchWriter(key, summary, 0); err != nil {
				return &fatalError{r.lakeErr(err)}
			}
		}
		n, err := dec.DuplicateRows(r.tbl.Contract().SeriesKey)
		if err != nil {
			return &fatalError{err}
		}
		out.dups += n
		recs, release, err := r.sourceColumns(key, loadTime, dec)
		if err != nil {
			return err
		}
		defer release()
		if err := w.Write(ctx, recs); err != nil {
			if errors.Is(err, lake.ErrRequiredNull) {
				return err
			}
			if decode.IsPanic(err) { // on a writer's goroutine
				return decode.PanicRefusal(key, "the writer crashed while writing its data files", err)
			}
			return &fatalError{r.lakeErr(err)}
		}
		rows += dec.Rows
		if len(dec.Rejected) > 0 {
			dst, err := r.setAside(ctx, d, dec, rows)
			if err != nil {
				return &setAsideError{rows: len(dec.Rejected), err: err}
			}
			out.rejected, out.rejectsTo = int64(len(dec.Rejected)), dst
			summary[lake.SummaryRejectedRows] = strconv.Itoa(len(dec.Rejected))
			summary[lake.SummaryRejectsFile] = dst
		}
		return nil
	})
	if err != nil {
		drop()
		return nil, err
	}
	out.prepared, out.profile = w.Prepared(), prof
	return out, nil
}

// decodeEach decodes d (decode.DecodeEach) with the settings that apply
// to it (fileSettings), against the table, or for a new one, in pieces of
// at most the memory budget; it returns the name of its source profile
// ("" for none).
func (r *runner) decodeEach(ctx context.Context, d *download, fn func(*decode.Decoded) error) (string, error) {
	fs, prof, err := r.fileSettings(d.info.Key)
	if err != nil {
		return "", err
	}
	opts := decode.DecodeOptions{TimeUnit: fs.TimeUnit, AssumeLocation: fs.AssumeLocation,
		CSV: fs.CSV, Columns: fs.Columns, OnError: fs.OnError, MaxBadRows: fs.MaxBadRows, PieceBytes: r.memoryBudget(), Format: fs.Format,
		MaxRecordBytes: maxRecordBytes(r.memoryBudget()),
		CheckColumns:   func(sc *arrow.Schema) error { return r.checkColumnCount(d.info.Key, sc) }}
	if r.tbl != nil {
		opts.Target = r.tbl.ArrowSchema()
		opts.TimeColumn = r.tbl.Contract().TimeColumn
		opts.Evolve = fs.Evolve
		if fs.TimeColumn != "" && fs.TimeColumn != opts.TimeColumn {
			// The profile's files name the time column their own way.
			opts.Renames = map[string]string{fs.TimeColumn: opts.TimeColumn}
		}
	} else {
		opts.TimeColumn = fs.TimeColumn
	}
	name := ""
	if prof != nil {
		name = prof.Name
	}
	if hook := r.cfg.FaultHook; hook != nil {
		// The hook runs on the decoder's stack, as a reader's code does.
		write := fn
		fn = func(dec *decode.Decoded) error {
			hook("decode", d.info.Key)
			return write(dec)
		}
	}
	return name, decode.DecodeEach(ctx, d.source(), opts, fn)
}

// checkColumnCount refuses the file key, whose columns as read are sc,
// when they would give the table more columns than it may have
// (lake.MaxColumns): before a value is decoded, whether the file creates the
// table, adds its columns to it (--evolve add-columns) or is refused for
// them (without). The schema's size is checked once the file is decoded
// (writePieces), when its types are known.
func (r *runner) checkColumnCount(key string, sc *arrow.Schema) error {
	if r.tbl == nil {
		return widthError(key, lake.CheckCreateColumns(sc.NumFields(), r.cfg.MaxColumns))
	}
	have := r.tbl.ArrowSchema()
	added := 0
	for i := range sc.NumFields() {
		if !have.HasField(sc.Field(i).Name) {
			added++
		}
	}
	return widthError(key, r.tbl.CheckAddedColumns(added, r.cfg.MaxColumns))
}

// source is the downloaded file, to decode.
func (d *download) source() decode.Source {
	return decode.Source{Key: d.info.Key, R: d.f, Size: d.info.Size}
}

// maxRecordBytes is the longest row of text a file may hold under a
// memory budget: a quarter of it (at least 1 MiB), so that a row is held
// whole and copied on its way within the budget.
func maxRecordBytes(budget int64) int64 { return max(budget/4, 1<<20) }

// memoryBudget is Config.MemoryBudget or its default.
func (r *runner) memoryBudget() int64 {
	if r.cfg.MemoryBudget > 0 {
		return r.cfg.MemoryBudget
	}
	return DefaultMemoryBudget
}

// fileSettings are the settings a landing key is read with: the run's
// (Config), each table-level one from the table's property when the run
// does not set it, and the source profile the key matches over them
// (profile.Profile.Apply). Errors: the table's profiles do not read, or
// two match the key (profile.ErrAmbiguous); the file is refused with it,
// as a setting's refusal.
func (r *runner) fileSettings(key string) (profile.FileSettings, *profile.Profile, error) {
	fs := profile.FileSettings{CSV: r.cfg.CSV, Columns: r.cfg.Columns, TimeUnit: r.cfg.TimeUnit,
		AssumeLocation: r.cfg.AssumeLocation, Evolve: r.cfg.Evolve, OnError: r.cfg.OnError, MaxBadRows: r.cfg.MaxBadRows}
	if r.tbl == nil {
		fs.TimeColumn = r.cfg.TimeColumn
		return fs, nil, nil
	}
	props := r.tbl.Properties()
	fs = profile.TableDefaults(fs, props, func(prop string, err error) {
		// Written by another tool (tables alter checks them): ignored,
		// as without the property.
		r.log.Warn("table property ignored", "property", prop, "err", err)
	})
	set, err := profile.FromProperties(props)
	if err != nil {
		return fs, nil, &profileError{err}
	}
	p, err := set.For(key)
	if err != nil {
		return fs, nil, &profileError{fmt.Errorf("%s: %w", key, err)}
	}
	return p.Apply(fs), p, nil
}

// profileError refuses a file because of the table's source profiles
// (their properties do not read, or two match its key): a setting's
// refusal, requeued once they are fixed.
type profileError struct{ err error }

func (e *profileError) Error() string { return e.err.Error() }
func (e *profileError) Unwrap() error { return e.err }

// sourceColumns returns dec's records with the source columns filled
// (docs/schema.md, "Source columns"): the landing key, and the time the
// file was loaded, in the columns the run or the table names; a column
// the table lacks is added to the schema with the file's commit (as
// --evolve adds one). A file that holds values in such a column of its
// own is refused: they would be overwritten. loadTime is the same for
// every piece of a file. release frees what it made.
func (r *runner) sourceColumns(key string, loadTime time.Time, dec *decode.Decoded) ([]arrow.RecordBatch, func(), error) {
	src, loaded := r.sourceColumnNames()
	if src == "" && loaded == "" {
		return dec.Records, func() {}, nil
	}
	var cols []lake.SourceValue
	if src != "" {
		cols = append(cols, lake.SourceValue{Column: src, Text: key})
	}
	if loaded != "" {
		cols = append(cols, lake.SourceValue{Column: loaded, Time: loadTime})
	}
	recs, err := lake.WithSourceColumns(dec.Schema, dec.Records, cols)
	var sce *lake.SourceColumnError
	if errors.As(err, &sce) {
		return nil, nil, &decode.FileError{Key: key, Column: sce.Column, Reason: sce.Reason}
	}
	if err != nil {
		return nil, nil, err
	}
	return recs, func() {
		for _, rec := range recs {
			rec.Release()
		}
	}, nil
}

// sourceColumnNames returns the columns of the landing key and of the
// load time ("" for none): the run's settings, else the table's
// properties.
func (r *runner) sourceColumnNames() (source, loadTime string) {
	props := r.tbl.Properties()
	return cmp.Or(r.cfg.SourceColumn, props[lake.PropSourceColumn]), cmp.Or(r.cfg.LoadTimeColumn, props[lake.PropLoadTimeColumn])
}

// setAside writes the rows of d that were refused (--on-error
// skip-rows; dec: the file's last piece, which carries them; loaded: the
// rows of all its pieces) as a rejects file with its report next to the
// quarantine (landing.Bucket.SetAside) and returns its key there.
func (r *runner) setAside(ctx context.Context, d *download, dec *decode.Decoded, loaded int64) (string, error) {
	f, err := os.CreateTemp(r.cfg.WorkDir, downloadPrefix(r.cfg.Holder)+"rejects-*")
	if err != nil {
		return "", &workDirError{dir: r.workDir(), err: err}
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	ext, err := dec.WriteRejects(decode.Source{Key: d.info.Key, R: d.f, Size: d.info.Size}, f)
	if err != nil {
		return "", fmt.Errorf("write the refused rows of %s: %w", d.info.Key, err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return "", err
	}
	first := dec.Rejected[0]
	rep := landing.Report{Table: r.cfg.Table.String(), Kind: landing.KindRows, SourceKey: d.info.Key, SourceSHA256: d.sha256,
		Reason: fmt.Sprintf("%d of %d rows of %s refused (--on-error skip-rows), the first at row %d: %s; the other %d rows are loaded",
			len(dec.Rejected), loaded+int64(len(dec.Rejected)), d.info.Key, first.Row, first.Reason, loaded),
		Row: first.Row, Column: first.Column, Value: first.Value, Rows: dec.Rejected, At: r.cfg.Now().UTC(),
		Hint: "fix the rows (or the setting that refused them) and send them again as a new file, or put this file back with timelake landing requeue KEY once a setting is fixed"}
	return r.bucket.SetAside(ctx, landing.RejectsKey(d.info.Key, ext), io.NewSectionReader(f, 0, size), size, rep)
}

// createTable creates the table from the first decoded file, or loads it if
// another writer created it first.
func (r *runner) createTable(ctx context.Context, key string, dec *decode.Decoded) error {
	for _, k := range r.cfg.SeriesKey {
		if len(dec.Schema.FieldIndices(k)) == 0 {
			return &decode.FileError{Key: key, Column: k, Reason: "series key column is not in the file (check --series-key)"}
		}
	}
	spec := lake.CreateSpec{TimeColumn: dec.TimeColumn, SeriesKey: r.cfg.SeriesKey, Partition: r.cfg.Partition, Properties: map[string]string{}}
	// The run's table-level settings become the table's, for every writer.
	for k, v := range map[string]string{lake.PropEvolve: string(r.cfg.Evolve), lake.PropOnError: string(r.cfg.OnError),
		lake.PropSourceColumn: r.cfg.SourceColumn, lake.PropLoadTimeColumn: r.cfg.LoadTimeColumn} {
		if v != "" {
			spec.Properties[k] = v
		}
	}
	if r.cfg.MaxBadRows.IsSet() {
		spec.Properties[lake.PropMaxBadRows] = r.cfg.MaxBadRows.String()
	}
	tbl, err := r.cfg.Lake.CreateTable(ctx, r.cfg.Table, dec.Schema, spec)
	if errors.Is(err, lake.ErrTableExists) {
		tbl, err = r.cfg.Lake.LoadTable(ctx, r.cfg.Table)
		if err != nil {
			return err
		}
		r.tbl = tbl
		return nil
	}
	if err != nil {
		return err
	}
	r.tbl = tbl
	created := CreatedFrom(r.cfg.Table, tbl.Metadata(), key)
	r.rep.Created = created
	if r.cfg.OnCreate != nil {
		r.cfg.OnCreate(created)
	}
	return nil
}

// settleLoaded handles a key whose batch id is already committed: the same
// content is a retry (delete it); different content is quarantined, since
// corrections must come as new files.
func (r *runner) settleLoaded(ctx context.Context, res FileResult, d *download, b lake.BatchInfo) (FileResult, error) {
	if reason := differs(b.Summary, d); reason != "" {
		if was, ok := grewSince(b.Summary, d); ok {
			return r.reject(ctx, res, d, &otherContentError{fmt.Sprintf("%s was loaded in snapshot %d while it was still being written: it has grown since (%d bytes then, the same bytes and %d more now), and the rows written after the load are not in the table; load them as a new file with a new key, and give writers that pause longer a longer --settle-time or --open-end-settle-time (docs/ingest.md)",
				d.info.Key, b.SnapshotID, was, d.info.Size-was)})
		}
		return r.reject(ctx, res, d, &otherContentError{fmt.Sprintf("%s was already loaded in snapshot %d with different content (%s); send corrections as a new file with a new key",
			d.info.Key, b.SnapshotID, reason)})
	}
	res.Status, res.SnapshotID, res.Rows = AlreadyLoaded, b.SnapshotID, 0
	err := r.cfg.Landing.DeleteIfMatch(ctx, d.info.Key, d.info.ETag)
	if err != nil && !errors.Is(err, storage.ErrPreconditionFailed) { // changed since: the next run looks again
		err = fmt.Errorf("delete already loaded %s: %w", d.info.Key, err)
		if r.stopsRun(ctx, err) {
			return res, r.landingErr(err)
		}
		r.log.Info("could not delete a file already loaded; the next run tries again", "key", d.info.Key, "err", err)
		res.Reason = fmt.Sprintf("loaded in snapshot %d; not deleted (%v): the next run tries again", b.SnapshotID, err)
	}
	return res, nil
}

// grewSince reports whether the downloaded file is the file a batch loaded
// with bytes appended: its first timelake.source-size bytes have the
// loaded file's SHA-256. was is that size.
func grewSince(summary map[string]string, d *download) (was int64, ok bool) {
	was, err := strconv.ParseInt(summary[lake.SummarySourceSize], 10, 64)
	sum := summary[lake.SummarySourceSHA256]
	if err != nil || sum == "" || was <= 0 || was >= d.info.Size {
		return 0, false
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(d.f, 0, was)); err != nil {
		return 0, false // the load's own read of the file says what is wrong
	}
	return was, hex.EncodeToString(h.Sum(nil)) == sum
}

// differs compares the source identity recorded in a snapshot summary with
// a downloaded file. Snapshots written without it (other writers) count as
// the same file, as the public poller's "skip loaded keys" rule does.
func differs(summary map[string]string, d *download) string {
	// The same content, compressed or not, is the same file.
	if was := cmp.Or(summary[lake.SummaryContentSHA256], summary[lake.SummarySourceSHA256]); was != "" && was == d.content {
		return ""
	}
	if s := summary[lake.SummarySourceSize]; s != "" && s != strconv.FormatInt(d.info.Size, 10) {
		return "size " + s + " then, " + strconv.FormatInt(d.info.Size, 10) + " now"
	}
	if h := summary[lake.SummarySourceSHA256]; h != "" && h != d.sha256 {
		return "sha256 differs"
	}
	return ""
}

// reject quarantines a file with a report built from cause.
func (r *runner) reject(ctx context.Context, res FileResult, d *download, cause error) (FileResult, error) {
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if decode.IsPanic(cause) {
		var pe *decode.PanicError
		errors.As(cause, &pe)
		r.log.Debug("a reader or writer panicked on a file", "key", d.info.Key, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	}
	rep := landing.Report{Table: r.cfg.Table.String(), Reason: cause.Error(), Size: d.info.Size,
		ETag: d.info.ETag, SHA256: d.sha256, At: r.cfg.Now().UTC(), LandedAt: res.landed.UTC(), Hint: hint(cause), Kind: rejectionKind(cause)}
	var fe *decode.FileError
	if errors.As(cause, &fe) {
		rep.Row, rep.Column, rep.Value = fe.Row, fe.Column, fe.Value
	}
	dst, err := r.bucket.Quarantine(ctx, d.info.Key, rep)
	if err != nil {
		if r.stopsRun(ctx, err) {
			return res, r.landingErr(err) // the landing bucket refuses writes: stop
		}
		r.log.Info("could not quarantine a file; it stays in the landing bucket", "key", d.info.Key, "err", err)
		res.Status = Failed
		res.Reason = fmt.Sprintf("could not be quarantined (%v); it stays in the landing bucket and a later run tries again; it is refused because %v", err, cause)
		return res, nil
	}
	res.Status, res.Reason, res.QuarantinedTo = Quarantined, cause.Error(), dst
	return res, nil
}

// errNameNotUTF8 refuses a landing file whose name is not UTF-8.
var errNameNotUTF8 = errors.New("the file name is not UTF-8, which batch ids must be")

// hint says how to fix the most common rejections.
func hint(err error) string {
	var we *lake.WidthError
	switch {
	case errors.Is(err, errNameNotUTF8):
		return "rename the file with a UTF-8 name (convmv converts names from another encoding), then put it into the landing folder again"
	case errors.Is(err, lake.ErrRequiredNull):
		return "fill the required column in every row, then upload the file again under a new key"
	case errors.As(err, &we) && we.SchemaBytes == 0:
		return fmt.Sprintf("split the file into files of at most %d columns, each with the time and series key columns, or send its values in long form (a column naming the measurement, one of its value), and upload those under new keys; or, if the table is meant to be that wide, raise --max-columns (TIMELAKE_MAX_COLUMNS) and put the file back with timelake landing requeue",
			we.Max)
	case errors.Is(err, lake.ErrTooWide):
		return "no table can take the file as it is: split it into files of fewer columns (their names shorter), each with the time and series key columns, or send its values in long form (a column naming the measurement, one of its value), and upload those under new keys; then discard this one with timelake landing discard"
	case decode.IsNewColumns(err):
		return "to add the new columns, let ingest evolve the table (--evolve add-columns, or timelake tables alter --set timelake.evolve=add-columns), then put the file back with timelake landing requeue"
	case decode.IsPanic(err):
		return "timelake's reader or writer crashed on this file (--log-level debug logs where): write the file again, with another writer if the same one made it, and upload it under a new key; or put it back with timelake landing requeue once timelake reads it"
	case errors.As(err, new(*profileError)):
		return "fix the table's source profiles (timelake tables show lists them; timelake tables alter changes them), then put the file back with timelake landing requeue"
	}
	var fe *decode.FileError
	if errors.As(err, &fe) {
		return "fix the file and upload it again under a new key (the quarantined copy and this report can then be deleted); or, when a setting was wrong (--csv-delimiter, --csv-decimal-comma, --csv-null, --time-unit), fix it and put the file back with timelake landing requeue"
	}
	return "send corrections as a new file with a new key"
}

// maxSchemaRetries bounds how often one file is prepared again because
// other writers changed the schema under it.
const maxSchemaRetries = 5

// afterSchemaConflicts prepares again, against the newest schema, the files
// of a commit whose batches another writer's schema change left out
// (lake.AppendResult.SchemaConflict: the field ids their data files use
// were taken), and commits each: decoded again, a file may now load as it
// is, or be quarantined if it no longer fits. It returns the items still
// to finish and their results; the others are done.
func (r *runner) afterSchemaConflicts(ctx context.Context, pending []*item, results []lake.AppendResult) ([]*item, []lake.AppendResult, error) {
	keep := 0
	for i, it := range pending {
		ar := results[i]
		for tries := 1; ar.SchemaConflict != nil; tries++ {
			if tries > maxSchemaRetries {
				return nil, nil, fmt.Errorf("%s: other writers kept changing the table's schema; the file stays for the next run: %w", it.obj.Key, ar.SchemaConflict)
			}
			r.log.Info("the table's schema changed under a file: preparing it again", "key", it.obj.Key, "reason", ar.SchemaConflict)
			fresh := r.prepare(ctx, it.obj, func(int64) error { return nil })
			fresh.start = it.start
			*it = *fresh
			if it.err != nil {
				return nil, nil, it.err
			}
			if it.done {
				break
			}
			res, err := r.tbl.Commit(ctx, []*lake.Prepared{it.prepared}, lake.CommitOptions{})
			if err != nil {
				return nil, nil, r.lakeErr(err)
			}
			ar = res[0]
		}
		if !it.done {
			pending[keep], results[keep] = it, ar
			keep++
		}
	}
	return pending[:keep], results[:keep], nil
}
