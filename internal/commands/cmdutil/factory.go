// Package cmdutil holds what every command shares: the Factory that loads
// the settings (flags > environment > --env-file, internal/settings) and
// builds clients lazily, and the typed errors that main maps to exit codes.
package cmdutil

import (
	"context"
	"errors"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/config"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
)

// Factory is built once per invocation. Nothing in it does I/O until a
// command asks, so --help and usage errors never touch the network.
type Factory struct {
	IO     *iostreams.IOStreams
	Getenv func(string) (string, bool)
	// Environ lists the process environment ("KEY=value", os.Environ), for
	// the report of unknown TIMELAKE_* variables; nil reports only those
	// of the env file.
	Environ func() []string

	// Global settings, set by ResolveGlobals before a command runs.
	EnvFile  config.Setting // the env file's path (Value) and where it came from
	JSON     bool
	LogLevel string

	globals bool // ResolveGlobals ran
	env     *config.Env
	logger  *slog.Logger
	s3      *storage.S3Client
	s3cfg   storage.S3Config
	// CacheDir is --cache-dir as given ("" for the default; the lake's
	// commands read it, internal/commands/lakecmd).
	CacheDir string
}

// ResolveGlobals reads the root's settings for cmd: --env-file (from the
// flag or the environment: the file cannot name itself), --json, and
// --log-level (which the env file may also set; an env file that cannot be
// read is left to the command to report). The root calls it before any
// command runs. Errors: a bad value (*settings.ValueError).
func (f *Factory) ResolveGlobals(cmd *cobra.Command) error {
	boot := f.environment()
	r := settings.NewResolver(cmd.Flags(), boot)
	_, f.EnvFile, _ = settings.EnvFile.Resolve(r)
	f.JSON = settings.JSON.Get(r)
	f.globals = true
	env, err := f.Env()
	if err != nil {
		env = boot
	}
	r = settings.NewResolver(cmd.Flags(), env)
	f.LogLevel = settings.LogLevel.Get(r)
	f.CacheDir = settings.CacheDir.Get(r)
	return r.Err()
}

// environment is the settings lookup without env file.
func (f *Factory) environment() *config.Env {
	e, _ := config.LoadEnv("", f.Getenv) // no file: cannot fail
	return e
}

// Env returns the settings lookup (environment, then the env file). An env
// file that cannot be read or parsed, or that its group or other users can
// write (settings.WritableEnvFile), is a usage error.
func (f *Factory) Env() (*config.Env, error) {
	e, err := f.EnvUnchecked()
	if err != nil {
		return nil, err
	}
	if err := settings.CheckEnvFileWritable(e); err != nil {
		return nil, &UsageError{Err: err}
	}
	return e, nil
}

// EnvUnchecked is Env without the refusal of a writable env file, for
// env check, which reports it as a failed check beside the others.
func (f *Factory) EnvUnchecked() (*config.Env, error) {
	if f.env != nil {
		return f.env, nil
	}
	if !f.globals { // a command run without the root (tests)
		_, f.EnvFile, _ = settings.EnvFile.Resolve(settings.NewResolver(nil, f.environment()))
	}
	e, err := config.LoadEnv(f.EnvFile.Value, f.Getenv)
	if err != nil {
		return nil, &UsageError{Err: err} // a settings problem: exit 2
	}
	f.env = e
	return e, nil
}

// UnknownVariables are the TIMELAKE_* variables of the environment and the
// env file that no setting reads, and the AWS_* and LANDING_* ones that
// misspell one a setting reads (settings.UnknownVariables); none when the
// env file cannot be read (the command fails on it).
func (f *Factory) UnknownVariables() []settings.UnknownVariable {
	env, err := f.EnvUnchecked()
	if err != nil {
		return nil
	}
	var environ []string
	if f.Environ != nil {
		environ = f.Environ()
	}
	return settings.UnknownVariables(env, environ)
}

// Settings returns the resolver of cmd's settings: its flags, then the
// environment, then the env file.
func (f *Factory) Settings(cmd *cobra.Command) (*settings.Resolver, error) {
	env, err := f.Env()
	if err != nil {
		return nil, err
	}
	return settings.NewResolver(cmd.Flags(), env), nil
}

// Logger returns the stderr logger at --log-level (text, or JSON with --json).
func (f *Factory) Logger() *slog.Logger {
	if f.logger != nil {
		return f.logger
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.LogLevel)); err != nil {
		lvl = slog.LevelWarn
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if f.JSON {
		f.logger = slog.New(slog.NewJSONHandler(f.IO.ErrOut, opts))
	} else {
		f.logger = slog.New(slog.NewTextHandler(f.IO.ErrOut, opts))
	}
	return f.logger
}

// WarnEnvironment logs a warning on stderr for each TIMELAKE_* variable no
// setting reads and each AWS_* or LANDING_* variable that misspells one a
// setting reads, with the one it most likely stands for (a misspelled
// variable is otherwise ignored), and when the env file holds a secret and
// other users can read it (settings.CheckEnvFile), with the chmod that
// fixes it. An env file that cannot be read or is refused is not reported
// here: the command fails on it.
func (f *Factory) WarnEnvironment() {
	for _, u := range f.UnknownVariables() {
		f.Logger().Warn(u.String(), "fix", "rename or remove it (docs/configuration.md#unknown-variables)")
	}
	env, err := f.Env()
	if err != nil {
		return
	}
	if x := settings.CheckEnvFile(env); x != nil {
		f.Logger().Warn(x.Problem(), "fix", x.Fix())
	}
}

// CheckLocations refuses, as a usage error, a warehouse and a landing
// location of different kinds whose local side is a relative path
// (settings.CheckLocationKinds), wherever each is set: every command
// checks it, whether it uses one of them or both. An env file that cannot
// be read is left to the command to report.
func (f *Factory) CheckLocations(cmd *cobra.Command) error {
	r, err := f.Settings(cmd)
	if err != nil {
		return nil
	}
	if err := r.CheckLocations(); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// S3Config resolves the S3 connection settings of cmd.
func (f *Factory) S3Config(cmd *cobra.Command) (storage.S3Config, error) {
	r, err := f.Settings(cmd)
	if err != nil {
		return storage.S3Config{}, err
	}
	cfg := storage.S3Config{
		Endpoint:        settings.Endpoint.Get(r),
		Region:          settings.Region.Get(r),
		VirtualHosted:   settings.VirtualHosted.Get(r),
		AccessKeyID:     settings.AccessKeyID.Get(r),
		SecretAccessKey: settings.SecretAccessKey.Get(r),
		SessionToken:    settings.SessionToken.Get(r),
		Profile:         settings.Profile.Get(r),
	}
	return cfg, r.Err()
}

// S3Client builds (once) the S3 client for the resolved settings.
func (f *Factory) S3Client(ctx context.Context, cmd *cobra.Command) (*storage.S3Client, storage.S3Config, error) {
	if f.s3 != nil {
		return f.s3, f.s3cfg, nil
	}
	cfg, err := f.S3Config(cmd)
	if err != nil {
		return nil, cfg, err
	}
	cfg.Logger = f.Logger() // the SDK's lines, at debug level (storage.SDKLogger)
	c, err := storage.NewS3Client(ctx, cfg)
	if err != nil {
		if errors.Is(err, storage.ErrInvalidEndpoint) {
			return nil, cfg, &UsageError{Err: err}
		}
		return nil, cfg, err
	}
	f.s3, f.s3cfg = c, cfg
	return c, cfg, nil
}

// StorageNames names the settings behind cmd's S3 connection, for the
// explanations of storage errors (storage.Diagnose): where the endpoint and
// the keys are set, and the access key id masked. Secrets are never in it.
func (f *Factory) StorageNames(cmd *cobra.Command) storage.Names {
	r, err := f.Settings(cmd)
	if err != nil {
		return storage.Names{}
	}
	n := storage.Names{Endpoint: settings.Endpoint.Get(r), Region: settings.Region.Get(r),
		KeyID: settings.MaskKeyID(settings.AccessKeyID.Get(r))}
	for _, x := range []struct {
		spec *settings.Spec
		dst  *string
	}{{&settings.Endpoint.Spec, &n.EndpointSetting}, {&settings.AccessKeyID.Spec, &n.AccessKeyVar}, {&settings.SecretAccessKey.Spec, &n.SecretKeyVar}} {
		if from := r.Lookup(x.spec); from.Value != "" {
			*x.dst = from.Describe()
		}
	}
	return n
}

// Where names a store for storage.Diagnose: what it is to the user
// ("landing bucket"), its location, and where setting spec sets it.
func (f *Factory) Where(cmd *cobra.Command, spec *settings.Spec, what string, loc storage.Location) storage.Where {
	w := storage.Where{What: what, Location: loc}
	if r, err := f.Settings(cmd); err == nil {
		w.Setting = r.Lookup(spec).Describe()
	}
	return w
}

// ExplainLanding and ExplainLake word a setup error of the landing bucket
// or of the warehouse as ingest and env check do (storage.Diagnose: the
// reason naming the store and the setting behind it, and the fix); any
// other error, or one already explained, is returned as it is.
func (f *Factory) ExplainLanding(cmd *cobra.Command, err error) error {
	return f.explain(cmd, err, &settings.Landing.Spec, "landing bucket", "landing folder", true)
}

// ExplainLake: see ExplainLanding.
func (f *Factory) ExplainLake(cmd *cobra.Command, err error) error {
	return f.explain(cmd, err, &settings.Warehouse.Spec, "lake bucket", "warehouse folder", false)
}

func (f *Factory) explain(cmd *cobra.Command, err error, spec *settings.Spec, bucket, folder string, bareIsBucket bool) error {
	var silent *SilentError
	if err == nil || IsUsage(err) || errors.As(err, &silent) || errors.Is(err, ErrPartial) {
		return err // reported already, or not the store's
	}
	var loc storage.Location
	if r, rerr := f.Settings(cmd); rerr == nil {
		loc, _ = storage.ParseLocation(r.Lookup(spec).Value, bareIsBucket)
	}
	what := folder
	if loc.IsS3() {
		what = bucket
	}
	return storage.Explain(err, f.Where(cmd, spec, what, loc), f.StorageNames(cmd))
}

// ExplainErrors makes every subcommand of group return its errors through
// explain (ExplainLanding, ExplainLake): a setup problem of the store gets
// its reason and its Fix: line in whichever subcommand meets it.
func ExplainErrors(group *cobra.Command, explain func(*cobra.Command, error) error) {
	for _, sub := range group.Commands() {
		if runE := sub.RunE; runE != nil {
			sub.RunE = func(c *cobra.Command, args []string) error { return explain(c, runE(c, args)) }
		}
	}
}

// gatewayFolders is how many levels of folders of a local landing folder
// its deletes keep when they empty them: the gateways' folders, which
// people and gateways create and write into (--gateway-depth N: N levels;
// by default, the folder that holds the files, two levels:
// site-berlin/gw-7/). Deeper folders (dates below a gateway's) are
// removed, so that listings do not walk years of empty folders.
func (f *Factory) gatewayFolders(cmd *cobra.Command) int {
	const byDefault = 2
	r, err := f.Settings(cmd)
	if err != nil {
		return byDefault // the command reports the env file's problem itself
	}
	if d := settings.GatewayDepth.Get(r); d > 0 {
		return d
	}
	return byDefault
}

// OpenStore opens a landing location: an S3 bucket/prefix or a folder.
func (f *Factory) OpenStore(ctx context.Context, cmd *cobra.Command, loc storage.Location) (storage.Store, error) {
	if !loc.IsS3() {
		st, err := storage.NewLocalStore(loc.Dir)
		if err != nil {
			return nil, err
		}
		return st.KeepFolders(f.gatewayFolders(cmd)).WarnLinks(f.Logger()), nil // links are never loaded
	}
	c, cfg, err := f.S3Client(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return storage.NewS3Store(c, loc.Bucket, loc.Prefix,
		storage.S3StoreOptions{Tigris: storage.IsTigrisEndpoint(cfg.Endpoint)}), nil
}

// AnnotationReportsEnvFile marks a command that reports the env file and
// unknown variables itself (env check), so the root does not log them.
const AnnotationReportsEnvFile = "timelake/reports-env-file"

// AnnotationShowsLocations marks a command that shows or checks the
// warehouse and landing settings rather than using them (env show, env
// check), which the root does not refuse for their kinds
// (CheckLocations).
const AnnotationShowsLocations = "timelake/shows-locations"

// AnnotationTimedErrors marks a command whose final error line, in a pipe,
// starts with a timestamp like its other output lines (ingest).
const AnnotationTimedErrors = "timelake/timed-errors"

// HasAnnotation reports whether cmd or one of its parents carries key.
func HasAnnotation(cmd *cobra.Command, key string) bool {
	for c := cmd; c != nil; c = c.Parent() {
		if _, ok := c.Annotations[key]; ok {
			return true
		}
	}
	return false
}

// Adapt turns a command group's test hook runF, which receives the options
// of whichever subcommand ran, into the typed hook of one subcommand
// (nil stays nil: the subcommand runs for real).
func Adapt[T any](runF func(context.Context, any) error) func(context.Context, *T) error {
	if runF == nil {
		return nil
	}
	return func(ctx context.Context, o *T) error { return runF(ctx, o) }
}
