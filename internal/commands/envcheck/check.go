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

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/build"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
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
	CheckLanding       = "landing"
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
	CheckLakeBucket    = "lake-bucket"
	CheckLakeCommit    = "lake-commit"
	CheckCatalogConfig = "catalog-config"
	CheckCatalogAuth   = "catalog-auth"
	CheckCatalogNS     = "catalog-namespace"
	CheckCatalogCommit = "catalog-commit"
	CheckTable         = "table"
	CheckProfiles      = "profiles"
)

// catalogChecks are the checks of the REST catalog, which --catalog none
// skips.
var catalogChecks = []string{CheckCatalogConfig, CheckCatalogAuth, CheckCatalogNS, CheckCatalogCommit}

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
	NewS3Client func(context.Context, storage.S3Config) (*s3.Client, error)
	// HTTPClient sends the unauthenticated connect request; nil means a
	// client on a clone of http.DefaultTransport (proxy from the
	// environment, like the SDK) that does not follow redirects.
	HTTPClient *http.Client
	// Now is the local clock compared with the server's Date; nil means
	// time.Now.
	Now func() time.Time
	// ProbeID names the probe objects; "" means host-pid-random.
	ProbeID string
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

// NewCmdCheck builds `env check`. runF replaces RunCheck in tests; nil means
// RunCheck.
func NewCmdCheck(f *cmdutil.Factory, runF func(context.Context, *CheckOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Prove that the settings work before cron runs ingest with them",
		Long: `Run every check that "timelake ingest" depends on and print one row per check
(name, ok/warn/fail/skip, what was found, how to fix it):

  settings    warehouse, table name, landing bucket, every other setting's
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
              and its timelake.format-version is one this binary writes

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
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return RunCheck(cmd.Context(), opts)
		},
	}
	settings.Bind(cmd.Flags(), settings.EnvCheck)
	return cmd
}

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
		for _, n := range slices.Concat([]string{CheckWarehouse, CheckTableName, CheckLanding, CheckSettings, CheckVariables, CheckCatalog,
			CheckEndpoint, CheckRegion, CheckCredentials, CheckConnect, CheckClock, CheckAuth, CheckLandingBucket, CheckLandingLease,
			CheckLakeBucket, CheckLakeCommit}, catalogChecks, []string{CheckTable, CheckProfiles}) {
			c.skip(n, "settings unknown: "+errEnvFile.Error())
		}
		return c.report()
	}
	c.settings(ctx)
	c.network(ctx)
	c.landingBucket(ctx)
	c.lake(ctx)
	c.catalog(ctx)
	c.table(ctx)
	c.profiles(ctx)
	return c.report()
}

// checker carries what one check learnt to the checks that depend on it.
type checker struct {
	opts *CheckOptions
	rep  Report
	now  func() time.Time

	landing, warehouse storage.Location
	landingOK          bool // landing setting valid
	warehouseOK        bool
	tableName          lake.TableName
	tableOK            bool

	s3Needed bool // landing or warehouse is an S3 location
	tigris   bool
	client   *s3.Client
	// s3Blocked, when not empty, is why S3 checks cannot run.
	s3Blocked string

	// From the connect check, for the clock check.
	connected       bool
	serverDate      time.Time
	localAtResponse time.Time
	serviceURL      string
	lakeListed      bool        // the warehouse could be listed
	landingListed   bool        // the landing bucket could be listed and written
	loaded          *lake.Table // the table, once loaded
	tableMissing    bool        // the table does not exist yet

	// catalogOK: --catalog rest with usable settings; catalogReady: the
	// catalog checks passed, so the table can be loaded through it.
	catalogOK, catalogReady bool
}

func newChecker(opts *CheckOptions) *checker {
	c := &checker{opts: opts, now: opts.Now}
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

func (c *checker) add(name string, r Result, detail, fix string) {
	c.rep.Checks = append(c.rep.Checks, Check{Name: name, Result: r, Detail: detail, Fix: fix})
}

func (c *checker) ok(name, detail string)        { c.add(name, OK, detail, "") }
func (c *checker) warn(name, detail, fix string) { c.add(name, Warn, detail, fix) }
func (c *checker) fail(name, detail, fix string) { c.add(name, Fail, detail, fix) }
func (c *checker) skip(name, reason string)      { c.add(name, Skip, reason, "") }

func (c *checker) report() *Report {
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

// withTimeout bounds one network step.
func (c *checker) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.opts.Timeout)
}

// cleanupContext outlives ctx's cancellation and the check's timeout, so a
// probe is deleted even after a failure or a timed-out step.
func (c *checker) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := c.opts.Timeout
	if d < MinCleanupTimeout {
		d = MinCleanupTimeout
	}
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

func (c *checker) version() {
	c.ok(CheckVersion, fmt.Sprintf("timelake %s, %s/%s, %s", build.String(), runtime.GOOS, runtime.GOARCH, runtime.Version()))
}

// envFile reports the env file; false when it cannot be read. A relative
// path and a file holding a secret that other users can read are warnings.
func (c *checker) envFile() bool {
	ef := c.opts.Settings.EnvFile
	switch {
	case ef.Err != nil:
		c.fail(CheckEnvFile, fmt.Sprintf("%s from %s: %v", ef.Path, ef.Source, ef.Err),
			"check the path; cron starts jobs in $HOME, so use an absolute path or cd first (docs/cron.md)")
		return false
	case ef.Path == "":
		c.ok(CheckEnvFile, "none: settings come from flags and the environment")
		return true
	}
	if ef.Writable != nil {
		c.fail(CheckEnvFile, fmt.Sprintf("%s (from %s): %v", ef.Path, ef.Source, strings.TrimPrefix(ef.Writable.Error(), "env file "+ef.Path+" ")),
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
		c.ok(CheckEnvFile, detail)
		return true
	}
	c.warn(CheckEnvFile, detail+" "+strings.Join(problems, "; it "), strings.Join(fixes, "; "))
	return true
}

// isNotFound reports a missing bucket or object.
func isNotFound(err error) bool { return errors.Is(err, storage.ErrNotExist) }
