package upload

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/decode/arrowpq"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
)

// TestValidateGivesIngestsReason: for each bad file, the reason ingest
// writes into its quarantine report (the table existing, created from a
// good file with the same settings) and the reason upload --validate gives
// before sending it are the same, word for word after the file's name.
func TestValidateGivesIngestsReason(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no tzdata: %v", err)
	}
	const header = "time,device,temp\n"
	const good = header + "2026-01-05T10:00:00Z,d1,1.5\n"
	row := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(time.Date(2026, 1, 5, 10, 0, i%60, 0, time.UTC).Format(time.RFC3339) + ",d1,1.5\n")
		}
		return b.String()
	}
	gzipped := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write([]byte(s))
		_ = w.Close()
		return b.Bytes()
	}
	tests := []struct {
		name string
		key  string
		body []byte
		unit string
		loc  *time.Location
	}{
		{name: "unparsable time", key: "gw/bad-time.csv", body: []byte(good + "yesterday,d1,2\n")},
		{name: "null time", key: "gw/null-time.csv", body: []byte(good + ",d1,2\n")},
		{name: "time outside the accepted years", key: "gw/year.csv", body: []byte(good + "1800-01-01T00:00:00Z,d1,2\n")},
		{name: "ragged row", key: "gw/ragged.csv", body: []byte(good + "2026-01-05T10:00:01Z,d1\n")},
		{name: "ragged row after the sample", key: "gw/ragged-late.csv", body: []byte(header + row(1200) + "2026-01-05T10:00:01Z,d1\n")},
		{name: "bare quote", key: "gw/quote.csv", body: []byte(good + "2026-01-05T10:00:01Z,d\"1,2\n")},
		{name: "invalid UTF-8", key: "gw/latin1.csv", body: []byte(good + "2026-01-05T10:00:01Z,Z\xfcrich,2\n")},
		{name: "invalid UTF-8 in a name", key: "gw/latin1-name.csv", body: []byte("time,device,temp,gr\xf6\xdfe\n2026-01-05T10:00:01Z,d1,2,3\n")},
		{name: "duplicate column", key: "gw/dup.csv", body: []byte("time,device,device\n2026-01-05T10:00:01Z,d1,d2\n")},
		{name: "hexadecimal epoch", key: "gw/hex-epoch.csv", unit: "s", body: []byte(good + "0x1.a5bp30,d1,2\n")},
		{name: "digit separators in an epoch", key: "gw/sep-epoch.csv", unit: "s", body: []byte(good + "1_767_607_200,d1,2\n")},
		{name: "ambiguous local time", key: "gw/dst-end.csv", loc: berlin, body: []byte(good + "2026-10-25 02:30:00,d1,2\n")},
		{name: "skipped local time", key: "gw/dst-start.csv", loc: berlin, body: []byte(good + "2026-03-29 02:30:00,d1,2\n")},
		{name: "utf-16", key: "gw/utf16.csv", body: append([]byte{0xff, 0xfe}, "t\x00i\x00m\x00e\x00"...)},
		{name: "zstd", key: "gw/zstd.csv", body: []byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0}},
		{name: "excel sep line", key: "gw/sep.csv", body: []byte("sep=;\n" + good)},
		{name: "cr line ends", key: "gw/cr.csv", body: []byte(strings.ReplaceAll(good, "\n", "\r"))},
		{name: "binary", key: "gw/binary.csv", body: []byte(good + "\x00\x01\x02")},
		{name: "unnamed column with a value", key: "gw/unnamed.csv", body: []byte("time,device,temp,\n2026-01-05T10:00:01Z,d1,2,\n2026-01-05T10:00:02Z,d1,2,x\n")},
		{name: "empty", key: "gw/empty.csv", body: nil},
		{name: "gzip with trailing bytes", key: "gw/trailing.csv.gz", body: append(gzipped(good), "garbage"...)},
		{name: "truncated gzip", key: "gw/truncated.csv.gz", body: gzipped(header + row(500))[:200]},
		{name: "parquet with invalid UTF-8", key: "gw/latin1.parquet", body: parquetFile(t, 2026, "Z\xfcrich")},
		{name: "parquet time in year 9999", key: "gw/year.parquet", body: parquetFile(t, 9999, "d1")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			landingDir := t.TempDir()
			landing, err := storage.NewLocalStore(landingDir)
			if err != nil {
				t.Fatal(err)
			}
			l, err := lake.Open(ctx, t.TempDir(), lake.Options{})
			if err != nil {
				t.Fatal(err)
			}
			cfg := ingest.Config{Landing: landing, Lake: l, Table: lake.TableName{Namespace: "iot", Name: "readings"},
				TimeUnit: tc.unit, AssumeLocation: tc.loc, WorkDir: t.TempDir(), SettleTime: -1, OpenEndSettleTime: -1,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			put := func(key string, body []byte) {
				if _, err := landing.Put(ctx, key, bytes.NewReader(body), storage.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			put("a/good.csv", []byte(good))
			if rep, err := ingest.Run(ctx, cfg); err != nil || rep.Loaded != 1 {
				t.Fatalf("creating the table: %+v, %v", rep, err)
			}
			put(tc.key, tc.body)
			rep, err := ingest.Run(ctx, cfg)
			if err != nil || rep.Quarantined != 1 {
				t.Fatalf("ingest: %+v, %v; want the file quarantined", rep, err)
			}
			ingestReason := strings.TrimPrefix(rep.Files[0].Reason, tc.key)

			path := filepath.Join(t.TempDir(), filepath.FromSlash(tc.key))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.body, 0o644); err != nil {
				t.Fatal(err)
			}
			// Validate as timelake runs it (with the Parquet reader
			// registered, pqarrow) and as timelake-gateway does (decode's
			// own reader).
			for _, binary := range []string{"timelake", "timelake-gateway"} {
				if binary == "timelake-gateway" {
					prev := decode.SetParquetFormat(arrowpq.Format{})
					defer decode.SetParquetFormat(prev)
				}
				_, verr := Validate(ctx, path, ValidateOptions{TimeUnit: tc.unit, AssumeLocation: tc.loc})
				if verr == nil {
					t.Fatalf("%s: validate accepts the file ingest quarantined with %q", binary, rep.Files[0].Reason)
				}
				if got := strings.TrimPrefix(verr.Error(), path); got != ingestReason {
					t.Fatalf("%s: reasons differ:\ningest:   %s\nvalidate: %s", binary, ingestReason, got)
				}
			}
			t.Logf("%s%s", tc.key, ingestReason)
		})
	}
}

// parquetFile is a Parquet file of one row: a microsecond UTC time in the
// given year, a device name and a temperature.
func parquetFile(t *testing.T, year int, device string) []byte {
	return parquetOf(t, []arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "device", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "temp", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, func(b *array.RecordBuilder) {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(year, 1, 5, 10, 0, 0, 0, time.UTC).UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append(device)
		b.Field(2).(*array.Float64Builder).Append(1.5)
	})
}
