package decode

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Evolution says which changes of an existing table's schema a landing file
// may bring (DecodeOptions.Evolve; ingest's --evolve, docs/schema.md). Off,
// a file with a column the table lacks is refused, naming the columns and
// the setting. Every change is one the Iceberg spec allows ("Schema
// Evolution") and loses nothing: a value is loaded exactly or its file is
// refused, as always.
type Evolution string

// The evolution modes.
const (
	// EvolveOff: the table's schema never changes on load.
	EvolveOff Evolution = "off"
	// EvolveAddColumns: a column the table lacks becomes a new nullable
	// column, its type inferred from the file's values as on creation (or
	// given by DecodeOptions.Columns). A new column that is empty in every
	// row of the file is left out: its type is unknown and it holds
	// nothing; the first file with a value adds it.
	EvolveAddColumns Evolution = "add-columns"
	// EvolveWiden adds columns as EvolveAddColumns does, and widens a
	// column whose values need it in the ways the Iceberg spec allows:
	// int -> long, float -> double, decimal(P, S) -> decimal(P2, S) with
	// the smallest P2 > P that holds them. long -> double is not such a
	// change: an integer column stays one.
	EvolveWiden Evolution = "widen"
)

// ParseEvolution reads off, add-columns or widen; "" is off.
func ParseEvolution(s string) (Evolution, error) {
	switch e := Evolution(s); e {
	case "":
		return EvolveOff, nil
	case EvolveOff, EvolveAddColumns, EvolveWiden:
		return e, nil
	}
	return "", fmt.Errorf("invalid schema evolution %q (expected off, add-columns or widen)", s)
}

func (e Evolution) addsColumns() bool { return e == EvolveAddColumns || e == EvolveWiden }

// evolvable reports whether err, Decode's error for a file of an existing
// table, is one opts.Evolve may turn into a schema change: columns the table
// lacks (add-columns, widen), or a value that does not fit an int, float or
// decimal column (widen), which a wider type might hold.
func evolvable(err error, opts DecodeOptions) bool {
	var fe *FileError
	if opts.Target == nil || !errors.As(err, &fe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if fe.newColumns {
		return opts.Evolve.addsColumns()
	}
	if opts.Evolve != EvolveWiden || fe.Column == "" || fe.Column == opts.TimeColumn {
		return false
	}
	idx := opts.Target.FieldIndices(fe.Column)
	return len(idx) == 1 && wider(opts.Target.Field(idx[0]).Type) != nil
}

// wider returns the next type a column of type dt may be widened to, nil
// when there is none: int -> long, float -> double, decimal(P, S) ->
// decimal(P+1, S) up to 38 digits.
func wider(dt arrow.DataType) arrow.DataType {
	switch t := dt.(type) {
	case *arrow.Int32Type:
		return arrow.PrimitiveTypes.Int64
	case *arrow.Float32Type:
		return arrow.PrimitiveTypes.Float64
	case *arrow.Decimal128Type:
		if t.Precision < 38 {
			return &arrow.Decimal128Type{Precision: t.Precision + 1, Scale: t.Scale}
		}
	}
	return nil
}

// decodeEvolve reads every batch of a file of an existing table whose
// columns or values do not fit target (evolvable), works out the schema the
// file needs, and converts the batches to it: target's fields, each widened
// as far as its values need when ro.evolve is EvolveWiden (the smallest
// wider type that holds every value), then the file's new columns in file
// order (nullable, typed as on creation: ro.columns, else inferred from
// every value; those empty in every row are left out). Without a change
// that makes the file fit, the error is the one decodeInto gives.
func decodeEvolve(ctx context.Context, ro *resolved, bs batchSource, target *arrow.Schema, timeCol string) (*Decoded, error) {
	raw, _, err := readAll(ctx, ro, bs)
	defer release(raw)
	if err != nil {
		return nil, err
	}
	src := bs.schema()
	fields := target.Fields()
	if ro.evolve == EvolveWiden {
		for i, f := range fields {
			j := src.FieldIndices(f.Name)
			if f.Name == timeCol || len(j) != 1 || wider(f.Type) == nil || converts(ro, src.Field(j[0]), f, raw, j[0]) {
				continue
			}
			for dt := wider(f.Type); dt != nil; dt = wider(dt) {
				try := f
				try.Type = dt
				if converts(ro, src.Field(j[0]), try, raw, j[0]) {
					fields[i] = try
					break
				}
			}
		}
	}
	ro.skip = map[string]bool{}
	for i, f := range src.Fields() {
		if target.HasField(f.Name) {
			continue
		}
		dt, ok := ro.columns[f.Name]
		if !ok {
			if allNull(raw, i) {
				ro.skip[f.Name] = true
				continue
			}
			if ro.text {
				dt = sniffText(ro, raw, i)
			} else if dt, err = normaliseType(f.Type); err != nil {
				return nil, &FileError{Key: ro.key, Column: f.Name, Reason: err.Error()}
			}
		}
		fields = append(fields, arrow.Field{Name: f.Name, Type: dt, Nullable: true})
	}
	sc := arrow.NewSchema(fields, nil)
	return convertAll(ctx, ro, src, sc, timeCol, raw)
}

// converts reports whether column i of batches converts to field dst.
func converts(ro *resolved, src arrow.Field, dst arrow.Field, batches []arrow.RecordBatch, i int) bool {
	conv, err := makeConverter(ro, dst.Name, src.Type, dst, false)
	if err != nil {
		return false
	}
	var rowBase int64
	for _, rec := range batches {
		out, err := conv(rec.Column(i), rowBase)
		if err != nil {
			return false
		}
		out.Release()
		rowBase += rec.NumRows()
	}
	return true
}

// allNull reports whether column i is null in every row of batches.
func allNull(batches []arrow.RecordBatch, i int) bool {
	for _, rec := range batches {
		if c := rec.Column(i); c.NullN() != c.Len() {
			return false
		}
	}
	return true
}
