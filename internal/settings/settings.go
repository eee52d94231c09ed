// Package settings is the registry of timelake's settings: every flag of
// every command and every variable timelake reads is declared once, in
// registry.go, with its flag name, its environment variables (the first one
// set wins), its default, its help text, its kind (the parser and its
// validation), the commands that bind its flag, and the section of
// docs/configuration.md that documents it.
//
// Everything else is derived from that one declaration:
//   - Bind adds a command's flags, the help text naming the variables
//     (" (env A, B)") and the default;
//   - a command reads a typed value with Setting.Get on a Resolver (flag >
//     environment > --env-file > default, config.Env): a flag is parsed once
//     when cobra sets it, a variable when it is read, with the same parser,
//     and a bad value is a *ValueError naming the flag or the variable;
//   - `env show` lists All settings with their value and source, `env check`
//     validates every value (Spec.Check), and tests check that every flag of
//     every command comes from here and that docs/configuration.md matches.
//
// # Adding a setting
//
// A new setting is one declaration in registry.go; for example:
//
//	CSVDecimalComma = register(&Setting[bool]{Spec: Spec{
//		Flag: "csv-decimal-comma", Env: []string{"TIMELAKE_CSV_DECIMAL_COMMA"}, Default: "false",
//		Help:     "numbers in CSV files have a decimal comma (22,5); a point in such a number is refused",
//		Commands: []Command{Ingest, Serve, Upload, TablesCreate}, Group: GroupFiles,
//	}, Kind: Bool()})
//
// The commands listed bind the flag with its help and variables; `env show`
// lists it and `env check` validates it. What remains is the use: the
// command reads it into its Options (settings.CSVDecimalComma.Get(r), typed),
// and docs/configuration.md gets its row (the test says which). A new
// command adds its Command constant and calls Bind. A secret (a webhook
// token) is Sensitivity Secret and has no flag: it is never printed, not
// one character (Display, MaskSecret), and an env file holding it that
// others can read is reported (CheckEnvFile); a URL holding a secret (the
// webhook of alerts) is SecretURL, printed as its scheme and host. A setting without a variable
// must be a per-run flag (GroupPerRun).
//
// # Why not a configuration library
//
// The parsing is done by libraries: pflag reads the command line and
// godotenv the env file (internal/config). What this package adds is the
// glue that configuration libraries (viper, koanf) do not give: several
// variables per setting tried in a fixed order (the endpoint's
// AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_ENDPOINT;
// docs/configuration.md), the provenance of every value for `env show` and for errors,
// secrets that are never printed, and one list that the docs are tested
// against. It is a few hundred lines over pflag, with no new dependency.
package settings

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/timelake/timelake/internal/alert"
	"github.com/timelake/timelake/internal/config"
	"github.com/timelake/timelake/internal/route"
)

// Command names a command that binds a setting's flag: its path below
// "timelake", e.g. "tables create". Global is the root (persistent flags).
type Command string

// Commands with settings.
const (
	Global          Command = "timelake"
	Ingest          Command = "ingest"
	Serve           Command = "serve"
	Upload          Command = "upload"
	Tables          Command = "tables" // persistent flags of the group
	TablesSnapshots Command = "tables snapshots"
	TablesBatches   Command = "tables batches"
	TablesHistory   Command = "tables history"
	TablesCreate    Command = "tables create"
	TablesExpire    Command = "tables expire"
	TablesMaintain  Command = "tables maintain"
	TablesAlter     Command = "tables alter"
	TablesDelete    Command = "tables delete"
	TablesRollback  Command = "tables rollback"
	LandingGroup    Command = "landing" // persistent flags of the group
	LandingRejected Command = "landing rejected"
	LandingRequeue  Command = "landing requeue"
	LandingDiscard  Command = "landing discard"
	LandingAudit    Command = "landing audit"
	LandingStatus   Command = "landing status"
	Env             Command = "env" // persistent flags of the group
	EnvCheck        Command = "env check"
)

// Group is the section ("## Group") of docs/configuration.md whose table
// documents a setting.
type Group string

// Sections of docs/configuration.md, in its order.
const (
	GroupLocations Group = "Locations"
	GroupS3        Group = "S3 connection"
	GroupCatalog   Group = "Catalog"
	GroupCreate    Group = "Table creation"
	GroupFiles     Group = "CSV files and schema changes"
	GroupIngest    Group = "Ingest"
	GroupServe     Group = "Serve"
	GroupMonitor   Group = "Monitoring"
	GroupUpload    Group = "Upload"
	GroupTables    Group = "Tables"
	GroupGlobal    Group = "Global"
	// GroupPerRun holds the flags that have no variable on purpose: they
	// say what one invocation does (--dry-run, --json, --limit), and a
	// value left in an env file would silently change every run.
	GroupPerRun Group = "Per-run flags"
)

// Sensitivity says how a value may be printed.
type Sensitivity int

// Sensitivities.
const (
	// Plain values are printed as they are.
	Plain Sensitivity = iota
	// KeyID values (an access key id) identify a credential without
	// granting anything: printed as their first 4 characters and
	// asterisks, so an operator can tell which key is used.
	KeyID
	// Secret values are never printed, not one character: only that they
	// are set and their length.
	Secret
	// SecretURL values are URLs whose path or query holds a secret (a
	// Slack webhook's token): printed as their scheme and host only
	// (alert.Redact). Unlike a Secret they may have a flag, which the help
	// says is visible to ps.
	SecretURL
)

// Spec is the declaration of one setting, the part every kind shares.
type Spec struct {
	// Flag is the flag name without "--"; "" for a setting that only has
	// variables (credentials of the AWS chain).
	Flag string
	// Env are the variables, tried in order; the first one set (in the
	// environment, then in the env file) wins. Empty only in GroupPerRun.
	Env []string
	// Default is the value when nothing is set, as a user would type it;
	// "" means not set (the reader decides, e.g. "inferred").
	Default string
	// Help is the flag's help text; Bind appends the variables.
	Help string
	// Commands bind the flag (Global: every command).
	Commands []Command
	// Group is the section of docs/configuration.md.
	Group       Group
	Sensitivity Sensitivity
	// Once refuses the flag given twice with two values, where the last
	// winning silently could change what a destructive command does (a
	// delete's bounds); other flags keep the last value, as pflag does.
	Once bool

	// Set by register from the kind.
	typ      string
	isSwitch bool
	validate func(string) error
	newValue func() pflag.Value
}

// Name is the flag name, or the first variable of a setting without flag.
func (s *Spec) Name() string {
	if s.Flag != "" {
		return s.Flag
	}
	return s.Env[0]
}

// Type is the flag's placeholder in --help ("string", "int", "duration").
func (s *Spec) Type() string { return s.typ }

// Display renders a value for printing: a Secret as "set (N characters)", a
// KeyID as its first 4 characters and asterisks, others as they are; "" for
// an empty value.
func (s *Spec) Display(value string) string {
	switch s.Sensitivity {
	case Secret:
		return MaskSecret(value)
	case KeyID:
		return MaskKeyID(value)
	case SecretURL:
		if value == "" {
			return ""
		}
		return alert.Redact(value)
	}
	return value
}

// MaskSecret hides a secret completely: "set (40 characters)", "" when
// empty.
func MaskSecret(v string) string {
	if v == "" {
		return ""
	}
	return "set (" + strconv.Itoa(utf8.RuneCountInString(v)) + " characters)"
}

// MaskKeyID shows the first 4 characters of an access key id and hides the
// rest ("tid_********"); ids of 4 characters or less are all hidden.
func MaskKeyID(v string) string {
	switch {
	case v == "":
		return ""
	case utf8.RuneCountInString(v) <= 4:
		return "****"
	}
	return string([]rune(v)[:4]) + "********"
}

// Setting is a setting whose values are of type T.
type Setting[T any] struct {
	Spec
	Kind Kind[T]
}

// all is the registry, in declaration order (registry.go).
var all []*Spec

// register adds s to the registry and returns it.
func register[T any](s *Setting[T]) *Setting[T] {
	k := s.Kind
	s.typ, s.isSwitch = k.Type, k.Switch
	s.validate = func(v string) error { _, err := k.Parse(v); return err }
	s.newValue = func() pflag.Value {
		v := &value[T]{spec: &s.Spec, kind: k, raw: s.Default}
		if bv, ok := any(v).(*value[bool]); ok && k.Switch {
			return switchValue{bv}
		}
		return v
	}
	all = append(all, &s.Spec)
	return s
}

// All returns every setting, in the order of docs/configuration.md.
func All() []*Spec { return slices.Clone(all) }

// CommandNames names the commands that use the setting, as `env show` and
// docs/configuration.md print them: "all" for Global, else the command
// paths ("ingest", "tables create").
func (s *Spec) CommandNames() []string {
	out := make([]string, len(s.Commands))
	for i, c := range s.Commands {
		out[i] = string(c)
		if c == Global {
			out[i] = "all"
		}
	}
	return out
}

// UsedBy reports whether command binds the setting's flag.
func (s *Spec) UsedBy(c Command) bool { return slices.Contains(s.Commands, c) }

// Resolver resolves settings for one invocation: a flag the user set on the
// command, then the variables in the environment, then in the env file,
// then the default. Get and Require record the first error; Err returns it.
type Resolver struct {
	flags *pflag.FlagSet
	env   *config.Env
	err   error
	// route, when set, is the route whose options win over the rest
	// (ForRoute).
	route *route.Route
}

// ForRoute resolves the settings of the tables rt creates: rt's options
// (RouteOptions), then as r does. Its errors are its own (Err).
func (r *Resolver) ForRoute(rt route.Route) *Resolver {
	return &Resolver{flags: r.flags, env: r.env, route: &rt}
}

// NewResolver resolves from flags (the command's, nil for none) and env
// (nil for none).
func NewResolver(flags *pflag.FlagSet, env *config.Env) *Resolver {
	return &Resolver{flags: flags, env: env}
}

// Err is the first error of Get or Require: a *ValueError or a
// *MissingError.
func (r *Resolver) Err() error { return r.err }

func (r *Resolver) record(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Lookup returns the raw value of s and where it came from, without
// parsing it. Source is "" when nothing sets it and it has no default.
func (r *Resolver) Lookup(s *Spec) config.Setting {
	if r.route != nil && s.Flag != "" {
		for _, o := range r.route.Options {
			if o.Name == s.Flag && slices.Contains(RouteOptions, o.Name) {
				return config.Setting{Name: s.Name(), Value: o.Value, Source: config.FromRoute, Key: r.route.String()}
			}
		}
	}
	if fl := r.flag(s); fl != nil {
		return config.Setting{Name: s.Name(), Value: fl.Value.String(), Source: config.FromFlag}
	}
	if r.env != nil {
		if v, k, src := r.env.Lookup(s.Env...); v != "" {
			return config.Setting{Name: s.Name(), Value: v, Source: src, Key: k}
		}
	}
	if s.Default != "" {
		return config.Setting{Name: s.Name(), Value: s.Default, Source: config.FromDefault}
	}
	return config.Setting{Name: s.Name()}
}

// flag is s's flag when the user set it on this command.
func (r *Resolver) flag(s *Spec) *pflag.Flag {
	if r.flags == nil || s.Flag == "" {
		return nil
	}
	fl := r.flags.Lookup(s.Flag)
	if fl == nil || !fl.Changed {
		return nil
	}
	if b, ok := fl.Value.(bound); !ok || b.owner() != s {
		return nil // a flag of the same name from another setting
	}
	return fl
}

// Check validates s's value (a flag was validated when it was set). It
// returns a *ValueError naming where the bad value came from, or nil.
func (s *Spec) Check(r *Resolver) error {
	from := r.Lookup(s)
	if from.Source == "" || from.Source == config.FromFlag {
		return nil
	}
	if err := s.validate(from.Value); err != nil {
		return &ValueError{Spec: s, From: from, Err: err}
	}
	return nil
}

// Resolve returns the value of s, zero when it is not set, and where it
// came from. Errors: *ValueError.
func (s *Setting[T]) Resolve(r *Resolver) (T, config.Setting, error) {
	var zero T
	from := r.Lookup(&s.Spec)
	switch from.Source {
	case "":
		return zero, from, nil
	case config.FromFlag:
		v, _ := r.flag(&s.Spec).Value.(bound).typed().(T)
		return v, from, nil
	}
	v, err := s.Kind.Parse(from.Value)
	if err != nil {
		return zero, from, &ValueError{Spec: &s.Spec, From: from, Err: err}
	}
	return v, from, nil
}

// Get returns the value of s (zero when not set); an error is recorded in
// r (Resolver.Err).
func (s *Setting[T]) Get(r *Resolver) T {
	v, _, err := s.Resolve(r)
	r.record(err)
	return v
}

// Require is Get for a setting that must be set: when it is not, a
// *MissingError naming the flag and the variables is recorded.
func (s *Setting[T]) Require(r *Resolver) T {
	v, from, err := s.Resolve(r)
	if err == nil && strings.TrimSpace(from.Value) == "" {
		err = &MissingError{Spec: &s.Spec}
	}
	r.record(err)
	return v
}

// ValueError is a bad value: From names the flag or the variable (and
// whether it came from the environment or the env file). It is a usage
// error (exit 2). Its message never holds a secret: kinds of secrets
// accept every value.
type ValueError struct {
	Spec *Spec
	From config.Setting
	Err  error
}

func (e *ValueError) Error() string { return e.From.Describe() + ": " + e.Err.Error() }
func (e *ValueError) Unwrap() error { return e.Err }

// MissingError is a required setting that is not set (a usage error).
type MissingError struct {
	Spec *Spec
	// Misspelled are the unknown variables set that most likely stand for
	// one of the setting's (LANDING_BUCKT): NoteMisspelled sets them.
	Misspelled []UnknownVariable
	// Otherwise is another way to do without the setting, told after how
	// to set it ("--route or TIMELAKE_ROUTES for several tables").
	Otherwise string
}

// NoteMisspelled keeps, of unknown (UnknownVariables), those meant for
// one of the setting's variables, for Error to name them.
func (e *MissingError) NoteMisspelled(unknown []UnknownVariable) {
	e.Misspelled = nil
	for _, u := range unknown {
		for _, m := range strings.Split(u.Meant, " or ") {
			if slices.Contains(e.Spec.Env, m) {
				e.Misspelled = append(e.Misspelled, UnknownVariable{Name: u.Name, Source: u.Source, Meant: m})
				break
			}
		}
	}
}

// Error names the flag and the variables that set the setting, and each
// variable set that misspells one of them: "missing setting: pass
// --landing or set LANDING_BUCKET or TIMELAKE_LANDING; LANDING_BUCKT (env
// file) is set: did you mean LANDING_BUCKET?".
func (e *MissingError) Error() string {
	msg := e.how()
	if e.Otherwise != "" {
		msg += ", or " + e.Otherwise
	}
	for _, u := range e.Misspelled {
		msg += fmt.Sprintf("; %s (%s) is set: did you mean %s?", u.Name, u.Source, u.Meant)
	}
	return msg
}

func (e *MissingError) how() string {
	var how []string
	if e.Spec.Flag != "" {
		how = append(how, "pass --"+e.Spec.Flag)
	}
	if len(e.Spec.Env) > 0 {
		how = append(how, "set "+strings.Join(e.Spec.Env, " or "))
	}
	return "missing setting: " + strings.Join(how, " or ")
}

// IsUsage reports whether err is a settings error (*ValueError or
// *MissingError), which the command line maps to exit code 2.
func IsUsage(err error) bool {
	var ve *ValueError
	var me *MissingError
	return errors.As(err, &ve) || errors.As(err, &me)
}

// EnvHelp renders the " (env A, B)" suffix of a flag's help text.
func EnvHelp(keys ...string) string {
	if len(keys) == 0 {
		return ""
	}
	return " (env " + strings.Join(keys, ", ") + ")"
}
