package envcheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/build"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/route"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/tablename"
)

// Result is the outcome of one check.
type Result string

// Results, from best to worst; Skip means the check could not run because
// one it depends on failed (Detail says which).
const (
	OK   Result = "ok"
	Warn Result = "warn"
	Fail Result = "fail"
	Skip Result = "skip"
)

// Check is one row of the report.
type Check struct {
	Name   string `json:"name"`   // stable id, e.g. "lake-commit"
	Result Result `json:"result"` // ok, warn, fail or skip
	Detail string `json:"detail"` // what was found; never a secret
	Fix    string `json:"fix,omitempty"`
}

// Report is the outcome of `env check` and its --json document.
type Report struct {
	Version  string  `json:"version"`
	OK       bool    `json:"ok"` // no check failed (warnings allowed)
	Failed   int     `json:"failed"`
	Warnings int     `json:"warnings"`
	Skipped  int     `json:"skipped"`
	Checks   []Check `json:"checks"`
}

// Names of the checks, in the order they run and print.
const (
	CheckVersion       = "version"
	CheckEnvFile       = "env-file"
	CheckWarehouse     = "warehouse"
	CheckTableName     = "table-name"
	CheckRoutes        = "routes"
	CheckLanding       = "landing"
	CheckUploadKeys    = "upload-keys" // the gateway binary's: where upload writes
	CheckSettings      = "settings"
	CheckVariables     = "variables"
	CheckCatalog       = "catalog"
	CheckEndpoint      = "endpoint"
	CheckRegion        = "region"
	CheckCredentials   = "credentials"
	CheckConnect       = "connect"
	CheckClock         = "clock"
	CheckAuth          = "auth"
	CheckLandingBucket = "landing-bucket"
	CheckLandingLease  = "landing-lease"
	// The gateway binary checks what upload needs instead of the two
	// landing rows above: a put, HEAD and delete of a probe below the
	// gateway's keys, and conditional create there.
	CheckUploadPut         = "upload-put"
	CheckUploadConditional = "upload-conditional"
	CheckLakeBucket        = "lake-bucket"
	CheckLakeCommit        = "lake-commit"
	CheckCatalogConfig     = "catalog-config"
	CheckCatalogAuth       = "catalog-auth"
	CheckCatalogNS         = "catalog-namespace"
	CheckCatalogCommit     = "catalog-commit"
	CheckTable             = "table"
	CheckProfiles          = "profiles"
)

// CatalogChecks are the checks of the REST catalog, which --catalog none
// skips.
var CatalogChecks = []string{CheckCatalogConfig, CheckCatalogAuth, CheckCatalogNS, CheckCatalogCommit}

// CheckOptions are the inputs of one env check.
type CheckOptions struct {
	IO       *iostreams.IOStreams
	JSON     bool
	Settings Settings
	// Timeout bounds each network step (the connect request, each S3 call);
	// probe clean-up gets its own budget of the same length (at least
	// MinCleanupTimeout), not cut short by an expired check.
	Timeout time.Duration
	Logger  *slog.Logger

	// NewS3Client builds the S3 client; nil means storage.NewS3Client.
	NewS3Client func(context.Context, storage.S3Config) (*storage.S3Client, error)
	// HTTPClient sends the unauthenticated connect request; nil means a
	// client on a clone of http.DefaultTransport (proxy from the
	// environment, like the SDK) that does not follow redirects.
	HTTPClient *http.Client
	// Now is the local clock compared with the server's Date; nil means
	// time.Now.
	Now func() time.Time
	// ProbeID names the probe objects; "" means host-pid-random.
	ProbeID string
	// Lake runs the checks that need the lake (lakecheck.New); nil checks
	// the landing side only, as the gateway binary does.
	Lake LakeChecks
}

// LakeChecks are the checks of the warehouse side that need the lake: the
// REST catalog's and the table's. The gateway binary links no lake, so
// they live in a package of their own (lakecheck).
type LakeChecks interface {
	// CatalogSettings adds the catalog row (CheckCatalog) and reports
	// whether the table's versions are committed through a REST catalog.
	CatalogSettings(c *Checker) (rest bool)
	// Catalog adds the rows of the REST catalog (CatalogChecks).
	Catalog(ctx context.Context, c *Checker)
	// Table adds the rows of the table (CheckTable, CheckProfiles).
	Table(ctx context.Context, c *Checker)
}

// DefaultTimeout bounds each network check (connect, each S3 call) unless
// --timeout says otherwise (the registry's default of --timeout).
var DefaultTimeout, _ = time.ParseDuration(settings.CheckTimeout.Default)

// MinCleanupTimeout is the least time given to deleting probe objects.
const MinCleanupTimeout = 5 * time.Second

// Clock skew limits. AWS Signature Version 4 rejects a request whose
// X-Amz-Date is more than 15 minutes from the server's clock
// (RequestTimeTooSkewed, AWS "Signing AWS API requests"); timelake warns well
// before that.
const (
	SkewWarn = time.Minute
	SkewFail = 15 * time.Minute
)

// LakeSide makes a run's checks that need the lake from its command
// (lakecheck.New); nil leaves them out (the gateway binary).
type LakeSide func(cmd *cobra.Command, f *cmdutil.Factory) LakeChecks

// NewCmdCheck builds `env check`, of the landing side only when lake is
// nil. runF replaces RunCheck in tests; nil means RunCheck.
func NewCmdCheck(f *cmdutil.Factory, runF func(context.Context, *CheckOptions) error, lake LakeSide) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Prove that the settings work before cron runs ingest with them",
		Long: `Run every check that "timelake ingest" depends on and print one row per check
(name, ok/warn/fail/skip, what was found, how to fix it):

  settings    warehouse, table name (or the routes of TIMELAKE_ROUTES, each
              listed), landing bucket, every other setting's
              value (numbers, durations, sizes, names), endpoint, region
              and where the credentials come from
  connect     the endpoint answers (DNS, TCP, TLS) within --timeout
  clock       the local clock is within 1 minute of the server's (SigV4
              fails beyond 15 minutes)
  auth        the credentials are accepted (one ListBuckets call)
  landing     list, and put/get/delete a probe object under _timelake/probe/
  lake        list, put/delete a probe, and conditional create: a second
              If-None-Match: * put of the same key must be refused (412),
              which the catalog-free commit relies on
  table       exists (or will be created by the first ingest), is readable,
              and its timelake.format-version is one this binary writes;
              with routes, each table a route names whatever the key

Probe objects are deleted even when a check fails. A failed check does not
stop the others; checks that depend on it are skipped. The exit code is 1
when any check failed, 0 otherwise (warnings included). Secrets are never
printed, not one character; an env file holding one that other users can
read is a warning.`,
		Example: `  timelake env check --env-file timelake.env
  timelake env check --landing ./landing --warehouse ./lake --table iot.readings
  set -a; . ./timelake.env; set +a; timelake env check --json`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{cmdutil.AnnotationReportsEnvFile: ""},
		RunE: func(cmd *cobra.Command, _ []string) error {
			// --timeout has no variable: it does not need the env file,
			// which the env-file check reports on.
			r := settings.NewResolver(cmd.Flags(), nil)
			timeout := settings.CheckTimeout.Get(r)
			if err := r.Err(); err != nil {
				return err
			}
			s, err := resolveSettings(cmd, f)
			if err != nil {
				return err
			}
			opts := &CheckOptions{IO: f.IO, JSON: f.JSON, Settings: s, Timeout: timeout, Logger: f.Logger()}
			if lake != nil {
				opts.Lake = lake(cmd, f)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return RunCheck(cmd.Context(), opts)
		},
	}
	if lake == nil {
		cmd.Long = landingCheckLong
		cmd.Example = `  timelake-gateway env check --env-file gateway.env
  timelake-gateway env check --landing s3://my-lake-landing --json`
	}
	settings.Bind(cmd.Flags(), settings.EnvCheck)
	if lake == nil {
		settings.BindSpecs(cmd.Flags(), &settings.Gateway.Spec, &settings.UploadPrefix.Spec)
	}
	return cmd
}

// landingCheckLong is the help of the gateway binary's env check.
const landingCheckLong = `Run every check that "timelake-gateway upload" depends on and print one row
per check (name, ok/warn/fail/skip, what was found, how to fix it):

  settings    landing bucket, where upload writes (the landing location,
              --prefix and --gateway), every other setting's value,
              endpoint, region and where the credentials come from
  connect     the endpoint answers (DNS, TCP, TLS) within --timeout
  clock       the local clock is within 1 minute of the server's (SigV4
              fails beyond 15 minutes)
  auth        the credentials are accepted (one ListBuckets call)
  upload      below the gateway's keys only, under a hidden name ingest
              never loads (.timelake-env-check.tmp): put a probe, HEAD it
              and delete it, then conditional create (the If-None-Match: *
              put upload uses: a second one must be refused with 412)

It neither lists the bucket nor writes anywhere else, so a write-only key
(s3:PutObject, s3:GetObject and s3:AbortMultipartUpload on the gateway's
keys, docs/gateways.md) passes. A delete the key
may not do is fine: the probe stays, and the next check writes the same
name again. The exit code is 1 when any check failed, 0 otherwise (warnings
included). Secrets are never printed.`

// RunCheck runs every check, prints the report (a table, tab-separated lines
// in a pipe, or --json), and returns a *cmdutil.SilentError with ExitFailed
// when a check failed.
func RunCheck(ctx context.Context, opts *CheckOptions) error {
	rep := RunChecks(ctx, opts)
	if err := writeReport(opts.IO, rep, opts.JSON); err != nil {
		return err
	}
	if !rep.OK {
		return &cmdutil.SilentError{Code: cmdutil.ExitFailed, Err: fmt.Errorf("env check: %d of %d checks failed", rep.Failed, len(rep.Checks))}
	}
	return nil
}

// RunChecks runs every check and returns the report. Each check runs even
// when an earlier one failed, unless it depends on it (then it is Skip).
func RunChecks(ctx context.Context, opts *CheckOptions) *Report {
	c := newChecker(opts)
	c.version()
	if !c.envFile() {
		network := []string{CheckEndpoint, CheckRegion, CheckCredentials, CheckConnect, CheckClock, CheckAuth}
		names := slices.Concat([]string{CheckLanding, CheckUploadKeys, CheckSettings, CheckVariables},
			network, []string{CheckUploadPut, CheckUploadConditional})
		if opts.Lake != nil {
			names = slices.Concat([]string{CheckWarehouse, CheckTableName, CheckRoutes, CheckLanding, CheckSettings, CheckVariables, CheckCatalog},
				network, []string{CheckLandingBucket, CheckLandingLease, CheckLakeBucket, CheckLakeCommit}, CatalogChecks, []string{CheckTable, CheckProfiles})
		}
		for _, n := range names {
			c.Skip(n, "settings unknown: "+errEnvFile.Error())
		}
		return c.report()
	}
	c.settings(ctx)
	c.network(ctx)
	if opts.Lake == nil {
		c.uploadTarget(ctx)
		return c.report()
	}
	c.landingBucket(ctx)
	c.lake(ctx)
	opts.Lake.Catalog(ctx, c)
	opts.Lake.Table(ctx, c)
	return c.report()
}

// Checker carries what one check learnt to the checks that depend on it.
type Checker struct {
	opts *CheckOptions
	rep  Report
	now  func() time.Time

	landing, warehouse storage.Location
	landingOK          bool // landing setting valid
	warehouseOK        bool
	tableName          tablename.Name
	tableOK            bool
	// routes are the rules of TIMELAKE_ROUTES when they read (nil
	// without routes).
	routes route.Routes
	// restCatalog: the versions are committed through a REST catalog.
	restCatalog bool

	s3Needed bool // landing or warehouse is an S3 location
	tigris   bool
	client   *storage.S3Client
	// s3Blocked, when not empty, is why S3 checks cannot run.
	s3Blocked string

	// From the connect check, for the clock check.
	connected       bool
	serverDate      time.Time
	localAtResponse time.Time
	serviceURL      string
	lakeListed      bool // the warehouse could be listed
	landingListed   bool // the landing bucket could be listed and written
	// uploadFolder is where upload writes in the landing location,
	// [prefix/]gateway/ ("" when unknown): the gateway binary's probes go
	// there.
	uploadFolder string
}

// Warehouse is the warehouse setting's location; false when it is
// invalid.
func (c *Checker) Warehouse() (storage.Location, bool) { return c.warehouse, c.warehouseOK }

// TableName is the table setting's name; false when it is invalid. With
// routes, it is the first table a route names whatever the key (the one
// the catalog and lake probes use); false when none does.
func (c *Checker) TableName() (tablename.Name, bool) { return c.tableName, c.tableOK }

// Routes are the rules of TIMELAKE_ROUTES; nil without routes or when they
// do not read.
func (c *Checker) Routes() route.Routes { return c.routes }

// Tables are the tables the table checks load: the table setting's, or
// with routes each table a route names whatever the key, once each.
func (c *Checker) Tables() []tablename.Name {
	if c.routes == nil {
		if c.tableOK {
			return []tablename.Name{c.tableName}
		}
		return nil
	}
	var out []tablename.Name
	for _, r := range c.routes {
		if t, ok := r.Fixed(); ok && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// LakeListed reports whether the warehouse could be listed (CheckLakeBucket).
func (c *Checker) LakeListed() bool { return c.lakeListed }

// LandingListed reports whether the landing bucket could be listed and
// written (CheckLandingBucket).
func (c *Checker) LandingListed() bool { return c.landingListed }

// Landing opens the landing location for a check; done undoes what opening
// it made (a folder created for the check).
func (c *Checker) Landing() (st storage.Store, done func(), err error) {
	st, f, err := c.openLocation(c.landing, false)
	if err != nil {
		return nil, nil, err
	}
	if f == nil {
		return st, func() {}, nil
	}
	return st, f.undo, nil
}

// S3 is the S3 client of the checks (nil when none could be built), whether
// the endpoint is Tigris's, and why S3 checks cannot run ("" when they can).
func (c *Checker) S3() (client storage.S3API, tigris bool, blocked string) {
	if c.client == nil {
		return nil, c.tigris, c.s3Blocked // no client: a nil interface, not a nil *S3Client
	}
	return c.client, c.tigris, c.s3Blocked
}

// Options are the check's options (settings, timeout, logger, probe id).
func (c *Checker) Options() *CheckOptions { return c.opts }

func newChecker(opts *CheckOptions) *Checker {
	c := &Checker{opts: opts, now: opts.Now}
	if c.now == nil {
		c.now = time.Now
	}
	if c.opts.Timeout <= 0 {
		c.opts.Timeout = DefaultTimeout
	}
	if c.opts.ProbeID == "" {
		c.opts.ProbeID = newProbeID()
	}
	return c
}

func (c *Checker) add(name string, r Result, detail, fix string) {
	c.rep.Checks = append(c.rep.Checks, Check{Name: name, Result: r, Detail: detail, Fix: fix})
}

func (c *Checker) OK(name, detail string)        { c.add(name, OK, detail, "") }
func (c *Checker) Warn(name, detail, fix string) { c.add(name, Warn, detail, fix) }
func (c *Checker) Fail(name, detail, fix string) { c.add(name, Fail, detail, fix) }
func (c *Checker) Skip(name, reason string)      { c.add(name, Skip, reason, "") }

func (c *Checker) report() *Report {
	r := c.rep
	r.Version = build.String()
	for _, ch := range r.Checks {
		switch ch.Result {
		case Fail:
			r.Failed++
		case Warn:
			r.Warnings++
		case Skip:
			r.Skipped++
		}
	}
	r.OK = r.Failed == 0
	return &r
}

// WithTimeout bounds one network step.
func (c *Checker) WithTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.opts.Timeout)
}

// cleanupContext outlives ctx's cancellation and the check's timeout, so a
// probe is deleted even after a failure or a timed-out step.
func (c *Checker) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := c.opts.Timeout
	if d < MinCleanupTimeout {
		d = MinCleanupTimeout
	}
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

func (c *Checker) version() {
	c.OK(CheckVersion, fmt.Sprintf("timelake %s, %s/%s, %s", build.String(), runtime.GOOS, runtime.GOARCH, runtime.Version()))
}

// envFile reports the env file; false when it cannot be read. A relative
// path and a file holding a secret that other users can read are warnings.
func (c *Checker) envFile() bool {
	ef := c.opts.Settings.EnvFile
	switch {
	case ef.Err != nil:
		c.Fail(CheckEnvFile, fmt.Sprintf("%s from %s: %v", ef.Path, ef.Source, ef.Err),
			"check the path; cron starts jobs in $HOME, so use an absolute path or cd first (docs/cron.md)")
		return false
	case ef.Path == "":
		c.OK(CheckEnvFile, "none: settings come from flags and the environment")
		return true
	}
	if ef.Writable != nil {
		c.Fail(CheckEnvFile, fmt.Sprintf("%s (from %s): %v", ef.Path, ef.Source, strings.TrimPrefix(ef.Writable.Error(), "env file "+ef.Path+" ")),
			"chmod 600 "+ef.Path)
		return true
	}
	var problems, fixes []string
	if relativeEnvFile(ef.Path) {
		problems = append(problems, "is relative: it is read from the current folder, and cron starts jobs in $HOME")
		fixes = append(fixes, "in crontab, cd to its folder first (cd $HOME/timelake && timelake ingest --env-file timelake.env) or give an absolute path")
	}
	if x := ef.Exposed; x != nil {
		problems = append(problems, strings.TrimPrefix(x.Problem(), "env file "+x.Path+" "))
		fixes = append(fixes, x.Fix())
	}
	detail := fmt.Sprintf("%s (from %s)", ef.Path, ef.Source)
	if len(problems) == 0 {
		c.OK(CheckEnvFile, detail)
		return true
	}
	c.Warn(CheckEnvFile, detail+" "+strings.Join(problems, "; it "), strings.Join(fixes, "; "))
	return true
}

// isNotFound reports a missing bucket or object.
func isNotFound(err error) bool { return errors.Is(err, storage.ErrNotExist) }
