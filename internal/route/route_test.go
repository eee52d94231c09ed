package route

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/tablename"
)

func TestSplit(t *testing.T) {
	got := Split("readings/**=iot.readings, events/{a,b}/**=iot.events\n# a comment\n\n  */logs/*.csv=iot.logs  \n")
	want := []string{"readings/**=iot.readings", "events/{a,b}/**=iot.events", "*/logs/*.csv=iot.logs"}
	if !slices.Equal(got, want) {
		t.Fatalf("Split: %q, want %q", got, want)
	}
}

func TestParseRefusesWithTheRule(t *testing.T) {
	for rule, want := range map[string]string{
		"readings/**":           "expected PATTERN=TABLE",
		"=iot.readings":         "no pattern",
		"readings/**=":          "no table",
		"readings/[=iot.x":      "not a valid glob",
		"*/**=iot.{0}":          "expected {1}, {2}",
		"*/**=iot.{x}":          "expected {1}, {2}",
		"*/**=iot.{1":           "without its '}'",
		"*/**=iot.1}":           "without its '{'",
		"*/**=iot.readings.x":   "expected namespace.table",
		"*/**=iot.read ings":    "must match",
		"*/**=iot/{1}":          "must match",
		"readings/=a.b.{1}.{2}": "expected namespace.table",
		"/readings/**=iot.r":    "never start with \"/\"",
		"./readings/**=iot.r":   "never start with \"./\"",
	} {
		_, err := Parse([]string{"ok/**=iot.ok", rule})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), rule) {
			t.Errorf("Parse(%q): %v; want an error naming the rule and %q", rule, err, want)
		}
	}
}

func TestTable(t *testing.T) {
	rs, err := Parse(Split("readings/**=iot.readings, events/=iot.events, sites/*/**=site_{2}.raw, */logs/**=iot.{1}_logs"))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"readings/site-berlin/gw-7/0001.csv": "iot.readings",
		"readings/0001.csv":                  "iot.readings",
		"events/x.parquet":                   "iot.events",
		"sites/berlin/f.csv":                 "site_berlin.raw",
		"sites/berlin/gw-1/f.csv":            "site_berlin.raw",
		"plant-3/logs/2026/f.csv.gz":         "iot.plant-3_logs",
	} {
		got, r, err := rs.Table(key)
		if err != nil || got.String() != want {
			t.Errorf("Table(%q) = %v by %s, %v; want %s", key, got, r, err, want)
		}
	}
	// No route takes it: reported with the routes.
	if _, _, err := rs.Table("other/f.csv"); !errors.Is(err, ErrUnrouted) || !strings.Contains(err.Error(), "other/f.csv") {
		t.Errorf("unrouted key: %v", err)
	}
	// A route whose table needs a folder the key does not have (** may
	// match no folder at all) refuses the key, naming the folder.
	if _, _, err := rs.Table("sites/f.csv"); err == nil || !strings.Contains(err.Error(), "{2}") {
		t.Errorf("sites/f.csv: %v; want it refused for want of folder {2}", err)
	}
}

func TestTableRefusesAmbiguousKeys(t *testing.T) {
	rs, err := Parse([]string{"readings/**=iot.readings", "*/berlin/**=iot.berlin", "readings/x/**=iot.readings"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = rs.Table("readings/berlin/f.csv")
	if !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("two routes to two tables: %v", err)
	}
	for _, s := range []string{"readings/**=iot.readings", "*/berlin/**=iot.berlin", "readings/berlin/f.csv"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%v: does not name %s", err, s)
		}
	}
	// Two routes to the same table are not a conflict.
	if got, _, err := rs.Table("readings/x/f.csv"); err != nil || got.String() != "iot.readings" {
		t.Errorf("two routes to one table: %v, %v", got, err)
	}
}

// TestTableFromHostileKeys: a table named from a key's folders is checked
// like any table name; a key whose folders do not make one is refused,
// never routed to a table elsewhere.
func TestTableFromHostileKeys(t *testing.T) {
	rs, err := Parse([]string{"**=iot.{1}", "deep/**=iot.{1}_{3}"})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{
		"../f.csv",         // a path trick
		"./f.csv",          // a dot
		"a.b/f.csv",        // a dot inside
		"/f.csv",           // an empty folder
		"f.csv",            // no folder at all
		"sp ace/f.csv",     // a space
		"deep/x/f.csv",     // {3} of a key with two folders
		"caf\u00e9/f.csv",  // beyond the name's characters
		"a%2F..%2Fb/f.csv", // escaped slashes stay in one folder
		"x\x00y/f.csv",     // a NUL
	} {
		if got, r, err := rs.Table(key); err == nil {
			t.Errorf("Table(%q) = %v by %s; want it refused", key, got, r)
		}
	}
	if got, _, err := rs.Table("gw_7/f.csv"); err != nil || got.String() != "iot.gw_7" {
		t.Errorf("a plain folder: %v, %v", got, err)
	}
}

func TestFixed(t *testing.T) {
	rs, err := Parse([]string{"readings/**=iot.readings", "*/**=iot.{1}"})
	if err != nil {
		t.Fatal(err)
	}
	if tb, ok := rs[0].Fixed(); !ok || tb.String() != "iot.readings" {
		t.Errorf("fixed route: %v %v", tb, ok)
	}
	if _, ok := rs[1].Fixed(); ok {
		t.Error("a route of {1} names no one table")
	}
}

// TestParseRefusesOnePatternToTwoTables: the same pattern to two tables
// would refuse every key it takes; the rules are refused naming both.
func TestParseRefusesOnePatternToTwoTables(t *testing.T) {
	_, err := Parse([]string{"readings/**=iot.a", "readings/**=iot.b"})
	if err == nil || !strings.Contains(err.Error(), "readings/**=iot.a") || !strings.Contains(err.Error(), "readings/**=iot.b") {
		t.Fatalf("one pattern to two tables: %v", err)
	}
	if _, err := Parse([]string{"readings/**=iot.a", "readings/**=iot.a"}); err != nil {
		t.Fatalf("one rule twice: %v", err)
	}
}

// TestTableNamesTheFolder: a key whose folder cannot be part of a table
// name is refused naming the folder.
func TestTableNamesTheFolder(t *testing.T) {
	rs, err := Parse([]string{"logs/*/**=logs.{2}"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = rs.Table("logs/site.lyon/a.csv")
	if err == nil || !strings.Contains(err.Error(), `"site.lyon"`) || !strings.Contains(err.Error(), "{2}") {
		t.Fatalf("a folder with a dot: %v; want it named", err)
	}
}

// TestParseOptions: a rule's options follow its table, ;NAME=VALUE each;
// a value between braces keeps its commas, in the rule and in Split.
func TestParseOptions(t *testing.T) {
	rules := Split("readings/**=iot.readings;time-column=ts;series-key={device,site};partition=hour, date=*/**=iot.dated ; partition = month\nevents/**=iot.events")
	want := []string{"readings/**=iot.readings;time-column=ts;series-key={device,site};partition=hour", "date=*/**=iot.dated ; partition = month", "events/**=iot.events"}
	if !slices.Equal(rules, want) {
		t.Fatalf("Split: %q, want %q", rules, want)
	}
	rs, err := Parse(rules)
	if err != nil {
		t.Fatal(err)
	}
	wantOpts := [][]Option{
		{{"time-column", "ts"}, {"series-key", "device,site"}, {"partition", "hour"}},
		{{"partition", "month"}},
		nil,
	}
	for i, r := range rs {
		if !slices.Equal(r.Options, wantOpts[i]) {
			t.Errorf("rule %d options: %q, want %q", i, r.Options, wantOpts[i])
		}
	}
	// The pattern may hold '=': the options start after the table.
	if rs[1].Pattern != "date=*/**" || rs[1].Table != "iot.dated" {
		t.Errorf("a pattern with '=': %q %q", rs[1].Pattern, rs[1].Table)
	}
	// String renders the rule as Split and Parse read it back.
	if got := rs[0].String(); got != want[0] {
		t.Errorf("String: %q, want %q", got, want[0])
	}
	again, err := Parse(Split(rs.String()))
	if err != nil || !slices.EqualFunc(again, rs, func(a, b Route) bool { return a.String() == b.String() }) {
		t.Errorf("Parse(Split(%q)): %v, %v", rs.String(), again, err)
	}
}

func TestParseRefusesBadOptions(t *testing.T) {
	for rule, want := range map[string]string{
		"readings/**=iot.r;":                        "an empty option",
		"readings/**=iot.r;partition=hour;;":        "an empty option",
		"readings/**=iot.r;partition":               `option "partition": expected NAME=VALUE`,
		"readings/**=iot.r;=hour":                   `option "=hour": expected NAME=VALUE`,
		"readings/**=iot.r;partition=":              `option "partition": no value`,
		"readings/**=iot.r;partition=a;partition=b": `option "partition" given twice`,
		"readings/**=iot.r x;partition=hour":        "must match",
	} {
		_, err := Parse([]string{"ok/**=iot.ok", rule})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), rule) {
			t.Errorf("Parse(%q): %v; want an error naming the rule and %q", rule, err, want)
		}
	}
}

// TestParseRefusesTwoDefaultsOfOneTable: two rules with different options
// that name one table whatever the key, or alike, are refused naming
// both; with the same options (in any order) they are not.
func TestParseRefusesTwoDefaultsOfOneTable(t *testing.T) {
	for _, pair := range [][2]string{
		{"readings/**=iot.readings;partition=hour", "more/**=iot.readings"},
		{"readings/**=iot.readings;partition=hour", "more/**=iot.readings;partition=day"},
		{"*/**=iot.{1};partition=hour", "readings/**=iot.readings"},
		{"a/*/**=x.{2};partition=hour", "b/*/**=x.{2}"},
	} {
		_, err := Parse(pair[:])
		if err == nil || !strings.Contains(err.Error(), pair[0]) || !strings.Contains(err.Error(), pair[1]) || !strings.Contains(err.Error(), "different options") {
			t.Errorf("Parse(%q): %v; want it refused naming both", pair, err)
		}
	}
	for _, ok := range [][]string{
		{"readings/**=iot.readings;partition=hour;time-column=ts", "more/**=iot.readings;time-column=ts;partition=hour"},
		{"readings/**=iot.readings", "*/**=iot.{1}_x;partition=hour"}, // iot.readings is never {1}_x
		{"readings/**=iot.readings;partition=hour", "events/**=iot.events"},
	} {
		if _, err := Parse(ok); err != nil {
			t.Errorf("Parse(%q): %v", ok, err)
		}
	}
}

// TestTableRefusesKeysOfTwoDefaults: a key whose table two routes with
// different options can name (two {N} routes, which Parse cannot tell) is
// refused naming both routes; the keys of the other tables are not.
func TestTableRefusesKeysOfTwoDefaults(t *testing.T) {
	rs, err := Parse([]string{"a/*/**=x.{2};partition=hour", "b/*/**=x.b_{2}", "c/*/**=x.{2}"})
	if err == nil {
		t.Fatal("x.{2} twice with different options: not refused")
	}
	rs, err = Parse([]string{"a/*/**=x.{2};partition=hour", "b/*/**=x.b_{2}"})
	if err != nil {
		t.Fatal(err)
	}
	// x.b_1 can be a/b_1/... by the first route, b/1/... by the second.
	_, _, err = rs.Table("b/1/f.csv")
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), rs[0].String()) || !strings.Contains(err.Error(), rs[1].String()) || !strings.Contains(err.Error(), "x.b_1") {
		t.Fatalf("b/1/f.csv: %v; want it refused naming both routes", err)
	}
	if _, _, err := rs.Table("a/b_1/f.csv"); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("a/b_1/f.csv: %v; want it refused as well (same table)", err)
	}
	got, r, err := rs.Table("a/site/f.csv")
	if err != nil || got.String() != "x.site" || r.String() != rs[0].String() {
		t.Errorf("a/site/f.csv: %v by %s, %v", got, r, err)
	}
	if n, ok := rs.Naming(got); !ok || n.String() != rs[0].String() {
		t.Errorf("Naming(%s): %s %v", got, n, ok)
	}
}

func TestCanName(t *testing.T) {
	rs, err := Parse([]string{"*/**=iot.{1}_raw", "r/**=iot.readings", "*/*/**=site_{1}.{2}"})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		table string
		want  []bool
	}{
		{"iot.gw-7_raw", []bool{true, false, false}},
		{"iot._raw", []bool{false, false, false}},
		{"iot.readings", []bool{false, true, false}},
		{"site_a.b", []bool{false, false, true}},
		{"site_.b", []bool{false, false, false}},
	} {
		tn, err := tablename.Parse(tc.table)
		if err != nil {
			t.Fatal(err)
		}
		for j, r := range rs {
			if got := r.CanName(tn); got != tc.want[j] {
				t.Errorf("%d: %s.CanName(%s) = %v", i, r, tn, got)
			}
		}
	}
}

// TestPlan: the tables of the keys and those of fixed routes, once each, in
// name order; the keys no route takes kept with why.
func TestPlan(t *testing.T) {
	rs, err := Parse([]string{"zeta/**=iot.zeta", "*/**=iot.{1}"})
	if err != nil {
		t.Fatal(err)
	}
	p := rs.Plan()
	for _, k := range []string{"readings/a.csv", "events/b.csv", "readings/c.csv", "stray.csv"} {
		p.Add(k)
	}
	var got []string
	for _, tb := range p.Tables() {
		got = append(got, tb.String())
	}
	if strings.Join(got, ",") != "iot.events,iot.readings,iot.zeta" {
		t.Errorf("tables %v", got)
	}
	if len(p.Unrouted) != 1 || p.Unrouted[0].Key != "stray.csv" || !strings.Contains(p.Unrouted[0].Reason, "{1}") ||
		!strings.HasPrefix(p.Unrouted[0].Line(), "unrouted        stray.csv  ") {
		t.Errorf("unrouted %+v", p.Unrouted)
	}
	if r := rs.Rules(); strings.Join(r, "|") != "zeta/**=iot.zeta|*/**=iot.{1}" {
		t.Errorf("rules %v", r)
	}
}

// TestNames: a fixed route names its table only; a {N} route the tables
// folders can make, in namespace default for a bare table.
func TestNames(t *testing.T) {
	rs, err := Parse([]string{"a/**=iot.a", "*/**=iot.{1}_raw", "x/*/**=lake{2}"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"iot.a": true, "iot.b": false, "iot.b_raw": true, "iot._raw": false,
		"default.lakegw-1": true, "other.lakegw": false, "iot.b_raw.x": false} {
		tn, err := tablename.Parse(name)
		got := err == nil && slices.ContainsFunc(rs, func(r Route) bool { return r.Names(tn) })
		if got != want {
			t.Errorf("%s: named %v, want %v", name, got, want)
		}
	}
	p := rs.Plan()
	p.AddNamed([]tablename.Name{{Namespace: "iot", Name: "c_raw"}, {Namespace: "iot", Name: "other"}})
	var got []string
	for _, tb := range p.Tables() {
		got = append(got, tb.String())
	}
	if strings.Join(got, ",") != "iot.a,iot.c_raw" || !rs.Templated() || rs[:1].Templated() {
		t.Errorf("tables %v", got)
	}
}
