package decode_test

// The tests of this package read Parquet files as ingest does, with
// pqarrow (decode/pqarrowio registers it with decode.SetParquetFormat, as
// decode/arrowpq's Reader); decode/pqarrowio's tests compare
// decode/arrowpq's own reader with it.
import _ "github.com/timelake/timelake/internal/decode/pqarrowio"
