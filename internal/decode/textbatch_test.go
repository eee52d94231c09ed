package decode

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// textCase is a column of text values and the type it converts to.
type textCase struct {
	dst      arrow.DataType
	accepted []string // values the column loads
	refused  []string // values it refuses
	// batch is the per-row parse of the batch conversion, for checking
	// that it takes every batch the column accepts.
	batch func(ro *resolved, isTime bool) arrow.Array
}

// TestTextBatchAgreesRowByRow holds the batch conversion of text values
// (textBatch: times and numbers) to the row-by-row one it stands in for:
// the same values and nulls for batches it converts, and the row-by-row
// refusal, row and value for batches holding a value the column refuses.
// A batch of large strings always goes row by row, so converting the same
// texts both ways compares the two.
func TestTextBatchAgreesRowByRow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ams, _ := time.LoadLocation("Europe/Amsterdam")
	times := textCase{
		accepted: []string{
			"2026-01-23T12:27:00Z", "2026-01-23T12:27:00.5Z", "2026-01-23 12:27:00",
			"2026-01-23T13:27:00+01:00", "2026-03-29T02:30:00", "2026-10-25T02:30:00",
			"1969-12-31T23:59:59.999999Z", "2026-01-23",
		},
		refused: []string{"2026-13-01T00:00:00Z", "yesterday", "2026-01-23T12:27", "9999-01-01T00:00:00Z"},
	}
	numbers := []string{"29.9", "-3.55", "+0.5", ".5", "5.", "1e3", "-0", "NaN", "inf", " 7 ", "12", "9007199254740993", "2147483648", "0.1"}
	notNumbers := []string{"1,5", "0x1p3", "1_000", "abc", "1e400", "1e-400"}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 600 {
		var c textCase
		var dst arrow.DataType
		ro := &resolved{key: "gw/t.csv", mem: mem, text: true}
		switch trial % 6 {
		case 0, 1:
			c = times
			ts := &arrow.TimestampType{Unit: []arrow.TimeUnit{arrow.Microsecond, arrow.Nanosecond, arrow.Millisecond}[trial%3], TimeZone: "UTC"}
			if trial%4 == 1 {
				ts = &arrow.TimestampType{Unit: ts.Unit}
			}
			if trial%5 == 2 {
				ro.loc = ams
			}
			dst = ts
		default:
			c = textCase{accepted: numbers, refused: notNumbers}
			dst = []arrow.DataType{arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32}[trial%4]
			ro.decimalComma = trial%7 == 3
		}
		n := 1 + rng.IntN(40)
		vals, valid := make([]string, n), make([]bool, n)
		for i := range n {
			valid[i] = rng.IntN(6) != 0
			switch {
			case i > 0 && rng.IntN(3) == 0:
				vals[i] = vals[i-1]
			case rng.IntN(25) == 0:
				vals[i] = c.refused[rng.IntN(len(c.refused))]
			default:
				vals[i] = c.accepted[rng.IntN(len(c.accepted))]
			}
		}
		sb, lb := array.NewStringBuilder(mem), array.NewLargeStringBuilder(mem)
		sb.AppendValues(vals, valid)
		lb.AppendValues(vals, valid)
		str, large := sb.NewArray(), lb.NewArray()
		sb.Release()
		lb.Release()
		name := fmt.Sprintf("trial %d %v %q %v", trial, dst, vals, valid)
		for _, isTime := range []bool{true, false} {
			conv, err := makeConverter(ro, "v", arrow.BinaryTypes.String, arrow.Field{Name: "v", Type: dst, Nullable: true}, isTime)
			if err != nil {
				t.Fatal(err)
			}
			fast, fastErr := conv(str, 10)
			slow, slowErr := conv(large, 10)
			var fe, se *FileError
			switch {
			case (fastErr == nil) != (slowErr == nil):
				t.Fatalf("%s: %v against %v", name, fastErr, slowErr)
			case fastErr != nil:
				if !errors.As(fastErr, &fe) || !errors.As(slowErr, &se) || *fe != *se {
					t.Fatalf("%s: %v against %v", name, fastErr, slowErr)
				}
				continue
			}
			if !sameValues(fast, slow) || !arrow.TypeEqual(fast.DataType(), slow.DataType()) {
				t.Fatalf("%s: %v against %v", name, fast, slow)
			}
			fast.Release()
			slow.Release()
			if direct := batchOf(ro, dst, str, isTime); direct == nil {
				t.Fatalf("%s: accepted by the column, left to the row-by-row conversion", name)
			} else {
				direct.Release()
			}
		}
		str.Release()
		large.Release()
	}
}

// batchOf converts arr with textBatch and the per-row rules of dst's
// conversion.
func batchOf(ro *resolved, dst arrow.DataType, arr arrow.Array, isTime bool) arrow.Array {
	switch dst := dst.(type) {
	case *arrow.TimestampType:
		tc := &timeConv{unit: dst.Unit, naive: dst.TimeZone == "", loc: ro.loc, hintEpoch: isTime}
		rng := newTimeRange(dst.Unit, isTime)
		return textBatch(ro.mem, dst, arr, func(s string) (int64, bool) {
			v, _, ok := tc.fromText(s)
			return v, ok && rng.accepts(v)
		})
	case *arrow.Float64Type:
		return textBatch(ro.mem, dst, arr, func(s string) (float64, bool) { v, p := ro.parseFloat(s, 64); return v, p == "" })
	case *arrow.Float32Type:
		return textBatch(ro.mem, dst, arr, func(s string) (float32, bool) { v, p := ro.parseFloat(s, 32); return float32(v), p == "" })
	case *arrow.Int64Type:
		return textBatch(ro.mem, dst, arr, func(s string) (int64, bool) { v, p := parseIntText(s, 64); return v, p == "" })
	case *arrow.Int32Type:
		return textBatch(ro.mem, dst, arr, func(s string) (int32, bool) { v, p := parseIntText(s, 32); return int32(v), p == "" })
	}
	panic(dst)
}

// sameValues reports whether a and b hold the same values, each written
// exactly (NaN equal to NaN, -0 not equal to 0), and the same nulls.
func sameValues(a, b arrow.Array) bool {
	if a.Len() != b.Len() || a.NullN() != b.NullN() {
		return false
	}
	for i := range a.Len() {
		if a.IsNull(i) != b.IsNull(i) || !a.IsNull(i) && a.ValueStr(i) != b.ValueStr(i) {
			return false
		}
	}
	return true
}
