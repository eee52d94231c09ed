package profile

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/timelake/timelake/internal/decode"
)

func TestMatch(t *testing.T) {
	p := &Profile{Name: "p", Values: map[string]string{}}
	if err := p.set(SettingMatch, "site-berlin/, */munich-*.csv,archive/**/*.{csv,tsv}"); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{
		"site-berlin/gw-1/a.csv":      true, // a prefix
		"site-berlinx/a.csv":          false,
		"gw-3/munich-1.csv":           true, // * stays within a folder
		"gw-3/x/munich-1.csv":         false,
		"archive/2026/01/a.tsv":       true, // ** crosses folders; {a,b}
		"archive/2026/01/a.parquet":   false,
		"other/site-berlin/gw-1.csv":  false,
		"site-berlin/_rejected/a.csv": true,
	} {
		if got := p.Matches(key); got != want {
			t.Errorf("%s: matches %v, want %v", key, got, want)
		}
	}
}

func TestFromProperties(t *testing.T) {
	set, err := FromProperties(map[string]string{
		"timelake.profile.berlin.match":             "site-berlin/",
		"timelake.profile.berlin.csv-delimiter":     ";",
		"timelake.profile.berlin.csv-decimal-comma": "true",
		"timelake.profile.berlin.csv-null":          "NA, -",
		"timelake.profile.berlin.columns":           "battery:double",
		"timelake.profile.berlin.time-column":       "Zeit",
		"timelake.profile.berlin.assume-timezone":   "Europe/Berlin",
		"timelake.profile.berlin.on-error":          "skip-rows",
		"timelake.profile.berlin.max-bad-rows":      "5%",
		"timelake.profile.ms.match":                 "**/*-ms.csv",
		"timelake.profile.ms.time-unit":             "ms",
		"timelake.profile.ms.format":                "JSON",
		"timelake.snapshot-retention":               "1h", // not a profile's
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 2 || set[0].Name != "berlin" || set[1].Name != "ms" {
		t.Fatalf("profiles %+v", set)
	}
	base := FileSettings{CSV: decode.CSV{Delimiter: '|'}, Columns: map[string]arrow.DataType{"temp": arrow.PrimitiveTypes.Float64},
		TimeUnit: "s", Evolve: decode.EvolveAddColumns}
	fs := set.Find("berlin").Apply(base)
	if fs.CSV.Delimiter != ';' || !fs.CSV.DecimalComma || strings.Join(fs.CSV.Null, "|") != "NA|-" || fs.TimeColumn != "Zeit" ||
		fs.AssumeLocation.String() != "Europe/Berlin" || fs.OnError != decode.OnErrorSkipRows || fs.MaxBadRows.String() != "5%" ||
		len(fs.Columns) != 2 || fs.TimeUnit != "s" || fs.Evolve != decode.EvolveAddColumns {
		t.Fatalf("applied: %+v", fs)
	}
	if len(base.Columns) != 1 {
		t.Fatal("Apply changed the run's columns")
	}
	if fs.Format != "" || set.Find("ms").Apply(base).Format != decode.FormatJSON {
		t.Fatalf("format: berlin %q, ms %q; want none and json", fs.Format, set.Find("ms").Apply(base).Format)
	}
	p, err := set.For("site-berlin/x-ms.csv")
	if !errors.Is(err, ErrAmbiguous) || p != nil || !strings.Contains(err.Error(), "berlin (site-berlin/) and ms (**/*-ms.csv)") {
		t.Fatalf("a key both match: %v", err)
	}
	if p, err := set.For("paris/a.csv"); err != nil || p != nil {
		t.Fatalf("a key none matches: %v %v", p, err)
	}
	if got := (*Profile)(nil).Apply(base); got.TimeUnit != "s" {
		t.Fatal("a nil profile changed the settings")
	}
}

func TestFromPropertiesRefuses(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		says  string
	}{
		{map[string]string{"timelake.profile.a.csv-delimiter": ";"}, "source profile a has no timelake.profile.a.match"},
		{map[string]string{"timelake.profile.a.match": "x/", "timelake.profile.a.color": "red"}, `unknown profile setting "color"`},
		{map[string]string{"timelake.profile.a b.match": "x/"}, "a profile's name is letters"},
		{map[string]string{"timelake.profile.a.match": "x/", "timelake.profile.a.time-unit": "h"}, "expected s, ms, us or ns"},
		{map[string]string{"timelake.profile.a.match": "x/", "timelake.profile.a.columns": "time:string", "timelake.profile.a.time-column": "time"}, "always timestamptz"},
		{map[string]string{"timelake.profile.a.match": "site/", "timelake.profile.b.match": "site/berlin/"}, `both match the keys below "site/berlin/"`},
		{map[string]string{"timelake.profile.a.match": "[bad"}, "not a valid glob"},
		{map[string]string{"timelake.profile.a.match": "x/", "timelake.profile.a.format": "xml"}, `unknown file format "xml"`},
	} {
		if _, err := FromProperties(tc.props); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: %v, want %q", tc.props, err, tc.says)
		}
	}
}

func TestTableDefaults(t *testing.T) {
	props := map[string]string{"timelake.evolve": "widen", "timelake.on-error": "skip-rows", "timelake.max-bad-rows": "bad"}
	var warned []string
	fs := TableDefaults(FileSettings{}, props, func(p string, _ error) { warned = append(warned, p) })
	if fs.Evolve != decode.EvolveWiden || fs.OnError != decode.OnErrorSkipRows || fs.MaxBadRows.IsSet() || len(warned) != 1 {
		t.Fatalf("%+v %v", fs, warned)
	}
	// The run's own settings win.
	m, _ := decode.ParseMaxBadRows("3")
	fs = TableDefaults(FileSettings{Evolve: decode.EvolveOff, OnError: decode.OnErrorFile, MaxBadRows: m}, props, func(string, error) {})
	if fs.Evolve != decode.EvolveOff || fs.OnError != decode.OnErrorFile || fs.MaxBadRows.String() != "3" {
		t.Fatalf("%+v", fs)
	}
}

func TestExportNeedsTheProfile(t *testing.T) {
	_, err := NewExport("iot.readings", map[string]string{"timelake.profile.a.match": "x/"}, nil, "time", "b", time.Now())
	if err == nil || !strings.Contains(err.Error(), `no source profile "b" (its profiles: a)`) {
		t.Fatalf("%v", err)
	}
	// A table without profiles says it has none, not an empty list.
	_, err = NewExport("iot.readings", map[string]string{}, nil, "time", "b", time.Now())
	if err == nil || !strings.Contains(err.Error(), `no source profile "b": it has none`) {
		t.Fatalf("a table without profiles: %v", err)
	}
}
