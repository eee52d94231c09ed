// Package route maps landing keys to the tables they load into: the rules
// `--route PATTERN=TABLE` and TIMELAKE_ROUTES give one ingest or serve for
// several tables.
//
// PATTERN matches landing keys as source profiles do: a glob over the
// whole key (`*` within one folder, `**` any depth, `?`, `[...]`, `{a,b}`;
// github.com/bmatcuk/doublestar) or, without glob characters, a key
// prefix. TABLE is a table name (namespace.table) in which `{1}`, `{2}`,
// ... stand for the key's first, second, ... folder, so that one route can
// name a table per folder (`*/**=iot.{1}`). A name made from a key is
// checked like any table name: a folder that is empty, holds a dot or
// another character a table name may not (a path trick such as `..`
// among them) makes the key unroutable, never a table elsewhere.
//
// A rule may end with options, `;NAME=VALUE` each, that set the table
// defaults of the tables it creates (`readings/**=iot.readings;partition=hour`):
// the names are those of ingest's flags, a value holding commas is written
// between braces (`series-key={device,site}`), as a comma between braces
// belongs to the rule. This package reads their form; the settings
// registry says which names a route takes and reads their values
// (settings.RouteRules).
//
// A key no route takes, or two routes take to different tables, or two
// routes with different options take to tables either can name, is an
// error naming the key and the routes: the key is reported and left where
// it is.
package route

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/timelake/timelake/internal/tablename"
)

// Route is one PATTERN=TABLE rule, with its options.
type Route struct {
	Pattern string // a glob over the landing key, or a key prefix
	Table   string // a table name; {N} is the key's N-th folder (from 1)
	// Options are the table defaults of the tables the route creates, in
	// the order written (docs/routing.md, "Table defaults per route").
	Options []Option
	glob    bool
	folders int // the highest N of the {N} in Table
}

// Option is one NAME=VALUE option of a rule: the name of an ingest flag
// and its value as the flag takes it (without the braces of the rule).
type Option struct {
	Name, Value string
}

// String renders the option as a rule holds it: a value with a comma
// between braces.
func (o Option) String() string {
	if strings.Contains(o.Value, ",") {
		return o.Name + "={" + o.Value + "}"
	}
	return o.Name + "=" + o.Value
}

// String renders the rule as it is written, with its options.
func (r Route) String() string { return r.Pattern + "=" + r.Table + r.optionsText() }

// optionsText renders the options as the rule ends with them
// (";NAME=VALUE" each), "" for none.
func (r Route) optionsText() string {
	var b strings.Builder
	for _, o := range r.Options {
		b.WriteString(";" + o.String())
	}
	return b.String()
}

// sameOptions reports whether r and o give their tables the same
// defaults: the same options, in any order.
func (r Route) sameOptions(o Route) bool {
	if len(r.Options) == 0 && len(o.Options) == 0 {
		return true
	}
	key := func(r Route) []string {
		out := make([]string, len(r.Options))
		for i, o := range r.Options {
			out[i] = o.String()
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(r), key(o))
}

// Routes are the rules of one run, in the order given.
type Routes []Route

// ErrUnrouted is the error of a key no route takes.
var ErrUnrouted = errors.New("no route takes the key")

// ErrAmbiguous is the error of a key two routes take to different tables,
// or to a table that two routes with different options can name.
var ErrAmbiguous = errors.New("two routes take the key")

// Split splits the value of TIMELAKE_ROUTES into rules: one per line or
// separated by commas (a comma inside braces belongs to a glob's
// alternatives). Blank rules and lines starting with # are left out.
func Split(v string) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" && !strings.HasPrefix(s, "#") {
			out = append(out, s)
		}
	}
	depth, start := 0, 0
	for i, r := range v {
		switch r {
		case '{':
			depth++
		case '}':
			depth = max(depth-1, 0)
		case '\n':
			add(v[start:i])
			start, depth = i+1, 0
		case ',':
			if depth == 0 {
				add(v[start:i])
				start = i + 1
			}
		}
	}
	add(v[start:])
	return out
}

// Parse reads rules written PATTERN=TABLE, each optionally followed by
// options ;NAME=VALUE. Errors name the rule and what was expected; two
// rules with different options are refused when a table either names
// whatever the key can be named by the other (or both name their tables
// alike): the table would get two sets of defaults.
func Parse(rules []string) (Routes, error) {
	out := make(Routes, 0, len(rules))
	for _, rule := range rules {
		r, err := parseRule(rule)
		if err != nil {
			return nil, err
		}
		for _, o := range out {
			if o.Pattern == r.Pattern && o.Table != r.Table {
				return nil, fmt.Errorf("routes %q and %q: the same pattern to two tables; every key it takes would be refused", o, r)
			}
			if t, ok := o.defaultsConflict(r); ok {
				return nil, fmt.Errorf("routes %q and %q: both name the table %s, with different options; give the options to one route of the table, or make the tables differ", o, r, t)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// defaultsConflict reports whether r and o have different options and name
// a table alike (the same TABLE), or one names whatever the key a table
// the other can name; it returns that table.
func (r Route) defaultsConflict(o Route) (string, bool) {
	switch {
	case r.sameOptions(o):
		return "", false
	case r.Table == o.Table:
		return r.Table, true
	}
	for _, pair := range [][2]Route{{r, o}, {o, r}} {
		if t, ok := pair[0].Fixed(); ok && pair[1].CanName(t) {
			return t.String(), true
		}
	}
	return "", false
}

// CanName reports whether the route names the table t for some key: its
// table, or its table with each {N} as a folder that can be part of a
// table name.
func (r Route) CanName(t tablename.Name) bool {
	sample, err := r.expand(func(int) (string, error) { return "\x00", nil })
	if err != nil {
		return false
	}
	return matchParts(t.String(), strings.Split(sample, "\x00"))
}

// matchParts reports whether s is lits[0], a folder, lits[1], a folder,
// ..., lits[len-1], each folder a valid part of a table name.
func matchParts(s string, lits []string) bool {
	if !strings.HasPrefix(s, lits[0]) {
		return false
	}
	s = s[len(lits[0]):]
	if len(lits) == 1 {
		return s == ""
	}
	for k := 1; k <= len(s); k++ {
		if tablename.ValidPart(s[:k]) && matchParts(s[k:], lits[1:]) {
			return true
		}
	}
	return false
}

func parseRule(rule string) (Route, error) {
	bad := func(format string, args ...any) (Route, error) {
		return Route{}, fmt.Errorf("route %q: %s", rule, fmt.Sprintf(format, args...))
	}
	// The options start at the first ';' after an '=': a pattern may hold
	// '=' (date=2026-01-05/**) but the table never holds ';'.
	head, opts := rule, ""
	if eq := strings.IndexByte(rule, '='); eq >= 0 {
		if semi := strings.IndexByte(rule[eq:], ';'); semi >= 0 {
			head, opts = rule[:eq+semi], rule[eq+semi+1:]
		}
	}
	options, err := parseOptions(opts, head != rule)
	if err != nil {
		return bad("%v", err)
	}
	i := strings.LastIndex(head, "=")
	if i < 0 {
		return bad("expected PATTERN=TABLE, such as 'readings/**=iot.readings' or '*/**=iot.{1}'")
	}
	r := Route{Pattern: strings.TrimSpace(head[:i]), Table: strings.TrimSpace(head[i+1:]), Options: options}
	if r.Pattern == "" {
		return bad("no pattern before '=': expected a glob over the landing key (readings/**) or a key prefix (readings/)")
	}
	if r.Table == "" {
		return bad("no table after '=': expected a table name such as iot.readings")
	}
	if strings.HasPrefix(r.Pattern, "/") || strings.HasPrefix(r.Pattern, "./") {
		return bad("landing keys never start with %q: write the pattern from the key's first folder (readings/** for readings/gw-1/f.csv)", r.Pattern[:strings.IndexByte(r.Pattern, '/')+1])
	}
	r.glob = strings.ContainsAny(r.Pattern, "*?[{")
	if r.glob && !doublestar.ValidatePattern(r.Pattern) {
		return bad("%q is not a valid glob: a '[' or '{' without its ']' or '}', or a '\\' at the end", r.Pattern)
	}
	// The table with every {N} as a plain folder name must be a table name.
	sample, err := r.expand(func(n int) (string, error) {
		r.folders = max(r.folders, n)
		return "x", nil
	})
	if err != nil {
		return bad("%v", err)
	}
	if _, err := tablename.Parse(sample); err != nil {
		return bad("%v", err)
	}
	return r, nil
}

// parseOptions reads the options of a rule, "NAME=VALUE;NAME=VALUE"
// (given: the rule has a ';' after its table). A value between braces is
// taken without them.
func parseOptions(s string, given bool) ([]Option, error) {
	if !given {
		return nil, nil
	}
	var out []Option
	for _, part := range strings.Split(s, ";") {
		name, value, ok := strings.Cut(part, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		switch {
		case strings.TrimSpace(part) == "":
			return nil, errors.New("an empty option (';' without NAME=VALUE): expected options such as ;time-column=ts;partition=hour after the table")
		case !ok || name == "":
			return nil, fmt.Errorf("option %q: expected NAME=VALUE, such as partition=hour", strings.TrimSpace(part))
		case value == "":
			return nil, fmt.Errorf("option %q: no value after '='", name)
		}
		if strings.HasPrefix(value, "{") && strings.HasSuffix(value, "}") {
			value = strings.TrimSpace(value[1 : len(value)-1])
		}
		for _, o := range out {
			if o.Name == name {
				return nil, fmt.Errorf("option %q given twice", name)
			}
		}
		out = append(out, Option{Name: name, Value: value})
	}
	return out, nil
}

// expand replaces every {N} of r.Table with folder(N).
func (r Route) expand(folder func(n int) (string, error)) (string, error) {
	var b strings.Builder
	rest := r.Table
	for {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			if strings.IndexByte(rest, '}') >= 0 {
				return "", fmt.Errorf("a '}' without its '{' in the table %q", r.Table)
			}
			b.WriteString(rest)
			return b.String(), nil
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return "", fmt.Errorf("a '{' without its '}' in the table %q", r.Table)
		}
		b.WriteString(rest[:open])
		n, err := strconv.Atoi(rest[open+1 : open+end])
		if err != nil || n < 1 {
			return "", fmt.Errorf("%q in the table %q: expected {1}, {2}, ... for the key's first, second, ... folder", rest[open:open+end+1], r.Table)
		}
		v, err := folder(n)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
		rest = rest[open+end+1:]
	}
}

// Fixed returns the table of a route whose table names no folder of the
// key (no {N}): the one table it loads whatever key it takes.
func (r Route) Fixed() (tablename.Name, bool) {
	if r.folders > 0 {
		return tablename.Name{}, false
	}
	t, err := tablename.Parse(r.Table)
	return t, err == nil
}

// Names reports whether the route may load into t: its table, or, with
// {N}, a table that folders of some key make (each folder a part of a
// table name).
func (r Route) Names(t tablename.Name) bool {
	if f, ok := r.Fixed(); ok {
		return f == t
	}
	sample, err := r.expand(func(int) (string, error) { return "\x00", nil })
	if err != nil {
		return false
	}
	parts := strings.Split(sample, "\x00")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	pattern := strings.Join(parts, "[A-Za-z0-9_-]+")
	if !strings.Contains(r.Table, ".") { // a bare table is in namespace default
		pattern = `default\.` + pattern
	}
	ok, _ := regexp.MatchString("^"+pattern+"$", t.String())
	return ok
}

// Matches reports whether the route takes key.
func (r Route) Matches(key string) bool {
	if r.glob {
		ok, _ := doublestar.Match(r.Pattern, key)
		return ok
	}
	return strings.HasPrefix(key, r.Pattern)
}

// TableFor returns the table r names for key, which it matches.
func (r Route) TableFor(key string) (tablename.Name, error) {
	folders := strings.Split(key, "/")
	folders = folders[:len(folders)-1] // the last part is the file's name
	name, err := r.expand(func(n int) (string, error) {
		if n > len(folders) {
			return "", fmt.Errorf("route %s: the table needs the key's folder {%d}, and %q has %d", r, n, key, len(folders))
		}
		if f := folders[n-1]; !tablename.ValidPart(f) {
			return "", fmt.Errorf("route %s: folder {%d} of %q is %q, which cannot be part of a table name (letters, digits, '_' and '-' only)", r, n, key, f)
		}
		return folders[n-1], nil
	})
	if err != nil {
		return tablename.Name{}, err
	}
	t, err := tablename.Parse(name)
	if err != nil {
		return tablename.Name{}, fmt.Errorf("route %s: key %q gives %w", r, key, err)
	}
	return t, nil
}

// Table returns the table key loads into and the route that takes it.
// Errors: ErrUnrouted when no route takes it; ErrAmbiguous, naming both,
// when two routes take it to different tables; a route whose table needs
// a folder the key does not have, or whose folders do not make a table
// name.
func (rs Routes) Table(key string) (tablename.Name, Route, error) {
	var found Route
	var table tablename.Name
	ok := false
	for _, r := range rs {
		if !r.Matches(key) {
			continue
		}
		t, err := r.TableFor(key)
		if err != nil {
			return tablename.Name{}, r, err
		}
		if ok && t != table {
			return tablename.Name{}, found, fmt.Errorf("%w %q: %s (table %s) and %s (table %s); change the patterns so that one takes it",
				ErrAmbiguous, key, found, table, r, t)
		}
		if !ok {
			found, table, ok = r, t, true
		}
	}
	if !ok {
		return tablename.Name{}, Route{}, fmt.Errorf("%w %q (routes: %s)", ErrUnrouted, key, rs)
	}
	// The table's defaults must be one route's: every route that can
	// name it has the same options.
	for _, r := range rs {
		if !r.sameOptions(found) && r.CanName(table) {
			return tablename.Name{}, found, fmt.Errorf("%w %q to table %s, which %s and %s both name with different options; give the options to one route of the table, or change the patterns so that one names it",
				ErrAmbiguous, key, table, found, r)
		}
	}
	return table, found, nil
}

// Naming returns the first route that can name the table t, whose
// options are t's defaults: a key of t is refused when routes with
// different options can name it (Table).
func (rs Routes) Naming(t tablename.Name) (Route, bool) {
	for _, r := range rs {
		if r.CanName(t) {
			return r, true
		}
	}
	return Route{}, false
}

// Accepts returns whether the routes take a key to table t: the key filter
// of t's run.
func (rs Routes) Accepts(t tablename.Name) func(key string) bool {
	return func(key string) bool {
		kt, _, err := rs.Table(key)
		return err == nil && kt == t
	}
}

// Rules are the rules as written, one each, never nil (a report's list).
func (rs Routes) Rules() []string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return parts
}

// String renders the rules as TIMELAKE_ROUTES takes them, comma-separated.
func (rs Routes) String() string { return strings.Join(rs.Rules(), ", ") }

// Unrouted is a landing key no route takes, or two take to different
// tables, and why: it is left where it is.
type Unrouted struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// Line is the line a command prints for the key, among its per-file lines.
func (u Unrouted) Line() string {
	return fmt.Sprintf("%-15s %s  %s; it stays in the landing", "unrouted", u.Key, u.Reason)
}

// Plan routes the keys of one listing of the landing: the tables they go
// to, with those a route names whatever the key (Route.Fixed), and the
// keys no route takes. The zero value is not ready: use Routes.Plan.
type Plan struct {
	rs       Routes
	seen     map[tablename.Name]bool
	tables   []tablename.Name
	Unrouted []Unrouted
}

// Plan starts the routing of a listing, with the tables of the routes
// that name one whatever the key.
func (rs Routes) Plan() *Plan {
	p := &Plan{rs: rs, seen: map[tablename.Name]bool{}}
	for _, r := range rs {
		if t, ok := r.Fixed(); ok {
			p.AddTable(t)
		}
	}
	return p
}

// AddTable adds t to the tables of the plan, once.
func (p *Plan) AddTable(t tablename.Name) {
	if !p.seen[t] {
		p.seen[t] = true
		p.tables = append(p.tables, t)
	}
}

// Add routes key (Routes.Table): its table joins the plan's tables, or the
// key its unrouted keys (ok false).
func (p *Plan) Add(key string) (tablename.Name, Route, bool) {
	t, r, err := p.rs.Table(key)
	if err != nil {
		p.Unrouted = append(p.Unrouted, Unrouted{Key: key, Reason: err.Error()})
		return t, r, false
	}
	p.AddTable(t)
	return t, r, true
}

// AddNamed adds the tables of ts that a route may load into (Route.Names):
// given a warehouse's tables, those of a {N} route none of whose keys is
// listed join the plan too.
func (p *Plan) AddNamed(ts []tablename.Name) {
	for _, t := range ts {
		if slices.ContainsFunc(p.rs, func(r Route) bool { return r.Names(t) }) {
			p.AddTable(t)
		}
	}
}

// Templated reports whether a route names its table from the key's
// folders ({N}): the tables it loads are known from the keys only.
func (rs Routes) Templated() bool {
	return slices.ContainsFunc(rs, func(r Route) bool { return r.folders > 0 })
}

// Tables are the tables of the plan, in name order.
func (p *Plan) Tables() []tablename.Name {
	return slices.SortedFunc(slices.Values(p.tables), func(a, b tablename.Name) int { return strings.Compare(a.String(), b.String()) })
}
