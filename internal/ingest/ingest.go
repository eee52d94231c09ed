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
//
// The files follow a file's way through a run: ingest.go (Config, Report,
// Run and the run's set-up), list.go (list the landing bucket and admit
// the files complete), lease.go (the ingest lease, taken and kept),
// fetch.go (download, hash, disk room), pipeline.go (the workers and the
// committing goroutine), prepare.go (decode and write a file's data
// files), commit.go (append a batch of files), settle.go (delete or
// quarantine each landing file and record its result), runexpiry.go
// (expiry between commits), maintain.go (the maintenance after the run:
// its report is the round's lake.MaintainReport),
// session.go (serve's loads).
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
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
	// OpenEnd is set when the file's end is open (a CSV line without its
	// line end: landing.Settle): a waiting file waits for its end (the
	// open-end settle time); a loaded one was loaded as it is, past that
	// time, and its Reason says so (its last row may be cut).
	OpenEnd bool    `json:"open_end,omitempty"`
	Seconds float64 `json:"seconds"`

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
	// Maintenance is the round of maintenance after the loading (its
	// JSON: the round's sums, lake.MaintainReport.MarshalJSON); nil when
	// none ran.
	Maintenance *lake.MaintainReport `json:"maintenance,omitempty"`
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
	// tableReady is called once the table exists, by the file that
	// created it (startCreating); nil outside that.
	tableReady func()
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
		leaseCtx, stopRenew = held.lease.Keep(ctx, r.landingErr)
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

// ErrCannotCreate is returned when the table does not exist and no landing
// file of the run could create it.
var ErrCannotCreate = errors.New("cannot create the table")

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
