// Package profile is source profiles: named sets of the settings that say
// how a landing file is read (its CSV dialect, column types, time column,
// unit and zone, the schema changes it may bring, what a bad row does),
// chosen by the file's landing key (a prefix or a glob), and stored as
// table properties, timelake.profile.<name>.<setting>, so that every
// writer of the table (cron pollers, serve, a second poller on another
// prefix), tables show and env check read the same ones, and a gateway's
// upload --validate applies the one the poller will (docs/schema.md,
// "Source profiles"). A key that two profiles match is an error naming
// both: which one applies would be a guess.
//
// Globs are matched by doublestar (a well-kept library: * within a path
// segment, ** across segments, ?, [...] and {a,b}).
package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/bmatcuk/doublestar/v4"

	"github.com/timelake/timelake/internal/decode"
)

// The table properties of the load settings a profile may set: lake's
// PropEvolve, PropOnError and PropMaxBadRows (a test compares them), named
// here so that profiles read without the lake (the gateway binary).
const (
	propEvolve     = "timelake.evolve"
	propOnError    = "timelake.on-error"
	propMaxBadRows = "timelake.max-bad-rows"
)

// PropertyPrefix starts every profile property: timelake.profile.<name>.<setting>.
const PropertyPrefix = "timelake.profile."

// The settings of a profile (the last part of its properties).
const (
	SettingMatch           = "match"
	SettingCSVDelimiter    = "csv-delimiter"
	SettingCSVDecimalComma = "csv-decimal-comma"
	SettingCSVNull         = "csv-null"
	SettingColumns         = "columns"
	SettingTimeColumn      = "time-column"
	SettingTimeUnit        = "time-unit"
	SettingAssumeTimezone  = "assume-timezone"
	SettingEvolve          = "evolve"
	SettingOnError         = "on-error"
	SettingMaxBadRows      = "max-bad-rows"
	SettingFormat          = "format"
)

// Settings are the settings a profile may hold, with what each accepts and
// the run setting (flag) it stands in for.
var Settings = map[string]string{
	SettingMatch:           "the keys it applies to: comma-separated key prefixes (site-berlin/) or globs (*/berlin-*.csv, ** across folders); required",
	SettingCSVDelimiter:    "as --csv-delimiter: one character such as ; or |, or tab",
	SettingCSVDecimalComma: "as --csv-decimal-comma: true or false",
	SettingCSVNull:         "as --csv-null: comma-separated cell texts read as null",
	SettingColumns:         "as --column: comma-separated NAME:TYPE",
	SettingTimeColumn:      "as --time-column: the files' time column, read as the table's",
	SettingTimeUnit:        "as --time-unit: s, ms, us or ns",
	SettingAssumeTimezone:  "as --assume-timezone: an IANA zone such as Europe/Berlin",
	SettingEvolve:          "as --evolve: off, add-columns or widen",
	SettingOnError:         "as --on-error: file or skip-rows",
	SettingMaxBadRows:      "as --max-bad-rows: rows (100), a fraction (0.05) or a percentage (5%)",
	SettingFormat:          "the format of keys without a known extension: csv, tsv, json or parquet (a known extension wins)",
}

// FileSettings are the settings that say how one landing file is read:
// the run's (flags, environment, table properties), with a profile's
// applied.
type FileSettings struct {
	CSV            decode.CSV
	Columns        map[string]arrow.DataType
	TimeColumn     string // the files' time column; "" means the table's (or inferred)
	TimeUnit       string
	AssumeLocation *time.Location
	Evolve         decode.Evolution
	OnError        decode.OnError
	MaxBadRows     decode.MaxBadRows
	Format         decode.Format // of a key without a known extension
}

// Profile is one source profile.
type Profile struct {
	Name  string
	Match []string // key prefixes and globs
	// Values are its settings as its properties write them, by setting
	// (SettingMatch too).
	Values map[string]string

	csvDelimiter   *rune
	decimalComma   *bool
	null           []string
	nullSet        bool
	columns        map[string]arrow.DataType
	assumeLocation *time.Location
	maxBadRows     *decode.MaxBadRows
	format         decode.Format
}

// Set is a table's profiles, by name.
type Set []*Profile

// ErrAmbiguous is the cause of the error of a key that two profiles match.
var ErrAmbiguous = errors.New("the key matches two source profiles")

// Property is the table property of a profile's setting.
func Property(name, setting string) string { return PropertyPrefix + name + "." + setting }

// splitProperty cuts a profile property into the profile's name and the
// setting; ok is false for other keys.
func splitProperty(key string) (name, setting string, ok bool) {
	rest, ok := strings.CutPrefix(key, PropertyPrefix)
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return rest, "", true
	}
	return rest[:i], rest[i+1:], true
}

// IsProperty reports whether key is a profile property (or names one,
// timelake.profile.<name>, as tables alter --unset takes a whole profile).
func IsProperty(key string) bool { return strings.HasPrefix(key, PropertyPrefix) }

// IsProfileName reports whether key names a whole profile,
// timelake.profile.<name> (tables alter --unset removes all of it).
func IsProfileName(key string) bool {
	rest, ok := strings.CutPrefix(key, PropertyPrefix)
	return ok && validName(rest)
}

// validName: a profile's name is a word of letters, digits, - and _.
func validName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// ValidateProperty checks one profile property for tables alter: its
// name, its setting and its value. Errors name the property and what it
// accepts.
func ValidateProperty(key, value string) error {
	name, setting, err := checkKey(key)
	if err != nil {
		return err
	}
	p := &Profile{Name: name, Values: map[string]string{}}
	if err := p.set(setting, value); err != nil {
		return fmt.Errorf("%s=%q: %w", key, value, err)
	}
	return nil
}

// CheckKey checks a profile property's name and setting (not a value):
// what tables alter --unset takes.
func CheckKey(key string) error {
	_, _, err := checkKey(key)
	return err
}

// checkKey splits a profile property into a valid name and a known
// setting.
func checkKey(key string) (name, setting string, err error) {
	name, setting, ok := splitProperty(key)
	switch {
	case !ok:
		return "", "", fmt.Errorf("%s is not a source profile property", key)
	case !validName(name):
		return "", "", fmt.Errorf("%s: a profile's name is letters, digits, - and _ (%s<name>.<setting>)", key, PropertyPrefix)
	}
	if _, known := Settings[setting]; !known {
		return "", "", fmt.Errorf("%s: unknown profile setting %q (the settings: %s)", key, setting, strings.Join(slices.Sorted(maps.Keys(Settings)), ", "))
	}
	return name, setting, nil
}

// set parses one setting's value into p.
func (p *Profile) set(setting, v string) error {
	p.Values[setting] = v
	var err error
	switch setting {
	case SettingMatch:
		p.Match, err = parseMatch(v)
	case SettingCSVDelimiter:
		var r rune
		if r, err = decode.ParseDelimiter(v); err == nil {
			p.csvDelimiter = &r
		}
	case SettingCSVDecimalComma:
		var b bool
		if b, err = strconv.ParseBool(v); err != nil {
			err = errors.New("expected true or false")
		} else {
			p.decimalComma = &b
		}
	case SettingCSVNull:
		p.nullSet = true
		p.null = nil
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				p.null = append(p.null, t)
			}
		}
	case SettingColumns:
		p.columns, err = decode.ParseColumnTypes(v)
	case SettingTimeColumn:
		if strings.TrimSpace(v) == "" {
			err = errors.New("expected a column name")
		}
	case SettingTimeUnit:
		if v != "s" && v != "ms" && v != "us" && v != "ns" {
			err = errors.New("expected s, ms, us or ns")
		}
	case SettingAssumeTimezone:
		p.assumeLocation, err = decode.ParseZone(v)
	case SettingEvolve:
		_, err = decode.ParseEvolution(v)
	case SettingOnError:
		_, err = decode.ParseOnError(v)
	case SettingMaxBadRows:
		var m decode.MaxBadRows
		if m, err = decode.ParseMaxBadRows(v); err == nil {
			p.maxBadRows = &m
		}
	case SettingFormat:
		p.format, err = decode.ParseFormat(v)
	}
	return err
}

// parseMatch reads comma-separated prefixes and globs (commas inside
// braces belong to a glob's alternatives).
func parseMatch(v string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	add := func(s string) error {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil
		}
		if isGlob(s) && !doublestar.ValidatePattern(s) {
			return fmt.Errorf("%q is not a valid glob", s)
		}
		out = append(out, s)
		return nil
	}
	for i, r := range v {
		switch r {
		case '{':
			depth++
		case '}':
			depth = max(depth-1, 0)
		case ',':
			if depth == 0 {
				if err := add(v[start:i]); err != nil {
					return nil, err
				}
				start = i + 1
			}
		}
	}
	if err := add(v[start:]); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("expected key prefixes or globs such as site-berlin/ or */berlin-*.csv")
	}
	return out, nil
}

// isGlob reports whether a match pattern is a glob, not a prefix.
func isGlob(s string) bool { return strings.ContainsAny(s, "*?[{") }

// Matches reports whether p applies to a landing key: the key starts
// with one of its prefixes, or a glob matches the whole key.
func (p *Profile) Matches(key string) bool {
	for _, m := range p.Match {
		if isGlob(m) {
			if ok, _ := doublestar.Match(m, key); ok {
				return true
			}
		} else if strings.HasPrefix(key, m) {
			return true
		}
	}
	return false
}

// FromProperties reads the profiles of a table's properties. Errors name
// the first property that does not parse, and a profile without match.
func FromProperties(props map[string]string) (Set, error) {
	byName := map[string]*Profile{}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if !IsProperty(k) {
			continue
		}
		name, setting, err := checkKey(k)
		if err != nil {
			return nil, fmt.Errorf("source profiles: %w", err)
		}
		p := byName[name]
		if p == nil {
			p = &Profile{Name: name, Values: map[string]string{}}
			byName[name] = p
		}
		if err := p.set(setting, props[k]); err != nil {
			return nil, fmt.Errorf("source profile %s: %s=%q: %w", name, k, props[k], err)
		}
	}
	var out Set
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		p := byName[name]
		if len(p.Match) == 0 {
			return nil, fmt.Errorf("source profile %s has no %s: set it to the key prefixes or globs it applies to", name, Property(name, SettingMatch))
		}
		if p.columns != nil {
			if err := decode.CheckTimeColumnType(p.Values[SettingTimeColumn], p.columns); err != nil {
				return nil, fmt.Errorf("source profile %s: %w", name, err)
			}
		}
		out = append(out, p)
	}
	if err := out.checkPrefixes(); err != nil {
		return nil, err
	}
	return out, nil
}

// checkPrefixes refuses two profiles with prefixes one of which starts the
// other: every key below the longer one would match both. (Globs are
// checked key by key, in For.)
func (s Set) checkPrefixes() error {
	for i, a := range s {
		for _, b := range s[i+1:] {
			for _, pa := range a.Match {
				for _, pb := range b.Match {
					if isGlob(pa) || isGlob(pb) || !(strings.HasPrefix(pa, pb) || strings.HasPrefix(pb, pa)) {
						continue
					}
					return fmt.Errorf("source profiles %s (%s) and %s (%s) both match the keys below %q: make their prefixes disjoint",
						a.Name, pa, b.Name, pb, longer(pa, pb))
				}
			}
		}
	}
	return nil
}

func longer(a, b string) string {
	if len(a) >= len(b) {
		return a
	}
	return b
}

// For returns the profile that applies to a landing key, nil when none
// does. A key that two profiles match is an error wrapping ErrAmbiguous
// that names both.
func (s Set) For(key string) (*Profile, error) {
	var found *Profile
	for _, p := range s {
		if !p.Matches(key) {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("%w: %s (%s) and %s (%s); change their %s settings so that one applies (timelake tables alter)",
				ErrAmbiguous, found.Name, found.Values[SettingMatch], p.Name, p.Values[SettingMatch], SettingMatch)
		}
		found = p
	}
	return found, nil
}

// Find returns the profile of that name, nil when there is none.
func (s Set) Find(name string) *Profile {
	for _, p := range s {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Apply returns fs with p's settings in place of the run's: a profile's
// setting wins over the flag, the environment and the table property of
// the same setting. Its columns are added to fs's (the profile's type wins
// for a column in both). A nil p returns fs.
func (p *Profile) Apply(fs FileSettings) FileSettings {
	if p == nil {
		return fs
	}
	if p.csvDelimiter != nil {
		fs.CSV.Delimiter = *p.csvDelimiter
	}
	if p.decimalComma != nil {
		fs.CSV.DecimalComma = *p.decimalComma
	}
	if p.nullSet {
		fs.CSV.Null = slices.Clone(p.null)
	}
	if len(p.columns) > 0 {
		cols := maps.Clone(fs.Columns)
		if cols == nil {
			cols = map[string]arrow.DataType{}
		}
		maps.Copy(cols, p.columns)
		fs.Columns = cols
	}
	if v := p.Values[SettingTimeColumn]; v != "" {
		fs.TimeColumn = v
	}
	if v := p.Values[SettingTimeUnit]; v != "" {
		fs.TimeUnit = v
	}
	if p.assumeLocation != nil {
		fs.AssumeLocation = p.assumeLocation
	}
	if v := p.Values[SettingEvolve]; v != "" {
		fs.Evolve = decode.Evolution(v)
	}
	if v := p.Values[SettingOnError]; v != "" {
		fs.OnError = decode.OnError(v)
	}
	if p.maxBadRows != nil {
		fs.MaxBadRows = *p.maxBadRows
	}
	if p.format != "" {
		fs.Format = p.format
	}
	return fs
}

// Properties are p's table properties.
func (p *Profile) Properties() map[string]string {
	out := make(map[string]string, len(p.Values))
	for k, v := range p.Values {
		out[Property(p.Name, k)] = v
	}
	return out
}

// Keys are the properties of the profile name in props, sorted: what
// tables alter --unset timelake.profile.<name> removes.
func Keys(props map[string]string, name string) []string {
	var out []string
	for k := range props {
		if n, _, ok := splitProperty(k); ok && n == name {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TableDefaults fills in the settings fs leaves unset (its Evolve, OnError
// and MaxBadRows, which the run's flags and environment set) from a
// table's properties: timelake.evolve, timelake.on-error and
// timelake.max-bad-rows. A property that does not read is ignored (warn
// is told which and why), as without it.
func TableDefaults(fs FileSettings, props map[string]string, warn func(property string, err error)) FileSettings {
	if fs.Evolve == "" && props[propEvolve] != "" {
		if v, err := decode.ParseEvolution(props[propEvolve]); err != nil {
			warn(propEvolve, err)
		} else {
			fs.Evolve = v
		}
	}
	if fs.OnError == "" && props[propOnError] != "" {
		if v, err := decode.ParseOnError(props[propOnError]); err != nil {
			warn(propOnError, err)
		} else {
			fs.OnError = v
		}
	}
	if !fs.MaxBadRows.IsSet() && props[propMaxBadRows] != "" {
		if v, err := decode.ParseMaxBadRows(props[propMaxBadRows]); err != nil {
			warn(propMaxBadRows, err)
		} else {
			fs.MaxBadRows = v
		}
	}
	return fs
}

// ExportFormat names the format of an exported profile (Export.Format).
const ExportFormat = "timelake-source-profile/1"

// Export is a source profile written to a file for gateways (timelake
// tables profile), so that upload --validate reads a file as the poller
// will without reaching the warehouse: the profile's settings, the
// table's load settings it does not set (evolve, on-error, max-bad-rows),
// and the table's schema and time column at the time of the export.
type Export struct {
	Format     string            `json:"format"`
	Table      string            `json:"table"`
	Profile    string            `json:"profile"`
	Settings   map[string]string `json:"settings"` // by setting name (match, csv-delimiter, ...)
	TimeColumn string            `json:"time_column"`
	// Schema is the table's current Iceberg schema (its JSON form in the
	// table metadata).
	Schema     json.RawMessage `json:"schema"`
	ExportedAt time.Time       `json:"exported_at"`
}

// NewExport exports profile name of a table (its properties, current
// schema in its JSON form, and time column). Errors: the profiles do not
// read, or none has that name.
func NewExport(table string, props map[string]string, schema json.RawMessage, timeColumn, name string, now time.Time) (Export, error) {
	set, err := FromProperties(props)
	if err != nil {
		return Export{}, err
	}
	p := set.Find(name)
	if p == nil {
		names := make([]string, len(set))
		for i, q := range set {
			names[i] = q.Name
		}
		if len(names) == 0 {
			return Export{}, fmt.Errorf("%s has no source profile %q: it has none (tables profile exports one; define it first, docs/schema.md \"Source profiles\")", table, name)
		}
		return Export{}, fmt.Errorf("%s has no source profile %q (its profiles: %s)", table, name, strings.Join(names, ", "))
	}
	settings := maps.Clone(p.Values)
	for setting, prop := range map[string]string{SettingEvolve: propEvolve, SettingOnError: propOnError, SettingMaxBadRows: propMaxBadRows} {
		if _, ok := settings[setting]; !ok && props[prop] != "" {
			settings[setting] = props[prop]
		}
	}
	return Export{Format: ExportFormat, Table: table, Profile: name, Settings: settings, TimeColumn: timeColumn,
		Schema: schema, ExportedAt: now.UTC()}, nil
}

// ReadExport reads an exported profile. Errors name the file and what
// does not read.
func ReadExport(path string) (Export, *Profile, *arrow.Schema, error) {
	var e Export
	body, err := os.ReadFile(path)
	if err != nil {
		return e, nil, nil, err
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Format != ExportFormat {
		return e, nil, nil, fmt.Errorf("%s: not a source profile exported by timelake tables profile (format %s)", path, ExportFormat)
	}
	p := &Profile{Name: e.Profile, Values: map[string]string{}}
	for _, k := range slices.Sorted(maps.Keys(e.Settings)) {
		if _, known := Settings[k]; !known {
			return e, nil, nil, fmt.Errorf("%s: unknown profile setting %q", path, k)
		}
		if err := p.set(k, e.Settings[k]); err != nil {
			return e, nil, nil, fmt.Errorf("%s: %s=%q: %w", path, k, e.Settings[k], err)
		}
	}
	if len(p.Match) == 0 {
		return e, nil, nil, fmt.Errorf("%s: the profile has no match", path)
	}
	as, err := arrowSchemaOf(e.Schema)
	if err != nil {
		return e, nil, nil, fmt.Errorf("%s: the table's schema does not read: %w", path, err)
	}
	return e, p, as, nil
}
