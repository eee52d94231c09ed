package pqarrowio_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/decode/arrowpq"
	"github.com/timelake/timelake/internal/decode/pqarrowio"
	"github.com/timelake/timelake/internal/decode/pqlite"
)

// FuzzPqlite: on any bytes, decode/pqlite refuses a file exactly when
// pqarrow (ingest) refuses it, no panic escapes either, neither takes a
// minute, and the values of a file both read are the same.
func FuzzPqlite(f *testing.F) {
	files, err := filepath.Glob("../testdata/corpus/*/*.parquet")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		// An input that takes this long loops: the panic ends the worker,
		// and the fuzzer keeps the input.
		watchdog := time.AfterFunc(time.Minute, func() { panic("FuzzPqlite: an input took more than a minute") })
		defer watchdog.Stop()
		c := parquetCase{name: "fuzz.parquet", data: data}
		withPqarrow := check(c, arrowpq.Format{Reader: pqarrowio.Reader{}})
		withPqlite := check(c, pqlite.Format{})
		for _, err := range []error{withPqarrow, withPqlite} {
			if err != nil && decode.IsPanic(err) {
				t.Fatalf("a reader crashed: %v", err)
			}
		}
		if (withPqarrow == nil) != (withPqlite == nil) {
			t.Fatalf("pqarrow: %v\npqlite: %v", withPqarrow, withPqlite)
		}
		if withPqarrow != nil {
			return
		}
		want, err := readBatches(data, arrowpq.Format{Reader: pqarrowio.Reader{}})
		got, err2 := readBatches(data, pqlite.Format{})
		if (err == nil) != (err2 == nil) {
			t.Fatalf("reading the values: pqarrow: %v\npqlite: %v", err, err2)
		}
		if len(want) != len(got) {
			t.Fatalf("pqarrow reads %d batches, pqlite %d", len(want), len(got))
		}
		for i := range want {
			if !sameValues(want[i], got[i]) {
				t.Fatalf("batch %d:\npqarrow: %v\npqlite: %v", i, want[i], got[i])
			}
		}
	})
}

// sameValues reports whether a and b hold the same values, a dictionary
// column the same as its values (pqarrow keeps a stored dictionary type)
// and bytes the same as text (pqlite reads ENUM as text).
func sameValues(a, b arrow.RecordBatch) bool {
	if a.NumCols() != b.NumCols() || a.NumRows() != b.NumRows() {
		return false
	}
	for c := range int(a.NumCols()) {
		x, y := a.Column(c), b.Column(c)
		for j := range x.Len() {
			if x.IsNull(j) != y.IsNull(j) || valueStr(x, j) != valueStr(y, j) {
				return false
			}
		}
	}
	return true
}

// valueStr is value j of arr, of a dictionary array its value's.
func valueStr(arr arrow.Array, j int) string {
	switch a := arr.(type) {
	case *array.Dictionary:
		return valueStr(a.Dictionary(), a.GetValueIndex(j))
	case *array.Binary:
		return string(a.Value(j))
	case *array.LargeBinary:
		return string(a.Value(j))
	case *array.String:
		return a.Value(j)
	case *array.LargeString:
		return a.Value(j)
	}
	return arr.ValueStr(j)
}

// readBatches reads every batch of data with format f.
func readBatches(data []byte, f decode.ParquetFormat) (_ []arrow.RecordBatch, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = errors.New("panic")
		}
	}()
	ctx := context.Background()
	pf, err := f.Open(ctx, decode.Source{Key: "fuzz.parquet", R: bytes.NewReader(data), Size: int64(len(data))},
		decode.ParquetOpenOptions{Key: "fuzz.parquet", Mem: memory.DefaultAllocator, BatchRows: 1 << 20})
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	rr, err := pf.Records(ctx)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	var out []arrow.RecordBatch
	for rr.Next() {
		rec := rr.RecordBatch()
		rec.Retain()
		out = append(out, rec)
	}
	return out, rr.Err()
}
