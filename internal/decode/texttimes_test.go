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

// TestTextTimesAgreesRowByRow holds the batch conversion of text times
// (textTimes) to the row-by-row one it stands in for: the same values and
// nulls for batches it converts, and the row-by-row refusal, row and value
// for batches holding a time the column refuses. A batch of large strings
// always goes row by row, so converting the same texts both ways compares
// the two.
func TestTextTimesAgreesRowByRow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ams, _ := time.LoadLocation("Europe/Amsterdam")
	forms := []string{
		"2026-01-23T12:27:00Z", "2026-01-23T12:27:00.5Z", "2026-01-23 12:27:00",
		"2026-01-23T13:27:00+01:00", "2026-03-29T02:30:00", "2026-10-25T02:30:00",
		"1969-12-31T23:59:59.999999Z", "2026-01-23",
	}
	refused := []string{"2026-13-01T00:00:00Z", "yesterday", "2026-01-23T12:27", "9999-01-01T00:00:00Z"}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		dst := &arrow.TimestampType{Unit: []arrow.TimeUnit{arrow.Microsecond, arrow.Nanosecond, arrow.Millisecond}[trial%3], TimeZone: "UTC"}
		if trial%4 == 1 {
			dst = &arrow.TimestampType{Unit: dst.Unit}
		}
		ro := &resolved{key: "gw/t.csv", mem: mem, text: true}
		if trial%5 == 2 {
			ro.loc = ams
		}
		n := 1 + rng.IntN(40)
		vals, valid := make([]string, n), make([]bool, n)
		for i := range n {
			valid[i] = rng.IntN(6) != 0
			switch {
			case i > 0 && rng.IntN(3) == 0:
				vals[i] = vals[i-1]
			case trial%3 == 0 && rng.IntN(30) == 0:
				vals[i] = refused[rng.IntN(len(refused))]
			default:
				vals[i] = forms[rng.IntN(len(forms))]
			}
		}
		sb, lb := array.NewStringBuilder(mem), array.NewLargeStringBuilder(mem)
		sb.AppendValues(vals, valid)
		lb.AppendValues(vals, valid)
		str, large := sb.NewArray(), lb.NewArray()
		sb.Release()
		lb.Release()
		name := fmt.Sprintf("trial %d %v %s", trial, dst, vals)
		for _, isTime := range []bool{true, false} {
			conv, err := makeConverter(ro, "time", arrow.BinaryTypes.String, arrow.Field{Name: "time", Type: dst, Nullable: true}, isTime)
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
			if !array.Equal(fast, slow) || !arrow.TypeEqual(fast.DataType(), slow.DataType()) {
				t.Fatalf("%s: %v against %v", name, fast, slow)
			}
			if direct := textTimes(mem, dst, str, &timeConv{unit: dst.Unit, naive: dst.TimeZone == "", loc: ro.loc, hintEpoch: isTime}, newTimeRange(dst.Unit, isTime)); direct == nil {
				t.Fatalf("%s: accepted by the column, left to the row-by-row conversion", name)
			} else {
				direct.Release()
			}
			fast.Release()
			slow.Release()
		}
		str.Release()
		large.Release()
	}
}
