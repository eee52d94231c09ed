package ingest

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/timelake/timelake/internal/decode"
)

// TestCountDuplicatesPanic: a panic of the count of repeated rows on its
// goroutine is the refusal of the file (a *decode.FileError that IsPanic),
// not a crash, and every wait returns the same result; the count's own
// errors stay plain errors (a run's failure).
func TestCountDuplicatesPanic(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "device", Type: arrow.BinaryTypes.String},
	}, nil)
	dec := &decode.Decoded{Schema: sc, TimeColumn: "time", Rows: 1, Records: []arrow.RecordBatch{nil}}
	wait := countDuplicates("gw/a.csv", dec, []string{"device"})
	n, err := wait()
	var fe *decode.FileError
	if n != 0 || !errors.As(err, &fe) || !decode.IsPanic(err) || fe.Key != "gw/a.csv" {
		t.Fatalf("count of a broken piece: %d, %v; want a refusal of gw/a.csv after a panic", n, err)
	}
	if n2, err2 := wait(); n2 != n || err2 != err {
		t.Fatalf("second wait: %d, %v; want %d, %v", n2, err2, n, err)
	}

	dec = &decode.Decoded{Schema: sc, TimeColumn: "time", Rows: 1}
	if _, err := countDuplicates("gw/a.csv", dec, []string{"site"})(); err == nil || errors.As(err, &fe) {
		t.Fatalf("count by a column the piece lacks: %v; want a plain error", err)
	}
}
