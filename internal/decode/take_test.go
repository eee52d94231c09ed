package decode

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestTakeAsCompute checks take against compute.TakeArray over every type
// take reads, with null values, null indices, sliced values and each
// integer index type.
func TestTakeAsCompute(t *testing.T) {
	types := []struct {
		dt     arrow.DataType
		values string
	}{
		{arrow.Null, `[null, null, null, null, null]`},
		{arrow.FixedWidthTypes.Boolean, `[true, null, false, true, false]`},
		{arrow.PrimitiveTypes.Int8, `[1, null, -3, 4, 127]`},
		{arrow.PrimitiveTypes.Int16, `[1, null, -3, 4, 32767]`},
		{arrow.PrimitiveTypes.Int32, `[1, null, -3, 4, 5]`},
		{arrow.PrimitiveTypes.Int64, `[1, null, -3, 4, 5]`},
		{arrow.PrimitiveTypes.Uint8, `[1, null, 3, 4, 255]`},
		{arrow.PrimitiveTypes.Uint16, `[1, null, 3, 4, 5]`},
		{arrow.PrimitiveTypes.Uint32, `[1, null, 3, 4, 5]`},
		{arrow.PrimitiveTypes.Uint64, `[1, null, 3, 4, 18446744073709551615]`},
		{arrow.FixedWidthTypes.Float16, `[1.5, null, -3, 4, 5]`},
		{arrow.PrimitiveTypes.Float32, `[1.5, null, -3, 4, 5]`},
		{arrow.PrimitiveTypes.Float64, `[1.5, null, -3, 4, 5]`},
		{arrow.FixedWidthTypes.Date32, `["2024-01-01", null, "1970-01-01", "2024-02-29", "1900-12-31"]`},
		{arrow.FixedWidthTypes.Date64, `["2024-01-01", null, "1970-01-01", "2024-02-29", "1900-12-31"]`},
		{arrow.FixedWidthTypes.Time32ms, `["00:00:01.5", null, "12:00:00", "23:59:59.999", "00:00:00"]`},
		{arrow.FixedWidthTypes.Time64us, `["00:00:01.5", null, "12:00:00", "23:59:59.999999", "00:00:00"]`},
		{&arrow.TimestampType{Unit: arrow.Microsecond}, `["2024-01-01T00:00:00", null, "1970-01-01T00:00:00", "2024-02-29T12:34:56.789", "1900-12-31T23:59:59"]`},
		{&arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, `["2024-01-01T00:00:00Z", null, "1970-01-01T00:00:00Z", "2024-02-29T12:34:56.789Z", "1900-12-31T23:59:59Z"]`},
		{arrow.FixedWidthTypes.Duration_ms, `[1, null, -3, 4, 5]`},
		{&arrow.Decimal128Type{Precision: 38, Scale: 2}, `["1.25", null, "-3.00", "4.10", "999999999999999999999999999999999999.99"]`},
		{&arrow.Decimal256Type{Precision: 76, Scale: 2}, `["1.25", null, "-3.00", "4.10", "5"]`},
		{&arrow.FixedSizeBinaryType{ByteWidth: 3}, `["AAEC", null, "AwQF", "BgcI", "CQoL"]`},
		{arrow.BinaryTypes.String, `["a", null, "", "dé", "long enough"]`},
		{arrow.BinaryTypes.Binary, `["AAEC", null, "", "BgcI", "CQoLDA=="]`},
		{arrow.BinaryTypes.LargeString, `["a", null, "", "dé", "long enough"]`},
		{arrow.BinaryTypes.LargeBinary, `["AAEC", null, "", "BgcI", "CQoLDA=="]`},
		{extensions.NewUUIDType(), `["00000000-0000-0000-0000-000000000001", null, "f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"]`},
	}
	indexTypes := []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
	}
	indexCases := []struct {
		name, json string
		sliced     bool
	}{
		{"all", `[0, 1, 2, 3, 4]`, false},
		{"repeated", `[4, 4, 0, 2, 2, 3]`, false},
		{"null values", `[1, 1, 0]`, false},
		{"null indices", `[null, 3, null, 0]`, false},
		{"none", `[]`, false},
		{"sliced values", `[0, 2, 1, 0]`, true},
	}
	for _, tc := range types {
		for _, it := range indexTypes {
			for _, ic := range indexCases {
				t.Run(tc.dt.String()+"/"+it.String()+"/"+ic.name, func(t *testing.T) {
					mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					defer mem.AssertSize(t, 0)
					values := fromJSON(t, mem, tc.dt, tc.values)
					defer func() { values.Release() }()
					if ic.sliced {
						s := array.NewSlice(values, 1, 4)
						values.Release()
						values = s
					}
					indices := fromJSON(t, mem, it, ic.json)
					defer indices.Release()
					want, err := compute.TakeArray(compute.WithAllocator(context.Background(), mem), values, indices)
					if err != nil {
						t.Fatal(err)
					}
					defer want.Release()
					got, err := take(mem, values, indices)
					if err != nil {
						t.Fatal(err)
					}
					defer got.Release()
					if !arrow.TypeEqual(got.DataType(), want.DataType()) || !array.Equal(got, want) || got.NullN() != want.NullN() {
						t.Errorf("take = %s (%s, %d nulls), compute.TakeArray = %s (%s, %d nulls)",
							got, got.DataType(), got.NullN(), want, want.DataType(), want.NullN())
					}
					if v, ok := got.(interface{ ValidateFull() error }); ok {
						if err := v.ValidateFull(); err != nil {
							t.Errorf("take's array is not valid: %v", err)
						}
					}
				})
			}
		}
	}
}

// TestTakeRefuses checks take's errors: a type it does not read (a list,
// and a 32-bit decimal, which compute.TakeArray does not take either), indices
// that are not integers, and an index out of range, which compute.TakeArray
// refuses too.
func TestTakeRefuses(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	list := fromJSON(t, mem, arrow.ListOf(arrow.PrimitiveTypes.Int32), `[[1], null, [2, 3]]`)
	defer list.Release()
	text := fromJSON(t, mem, arrow.BinaryTypes.String, `["a", "b"]`)
	defer text.Release()
	idx := fromJSON(t, mem, arrow.PrimitiveTypes.Int64, `[1, 0]`)
	defer idx.Release()
	far := fromJSON(t, mem, arrow.PrimitiveTypes.Int64, `[0, 2]`)
	defer far.Release()
	negative := fromJSON(t, mem, arrow.PrimitiveTypes.Int32, `[-1]`)
	defer negative.Release()
	farUnsigned := fromJSON(t, mem, arrow.PrimitiveTypes.Uint64, `[18446744073709551615]`)
	defer farUnsigned.Release()
	floats := fromJSON(t, mem, arrow.PrimitiveTypes.Float64, `[0]`)
	defer floats.Release()

	small := fromJSON(t, mem, &arrow.Decimal32Type{Precision: 9, Scale: 2}, `["1.25", null]`)
	defer small.Release()
	ctx := compute.WithAllocator(context.Background(), mem)
	for _, values := range []arrow.Array{list, small} {
		if a, err := take(mem, values, idx); !errors.Is(err, arrow.ErrNotImplemented) || !strings.Contains(err.Error(), values.DataType().String()) {
			if a != nil {
				a.Release()
			}
			t.Errorf("take of %s: err = %v, want a not-implemented error naming the type", values.DataType(), err)
		}
	}
	if a, err := compute.TakeArray(ctx, small, idx); err == nil {
		a.Release()
		t.Errorf("compute.TakeArray of %s: no error", small.DataType())
	}
	if a, err := take(mem, text, floats); !errors.Is(err, arrow.ErrInvalid) {
		if a != nil {
			a.Release()
		}
		t.Errorf("take at float indices: err = %v, want an invalid-argument error", err)
	}
	for _, indices := range []arrow.Array{far, negative, farUnsigned} {
		a, err := take(mem, text, indices)
		if a != nil {
			a.Release()
		}
		want, werr := compute.TakeArray(ctx, text, indices)
		if want != nil {
			want.Release()
		}
		if !errors.Is(err, arrow.ErrIndex) || werr == nil || err.Error() != werr.Error() {
			t.Errorf("take at %s: err = %v, want an index error as compute.TakeArray's: %v", indices, err, werr)
		}
	}
}

// fromJSON is an array of type dt from JSON, allocated from mem.
func fromJSON(t *testing.T, mem memory.Allocator, dt arrow.DataType, json string) arrow.Array {
	t.Helper()
	a, _, err := array.FromJSON(mem, dt, strings.NewReader(json))
	if err != nil {
		t.Fatalf("%s from %s: %v", dt, json, err)
	}
	return a
}
