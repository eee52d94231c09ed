package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The JSON cases hold the CSV cases' rows: each JSON line has the keys
// of the CSV header and the text of the CSV row's values.
func TestJSONLinesHoldTheCSVRows(t *testing.T) {
	row := func() rowFunc {
		rng := rand.New(rand.NewPCG(7, 42))
		return func(j int) (time.Time, string, float64, float64, float64) {
			return start.Add(time.Duration(j) * 10 * time.Second), "dev-01-02",
				float64(rng.IntN(400))/10 - 5, float64(rng.IntN(1000)) / 10, 3 + float64(rng.IntN(120))/100
		}
	}
	const n = 500
	var c, j bytes.Buffer
	if err := writeCSVTo(&c, n, row()); err != nil {
		t.Fatal(err)
	}
	if err := writeJSONTo(&j, n, row()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	header := recs[0]
	sc := bufio.NewScanner(&j)
	i := 1
	for ; sc.Scan(); i++ {
		d := json.NewDecoder(strings.NewReader(sc.Text()))
		d.UseNumber()
		var obj map[string]any
		if err := d.Decode(&obj); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if len(obj) != len(header) {
			t.Fatalf("line %d: %d keys, want %d", i, len(obj), len(header))
		}
		for k, name := range header {
			got := obj[name]
			want := recs[i][k]
			switch v := got.(type) {
			case string:
				if k >= 3 {
					t.Fatalf("line %d: %s is a string, want a number", i, name)
				}
				got = v
			case json.Number:
				if k < 3 {
					t.Fatalf("line %d: %s is a number, want a string", i, name)
				}
				got = v.String()
			}
			if got != want {
				t.Fatalf("line %d: %s = %v, want %s", i, name, got, want)
			}
		}
	}
	if i-1 != n || len(recs) != n+1 {
		t.Fatalf("%d JSON lines and %d CSV rows, want %d", i-1, len(recs)-1, n)
	}
}
