package datafile

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// numberOnce is the reference numbering: one pass, a map, first
// appearance.
func numberOnce(vals []string, null []bool) ([]int32, []string) {
	index := map[string]int32{}
	var values []string
	codes := make([]int32, len(vals))
	for i, v := range vals {
		if null[i] {
			codes[i] = -1
			continue
		}
		c, ok := index[v]
		if !ok {
			c = int32(len(values))
			index[v] = c
			values = append(values, v)
		}
		codes[i] = c
	}
	return codes, values
}

// TestNumberInPartsAgrees: numbered in parts on several goroutines, a
// column gets the codes and values of one pass, whatever the parts and
// the shape (runs, alternating values, nulls, values first seen late).
func TestNumberInPartsAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 12 {
		n := parallelRows + rng.IntN(3*parallelRows)
		distinct := 1 + rng.IntN(300)
		vals, null := make([]string, n), make([]bool, n)
		b := array.NewStringBuilder(memory.DefaultAllocator)
		for i := range n {
			switch {
			case rng.IntN(50) == 0:
				null[i] = true
				b.AppendNull()
				continue
			case trial%3 == 0: // runs of one value
				vals[i] = fmt.Sprintf("dev-%d", i*distinct/n)
			case trial%3 == 1: // values alternating row by row
				vals[i] = fmt.Sprintf("dev-%d", i%distinct)
			default: // new values all along
				vals[i] = fmt.Sprintf("dev-%d", rng.IntN(1+i*distinct/n))
			}
			b.Append(vals[i])
		}
		a := b.NewStringArray()
		b.Release()
		wantCodes, wantValues := numberOnce(vals, null)
		for _, parts := range []int{1, 2, 3, 5} {
			codes, values := numberInParts(a, parts)
			if !slices.Equal(values, wantValues) {
				t.Fatalf("trial %d, %d parts: %d values, want %d (first difference in order)", trial, parts, len(values), len(wantValues))
			}
			if !slices.Equal(codes, wantCodes) {
				t.Fatalf("trial %d, %d parts: codes differ from one pass", trial, parts)
			}
		}
		c1, v1, ok := numberStrings([]arrow.Array{array.NewSlice(a, 0, int64(n/3)), array.NewSlice(a, int64(n/3), int64(n))}, nil)
		if !ok || !slices.Equal(c1, wantCodes) || !slices.Equal(v1, wantValues) {
			t.Fatalf("trial %d: numberStrings over two chunks differs from one pass", trial)
		}
		a.Release()
	}
}

// TestStringCodesStops: a column of a new value per row is not numbered
// past 1,024 values once they are more than half its rows.
func TestStringCodesStops(t *testing.T) {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	for i := range 5000 {
		b.Append(fmt.Sprint("id-", i))
	}
	a := b.NewStringArray()
	defer a.Release()
	if n := stringCodes([]arrow.Array{a}); n.ok {
		t.Fatalf("numbered %d values of %d rows", len(n.values), a.Len())
	}
	b2 := array.NewStringBuilder(memory.DefaultAllocator)
	defer b2.Release()
	for i := range 3000 {
		b2.Append(fmt.Sprint("site-", i%10))
	}
	for i := range 2000 {
		b2.Append(fmt.Sprint("site-", i%1500)) // 1,500 values in 5,000 rows: numbered
	}
	a2 := b2.NewStringArray()
	defer a2.Release()
	if n := stringCodes([]arrow.Array{a2}); !n.ok || len(n.values) != 1500 {
		t.Fatalf("ok %v with %d values, want 1500", n.ok, len(n.values))
	}
}

// TestRunAllRaisesPanics: a task's panic on another goroutine is raised on
// the caller's, after every task is done.
func TestRunAllRaisesPanics(t *testing.T) {
	done := make([]bool, 3)
	defer func() {
		if v := recover(); v != "boom" {
			t.Fatalf("recovered %v, want the task's panic", v)
		}
		if !done[1] || !done[2] {
			t.Fatalf("tasks done %v: the others did not finish", done)
		}
	}()
	runAll([]func(){
		func() { panic("boom") },
		func() { done[1] = true },
		func() { done[2] = true },
	})
	t.Fatal("runAll returned after a task panicked")
}
