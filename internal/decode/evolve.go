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
// file needs (evolution), and converts the batches to it (scanThenDecode):
// target's fields, each widened as far as its values need when ro.evolve
// is EvolveWiden (the smallest wider type that holds every value), then
// the file's new columns in file order (nullable, typed as on creation:
// ro.columns, else inferred from every value; those empty in every row
// are left out). Without a change that makes the file fit, the error is
// the one decodeInto gives.
func decodeEvolve(ctx context.Context, ro *resolved, bs batchSource, reopen func() (batchSource, error),
	target *arrow.Schema, timeCol string, out *pieces) error {
	ev := newEvolution(ro, bs.schema(), target, timeCol)
	return scanThenDecode(ctx, ro, bs, reopen, ev.add, func() (*arrow.Schema, string, error) {
		sc, err := ev.schema()
		return sc, timeCol, err
	}, out)
}

// evolution works out the schema a file of an existing table needs
// (decodeEvolve) from its batches, seen one at a time (add).
type evolution struct {
	ro          *resolved
	src, target *arrow.Schema
	widen       []widening
	added       []addedColumn
	rows        int64
}

// widening is a column of the table that a file's values may widen: types
// are its type and each wider one (wider), at the narrowest of them that
// holds every value seen so far (len(types): none does). A wider type holds
// every value a narrower one does (int -> long, float -> double, more
// decimal digits), so a batch that does not fit moves on to the next type
// without looking at the earlier batches again.
type widening struct {
	field, col int // in target, in the file
	types      []arrow.DataType
	at         int
	conv       convertFn // converts to types[at]; nil until made
}

// addedColumn is a file column the table lacks.
type addedColumn struct {
	col     int
	given   arrow.DataType // ro.columns' type, or nil
	allNull bool
	sniff   textSniff
}

func newEvolution(ro *resolved, src, target *arrow.Schema, timeCol string) *evolution {
	ev := &evolution{ro: ro, src: src, target: target}
	if ro.evolve == EvolveWiden {
		for i, f := range target.Fields() {
			j := src.FieldIndices(f.Name)
			if f.Name == timeCol || len(j) != 1 || wider(f.Type) == nil {
				continue
			}
			w := widening{field: i, col: j[0]}
			for dt := f.Type; dt != nil; dt = wider(dt) {
				w.types = append(w.types, dt)
			}
			ev.widen = append(ev.widen, w)
		}
	}
	for i, f := range src.Fields() {
		if target.HasField(f.Name) {
			continue
		}
		a := addedColumn{col: i, allNull: true, sniff: textSniff{canInt: true, canFloat: true, canBool: true}}
		if dt, ok := ro.columns[f.Name]; ok {
			a.given = dt
		}
		ev.added = append(ev.added, a)
	}
	return ev
}

// add looks at the next batch of the file.
func (ev *evolution) add(rec arrow.RecordBatch) {
	for k := range ev.widen {
		w := &ev.widen[k]
		for w.at < len(w.types) {
			if w.conv == nil {
				try := ev.target.Field(w.field)
				try.Type = w.types[w.at]
				conv, err := makeConverter(ev.ro, try.Name, ev.src.Field(w.col).Type, try, false)
				if err != nil {
					w.at++
					continue
				}
				w.conv = conv
			}
			out, err := w.conv(rec.Column(w.col), ev.rows)
			if err == nil {
				out.Release()
				break
			}
			w.at, w.conv = w.at+1, nil
		}
	}
	for k := range ev.added {
		a := &ev.added[k]
		if a.given != nil {
			continue
		}
		c := rec.Column(a.col)
		if c.NullN() != c.Len() {
			a.allNull = false
		}
		if ev.ro.text {
			a.sniff.add(ev.ro, c)
		}
	}
	ev.rows += rec.NumRows()
}

// schema returns the schema of the batches added, and sets ro.skip to the
// new columns left out.
func (ev *evolution) schema() (*arrow.Schema, error) {
	fields := ev.target.Fields()
	for _, w := range ev.widen {
		if w.at > 0 && w.at < len(w.types) {
			fields[w.field].Type = w.types[w.at]
		}
	}
	ev.ro.skip = map[string]bool{}
	for _, a := range ev.added {
		f := ev.src.Field(a.col)
		dt := a.given
		switch {
		case dt != nil:
		case a.allNull:
			ev.ro.skip[f.Name] = true
			continue
		case ev.ro.text:
			dt = a.sniff.dataType()
		default:
			var err error
			if dt, err = normaliseType(f.Type); err != nil {
				return nil, &FileError{Key: ev.ro.key, Column: f.Name, Reason: err.Error()}
			}
		}
		fields = append(fields, arrow.Field{Name: f.Name, Type: dt, Nullable: true})
	}
	return arrow.NewSchema(fields, nil), nil
}
