package interop

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckFileCatchesProblems is the negative control of the DuckDB
// checks: a gateway's Parquet file (millisecond times, no field ids, rows in
// time order across devices) and a manifest entry that lies must fail them.
func TestCheckFileCatchesProblems(t *testing.T) {
	ctx := context.Background()
	db := duckDB(t)
	file := filepath.Join(examplesDir, "gateway-3", "20260105T1000.parquet")
	cols := []Column{
		{ID: 1, Name: "time", Type: "timestamptz", Required: true},
		{ID: 2, Name: "device_id", Type: "string"},
		{ID: 3, Name: "temperature_c", Type: "double"},
	}
	facts, err := ReadFileFacts(ctx, db, file, cols, []string{"device_id", "time"})
	if err != nil {
		t.Fatal(err)
	}
	honest := ManifestEntry{Path: file, RecordCount: facts.Rows, Lower: map[int]any{}, Upper: map[int]any{}}
	for _, c := range cols {
		honest.Lower[c.ID], honest.Upper[c.ID] = facts.Min[c.Name], facts.Max[c.Name]
	}
	rules := Rules{TimeColumn: "time", Codec: "ZSTD", RequireBounds: []string{"time", "device_id"}}
	for _, tc := range []struct {
		name  string
		entry func() ManifestEntry
		rules Rules
		want  []string
	}{
		{"file itself", func() ManifestEntry { return honest }, rules,
			[]string{"want a UTC (isAdjustedToUTC) MICROS timestamp", "has Parquet field_id", "rows are out of order"}},
		{"wrong codec", func() ManifestEntry { return honest }, Rules{TimeColumn: "time", Codec: "SNAPPY"},
			[]string{"codecs [ZSTD], want [SNAPPY]"}},
		{"row count", func() ManifestEntry { e := honest; e.RecordCount++; return e }, rules,
			[]string{"the manifest claims"}},
		{"time bound", func() ManifestEntry {
			e := honest
			e.Lower = map[int]any{1: facts.Min["time"].(int64) + 1, 2: honest.Lower[2], 3: honest.Lower[3]}
			return e
		}, rules, []string{"column time: manifest lower bound"}},
		{"series key bound", func() ManifestEntry {
			e := honest
			e.Upper = map[int]any{1: honest.Upper[1], 2: "dev-00", 3: honest.Upper[3]}
			return e
		}, rules, []string{"column device_id: manifest upper bound"}},
		{"missing bounds", func() ManifestEntry {
			e := honest
			e.Lower, e.Upper = map[int]any{}, map[int]any{}
			return e
		}, rules, []string{"column time: the manifest has no lower/upper bounds", "column device_id: the manifest has no lower/upper bounds"}},
		{"null count", func() ManifestEntry { e := honest; e.NullCounts = map[int]int64{3: 7}; return e }, rules,
			[]string{"column temperature_c: manifest null count 7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckFile(facts, tc.entry(), cols, tc.rules)
			if err == nil {
				t.Fatal("CheckFile passed")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
