package decode_test

// The tests of this package read Parquet files as ingest does, with
// pqarrow (decode.SetParquetReader); decode/pqarrowio's tests compare
// decode's own reader with it.
import _ "github.com/timelake/timelake/internal/decode/pqarrowio"
