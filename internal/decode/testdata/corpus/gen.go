//go:build ignore

// gen writes the files of the decoder's regression corpus whose bytes are
// easier to write with code than by hand (other encodings, compression,
// binary content, Parquet). Run from the repository root:
//
//	go run ./internal/decode/testdata/corpus/gen.go
//
// It rewrites the files below the corpus folder and leaves manifest.json
// alone: a new case is a file (written by hand or added here) plus its
// entry in manifest.json (see README.md).
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/timelake/timelake/internal/testutil/pagecrc"
)

var dir = filepath.Join("internal", "decode", "testdata", "corpus")

func main() {
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		fail(fmt.Errorf("run from the repository root: %w", err))
	}
	for name, body := range files() {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fail(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}

const (
	header = "time,device,v\n"
	row1   = "2026-01-05T10:00:00Z,d1,1.5\n"
	good   = header + row1
)

// rowN is row n (from 1) of a plain file: one second apart.
func rowN(n int) string {
	return fmt.Sprintf("%s,d%d,%d.5\n", time.Date(2026, 1, 5, 10, 0, n-1, 0, time.UTC).Format(time.RFC3339), n%3, n)
}

// second is a file whose second data row carries value in column v.
func second(v string) []byte {
	return []byte(good + "2026-01-05T10:00:01Z,d1," + v + "\n")
}

// secondDevice is a file whose second data row carries device d.
func secondDevice(d string) []byte {
	return []byte(good + "2026-01-05T10:00:01Z," + d + ",2\n")
}

func files() map[string][]byte {
	f := map[string][]byte{}
	text := func(name, s string) { f[name] = []byte(s) }

	// numbers: the text number rules.
	f["numbers/hex-float.csv"] = second("0x1.8p1")
	f["numbers/digit-separator.csv"] = second("1_000")
	text("numbers/thousands-comma.tsv", "time\tdevice\tv\n2026-01-05T10:00:00Z\td1\t1.5\n2026-01-05T10:00:01Z\td1\t1,000.5\n")
	f["numbers/underflow.csv"] = second("1e-400")
	f["numbers/overflow.csv"] = second("1e309")
	f["numbers/whole-beyond-2p53.csv"] = second("9007199254740993")
	f["numbers/uint64-max.csv"] = second("18446744073709551615")
	text("numbers/whole-exact.csv", header+
		"2026-01-05T10:00:00Z,d1,9007199254740992\n2026-01-05T10:00:01Z,d1,18014398509481984\n2026-01-05T10:00:02Z,d1,-9007199254740992\n")
	text("numbers/words.csv", header+
		"2026-01-05T10:00:00Z,d1,NaN\n2026-01-05T10:00:01Z,d1,nan\n2026-01-05T10:00:02Z,d1,Inf\n2026-01-05T10:00:03Z,d1,+Infinity\n2026-01-05T10:00:04Z,d1,-inf\n")
	f["numbers/signed-nan.csv"] = second("-nan")
	text("numbers/decimal-forms.csv", header+
		"2026-01-05T10:00:00Z,d1,.5\n2026-01-05T10:00:01Z,d1,5.\n2026-01-05T10:00:02Z,d1, 2.5 \n2026-01-05T10:00:03Z,d1,+1.5\n"+
		"2026-01-05T10:00:04Z,d1,1E3\n2026-01-05T10:00:05Z,d1,0.30000000000000004\n2026-01-05T10:00:06Z,d1,1.7976931348623157e308\n"+
		"2026-01-05T10:00:07Z,d1,5e-324\n")
	text("numbers/long-overflow.csv", "time,n\n2026-01-05T10:00:00Z,9223372036854775807\n2026-01-05T10:00:01Z,9223372036854775808\n")
	text("numbers/fraction-into-long.csv", "time,n\n2026-01-05T10:00:00Z,1\n2026-01-05T10:00:01Z,1.5\n")
	text("numbers/plus-and-zeros.csv", "time,n,v\n2026-01-05T10:00:00Z,+007,007.50\n2026-01-05T10:00:01Z,-0,-000.25\n")
	text("numbers/epoch-fraction.csv", "time,v\n1767607200.123456789,1\n1767607201,2\n")
	text("numbers/epoch-exponent.csv", "time,v\n1.7676072e9,1\n")
	text("numbers/epoch-hex.csv", "time,v\n1767607200,1\n0x1.a5bp30,2\n")
	text("numbers/epoch-separators.csv", "time,v\n1767607200,1\n1_767_607_201,2\n")
	text("numbers/inferred-big-integer.csv", "time,id\n2026-01-05T10:00:00Z,9007199254740993\n2026-01-05T10:00:01Z,1.5\n")
	text("numbers/inferred-hex.csv", "time,addr\n2026-01-05T10:00:00Z,0x42ef4\n2026-01-05T10:00:01Z,0x42f05\n")
	f["numbers/int64-beyond-2p53.parquet"] = parquetFile(timeDevice(arrow.PrimitiveTypes.Int64, func(b array.Builder) {
		b.(*array.Int64Builder).Append(9007199254740993)
	}))
	f["numbers/uint64.parquet"] = parquetFile(timeDevice(arrow.PrimitiveTypes.Uint64, func(b array.Builder) {
		b.(*array.Uint64Builder).Append(18446744073709551615)
	}))
	f["numbers/int64-exact.parquet"] = parquetFile(timeDevice(arrow.PrimitiveTypes.Int64, func(b array.Builder) {
		b.(*array.Int64Builder).AppendValues([]int64{9007199254740992, 1 << 60}, nil)
	}))
	f["numbers/epoch-int64.parquet"] = parquetFile(record(
		[]arrow.Field{{Name: "time", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true}},
		func(bs []array.Builder) {
			bs[0].(*array.Int64Builder).Append(1767607200123)
			bs[1].(*array.Float64Builder).Append(1.5)
		}))

	// local-times: wall-clock times under --assume-timezone.
	text("local-times/ambiguous.csv", "time,v\n2026-10-25 01:30:00,1\n2026-10-25 02:30:00,2\n")
	text("local-times/skipped.csv", "time,v\n2026-03-29 01:30:00,1\n2026-03-29 02:30:00,2\n")
	text("local-times/around-changes.csv", "time,v\n2026-03-29 01:59:59,1\n2026-03-29 03:00:00,2\n2026-10-25 01:59:59,3\n2026-10-25 03:00:00,4\n2026-10-25T02:30:00+01:00,5\n")
	text("local-times/new-york-skipped.csv", "time,v\n2026-03-08 02:30:00,1\n")
	text("local-times/fixed-zone.csv", "time,v\n2026-10-25 02:30:00,1\n")
	f["local-times/naive-ambiguous.parquet"] = parquetFile(naiveTimes(time.Date(2026, 10, 25, 2, 30, 0, 0, time.UTC)))
	f["local-times/naive-utc.parquet"] = parquetFile(naiveTimes(time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)))

	// utf8: string values and names must be UTF-8.
	f["utf8/latin1-value.csv"] = secondDevice("Z\xfcrich")
	text("utf8/latin1-header.csv", "time,device,v,gr\xf6\xdfe\n2026-01-05T10:00:00Z,d1,1.5,3\n")
	f["utf8/windows-1252-quotes.csv"] = secondDevice("\x93quoted\x94")
	text("utf8/split-character.csv", header+"2026-01-05T10:00:00Z,ab\xc3,1\n2026-01-05T10:00:01Z,\xbccd,2\n")
	f["utf8/overlong.csv"] = secondDevice("\xc0\xaf")
	f["utf8/surrogate.csv"] = secondDevice("\xed\xa0\x80")
	text("utf8/multibyte.csv", header+"2026-01-05T10:00:00Z,Zürich,1\n2026-01-05T10:00:01Z,東京,2\n2026-01-05T10:00:02Z,😀,3\n2026-01-05T10:00:03Z,e\u0301,4\n")
	f["utf8/java-modified-nul.csv"] = secondDevice("d\xc0\x801")
	f["utf8/java-modified-emoji.csv"] = secondDevice("\xed\xa0\xbd\xed\xb8\x80")
	f["utf8/java-modified-emoji.parquet"] = parquetFile(timeDeviceStrings(false, "ok", "\xed\xa0\xbd\xed\xb8\x80"))
	f["utf8/beyond-10ffff.csv"] = secondDevice("\xf4\x90\x80\x80")
	f["utf8/cut-off.csv"] = secondDevice("ab\xe6\x9d")
	f["utf8/invalid.parquet"] = parquetFile(timeDeviceStrings(false, "ok", "Z\xfcrich"))
	f["utf8/dictionary-invalid.parquet"] = parquetFile(timeDeviceStrings(true, "R\xc9UNION", "ok"))

	// whole-file: problems with the file as a whole.
	f["whole-file/utf16le.csv"] = append([]byte{0xff, 0xfe}, utf16le(good)...)
	f["whole-file/utf16be.csv"] = append([]byte{0xfe, 0xff}, utf16be(good)...)
	f["whole-file/utf32le.csv"] = append([]byte{0xff, 0xfe, 0, 0}, utf32le(good)...)
	f["whole-file/utf16le-no-bom.csv"] = utf16le(good)
	f["whole-file/zstd.csv"] = zstdBytes(good)
	f["whole-file/bzip2.csv"] = append([]byte("BZh91AY&SY"), 0x4e, 0xec, 0xe8, 0x36, 0, 0, 0x02, 0x51)
	f["whole-file/xz.csv"] = []byte{0xfd, '7', 'z', 'X', 'Z', 0, 0, 4, 0xe6, 0xd6, 0xb4, 0x46}
	f["whole-file/xlsx.csv"] = zipBytes("xl/worksheets/sheet1.xml", "<worksheet/>")
	f["whole-file/xls.csv"] = append([]byte{0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1}, make([]byte, 24)...)
	f["whole-file/double-gzip.csv.gz"] = gzipBytes(string(gzipBytes(good)))
	f["whole-file/gzip-trailing-garbage.csv.gz"] = append(gzipBytes(good), "2026-01-05T10:00:01Z,d1,2\n"...)
	f["whole-file/gzip-trailing-zeros.csv.gz"] = append(gzipBytes(good), make([]byte, 512)...)
	f["whole-file/gzip-truncated.csv.gz"] = gzipBytes(good + rowN(2) + rowN(3))[:40]
	crc := gzipBytes(good)
	crc[len(crc)-6] ^= 0xff
	f["whole-file/gzip-bad-checksum.csv.gz"] = crc
	f["whole-file/gzip-members.csv.gz"] = append(gzipBytes(good+rowN(2)), gzipBytes(rowN(3))...)
	text("dialects/excel-sep-quoted-bom.csv", "\xef\xbb\xbf\"sep=,\"\r\n"+strings.ReplaceAll(good+rowN(2), "\n", "\r\n"))
	text("whole-file/cr-line-ends.csv", strings.ReplaceAll(good+rowN(2), "\n", "\r"))
	text("whole-file/cr-inside-data.csv", "time,device,v\r\n2026-01-05T10:00:00Z,d1,1.5\r2026-01-05T10:00:01Z,d1,2\r\n")
	f["whole-file/zero-tail.csv"] = append([]byte(good+rowN(2)), make([]byte, 64)...)
	text("whole-file/nul-in-header.csv", "time,dev\x00ice,v\n"+row1)
	f["whole-file/png.csv"] = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")
	f["whole-file/empty.csv"] = []byte{}
	f["whole-file/bom-only.csv"] = []byte("\xef\xbb\xbf")
	text("whole-file/blank-lines-only.csv", "\n\n\r\n")
	f["whole-file/gzip-empty.csv.gz"] = gzipBytes("")
	text("whole-file/not-parquet.parquet", good)
	pq := parquetFile(timeDevice(arrow.PrimitiveTypes.Float64, func(b array.Builder) { b.(*array.Float64Builder).Append(1.5) }))
	f["whole-file/truncated.parquet"] = pq[:len(pq)-20]
	f["whole-file/int96-year-1200.parquet"] = int96File(time.Date(1200, 1, 1, 0, 0, 59, 0, time.UTC))
	f["whole-file/zlib.csv.gz"] = zlibBytes(good + rowN(2))
	tarball := tarBytes(map[string]string{
		"export/2026-01-05.csv": good, "export/2026-01-06.csv": header + "2026-01-06T10:00:00Z,d1,2.5\n",
	})
	f["whole-file/tar.csv.gz"] = gzipBytes(string(tarball))
	f["whole-file/tar-not-gzip.csv.gz"] = tarball
	encrypted := bytes.Clone(pq)
	copy(encrypted, "PARE")
	copy(encrypted[len(encrypted)-4:], "PARE")
	f["whole-file/encrypted.parquet"] = encrypted
	f["whole-file/parquet-trailing-zeros.parquet"] = append(bytes.Clone(pq), make([]byte, 512)...)

	// empty: files without data rows.
	text("empty/header-only.csv", header)
	text("empty/header-only-crlf-bom.csv", "\xef\xbb\xbftime,device,v\r\n")
	f["empty/header-only.csv.gz"] = gzipBytes(header)
	f["empty/zero-rows.parquet"] = parquetFile(timeDevice(arrow.PrimitiveTypes.Float64, nil))
	text("empty/header-only-no-table.csv", header)

	// unnamed-column: a delimiter at the end of every line.
	text("unnamed-column/trailing-delimiter.csv", "time,device,v,\n2026-01-05T10:00:00Z,d1,1.5,\n2026-01-05T10:00:01Z,d2,2,\n")
	text("unnamed-column/two-trailing.csv", "time,device,v,,\n2026-01-05T10:00:00Z,d1,1.5,,\n")
	text("unnamed-column/with-value.csv", "time,device,v,\n2026-01-05T10:00:00Z,d1,1.5,\n2026-01-05T10:00:01Z,d2,2,x\n")
	text("unnamed-column/middle.csv", "time,,v\n2026-01-05T10:00:00Z,d1,1.5\n")
	text("unnamed-column/inferred.csv", "time,v,\n2026-01-05T10:00:00Z,1.5,\n")

	// time-range: the accepted years of the time column.
	text("time-range/bounds.csv", "time,v\n1900-01-01T00:00:00Z,1\n2199-12-31T23:59:59.999999Z,2\n")
	text("time-range/year-1899.csv", "time,v\n1899-12-31T23:59:59Z,1\n")
	text("time-range/year-2200.csv", "time,v\n2026-01-05T10:00:00Z,1\n2200-01-01T00:00:00Z,2\n")
	f["time-range/placeholder-0001.parquet"] = parquetFile(utcTimes(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)))
	f["time-range/placeholder-9999.parquet"] = parquetFile(utcTimes(time.Date(9999, 12, 23, 23, 59, 59, 0, time.UTC)))
	text("time-range/ms-as-seconds.csv", "time,v\n1767607200000,1\n")
	text("time-range/other-column.csv", "time,installed\n2026-01-05T10:00:00Z,1850-06-01T00:00:00Z\n")

	// null-tokens: only an empty cell is null.
	text("null-tokens/strings.csv", header+"2026-01-05T10:00:00Z,NULL,1\n2026-01-05T10:00:01Z,NA,2\n2026-01-05T10:00:02Z,N/A,3\n2026-01-05T10:00:03Z,,4\n2026-01-05T10:00:04Z,null,5\n")
	f["null-tokens/in-double.csv"] = second("NULL")
	text("null-tokens/quoted-empty.csv", header+"2026-01-05T10:00:00Z,\"\",1\n")

	// duplicates: rows repeating a (series key, time).
	text("duplicates/same-key-and-time.csv", header+
		"2026-01-05T10:00:00Z,d1,1\n2026-01-05T10:00:00Z,d2,2\n2026-01-05T10:00:00Z,d1,3\n2026-01-05T10:00:01Z,d1,4\n2026-01-05T10:00:01Z,d1,4\n")
	text("duplicates/unsorted.csv", header+
		"2026-01-05T10:00:02Z,d1,1\n2026-01-05T10:00:00Z,d1,2\n2026-01-05T10:00:02Z,d1,3\n2026-01-05T10:00:00Z,d2,4\n")

	// lines: errors name the line.
	text("lines/ragged.csv", good+"2026-01-05T10:00:01Z,d1\n")
	text("lines/ragged-after-quoted-newline.csv", header+"2026-01-05T10:00:00Z,\"d\n1\",1.5\n2026-01-05T10:00:01Z,d1,2,extra\n")
	text("lines/value-after-blank-lines.csv", header+"\n"+row1+"\n\n2026-01-05T10:00:01Z,d1,warm\n")
	text("lines/bare-quote.csv", header+"2026-01-05T10:00:00Z,d\"1,1.5\n")
	text("lines/unterminated-quote.csv", header+"2026-01-05T10:00:00Z,\"d1,1.5\n")
	f["lines/nul-in-value.csv"] = secondDevice("d\x001")
	f["lines/nul-in-number.csv"] = second("2\x00")
	text("lines/nul-in-inferred.csv", "time,device,v\n2026-01-05T10:00:00Z,d\x001,1.5\n")
	text("lines/quote-quote-a.csv", "time,note\n2026-01-05T10:00:00Z,A\n2026-01-05T10:00:01Z,\"\"A\"\"\n")

	// handled: cases the decoder handled before these rules.
	text("handled/quoted-newline.csv", header+"2026-01-05T10:00:00Z,\"line 1\nline 2\",1.5\n")
	text("handled/quoted-crlf.csv", "time,device,v\r\n2026-01-05T10:00:00Z,\"line 1\r\nline 2\",1.5\r\n")
	text("handled/quoted-terminal-newline.csv", header+"2026-01-05T10:00:00Z,\"value of forex = 1\n\",1.5\n")
	text("handled/mixed-line-ends.csv", "time,device,v\r\n"+row1+rowN(2)[:len(rowN(2))-1]+"\r\n"+rowN(3))
	text("handled/bom-excel.csv", "\xef\xbb\xbf"+strings.ReplaceAll(good+rowN(2), "\n", "\r\n"))
	text("handled/no-final-newline.csv", good+strings.TrimSuffix(rowN(2), "\n"))
	text("handled/blank-lines.csv", header+"\n"+row1+"\n\r\n"+rowN(2)+"\n")
	text("handled/quoted-header.csv", "\"time\",\"device\",\"v\"\n"+row1)
	text("handled/escaped-quotes.csv", header+"2026-01-05T10:00:00Z,\"say \"\"hi\"\"\",1.5\n")
	text("handled/nanoseconds.csv", header+"2026-01-05T10:00:00.123456789Z,d1,1.5\n")
	text("handled/offsets.csv", header+"2026-01-05T12:00:00+02:00,d1,1\n2026-01-05T04:30:01-0530,d1,2\n2026-01-05T12:00:02+02,d1,3\n2026-01-05t10:00:03z,d1,4\n2026-01-05 10:00:04,d1,5\n")
	text("handled/bare-date.csv", header+"2026-01-05,d1,1.5\n")
	text("handled/reordered.csv", "v,time,device\n1.5,2026-01-05T10:00:00Z,d1\n")
	text("handled/missing-nullable.csv", "time,device\n2026-01-05T10:00:00Z,d1\n")
	text("handled/spaces-around-numbers.csv", header+"2026-01-05T10:00:00Z,d1, 1.5 \n")
	text("handled/tab.tsv", "time\tdevice\tv\n2026-01-05T10:00:00Z\t\"d,1\"\t1.5\n")
	f["handled/gzip.csv.gz"] = gzipBytes(good + rowN(2))
	var late strings.Builder
	late.WriteString(header)
	for n := 1; n <= 40; n++ {
		late.WriteString(rowN(n))
	}
	late.WriteString("2026-01-05T10:00:40Z,\"Beth, Bens. Co.\",41.5\n")
	text("handled/quoted-comma-late.csv", late.String())
	f["handled/dictionary.parquet"] = parquetFile(timeDeviceStrings(true, "d1", "d2", "d1"))
	f["handled/int96.parquet"] = parquetFile(nanoTimes(), pqarrow.WithDeprecatedInt96Timestamps(true))
	f["handled/millis.parquet"] = parquetFile(record([]arrow.Field{
		{Name: "time", Type: arrow.FixedWidthTypes.Timestamp_ms}, {Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, func(bs []array.Builder) {
		bs[0].(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 1, 5, 10, 0, 0, 250e6, time.UTC).UnixMilli()))
		bs[1].(*array.Float64Builder).Append(1.5)
	}))
	f["handled/nanos.parquet"] = parquetFile(nanoTimes())
	f["handled/row-groups.parquet"] = parquetFile(timeDevice(arrow.PrimitiveTypes.Float64, func(b array.Builder) {
		b.(*array.Float64Builder).AppendValues([]float64{1, 2, 3, 4, 5}, nil)
	}), parquet.WithMaxRowGroupLength(2))
	f["handled/zstd-pages.parquet"] = parquetFile(timeDevice(arrow.PrimitiveTypes.Float64, func(b array.Builder) {
		b.(*array.Float64Builder).Append(1.5)
	}), parquet.WithCompression(compress.Codecs.Zstd))
	f["handled/float32.parquet"] = parquetFile(timeDevice(arrow.PrimitiveTypes.Float32, func(b array.Builder) {
		b.(*array.Float32Builder).AppendValues([]float32{0.1}, nil)
	}))
	text("handled/epoch-without-unit.csv", "time,v\n1767607200,1\n")
	text("handled/duplicate-header.csv", "time,device,device\n2026-01-05T10:00:00Z,d1,d2\n")
	text("handled/extra-column.csv", "time,device,v,humidity\n2026-01-05T10:00:00Z,d1,1.5,40\n")
	text("handled/missing-required.csv", "time,v\n2026-01-05T10:00:00Z,1.5\n")
	text("handled/null-time.csv", good+",d1,2\n")
	text("handled/bad-time.csv", good+"yesterday,d1,2\n")
	text("handled/excel-dates.csv", header+"05/01/2026 10:00,d1,1.5\n")
	text("handled/leap-second.csv", header+"2016-12-31T23:59:60Z,d1,1.5\n")

	// line-ends: LF or CRLF, and carriage returns only inside quotes.
	crcrlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\r\n") }
	text("line-ends/cr-cr-lf.csv", crcrlf(good+rowN(2)))
	text("line-ends/cr-cr-lf-data.csv", header+crcrlf(row1+rowN(2)))
	text("line-ends/cr-cr-lf-string.csv", "time,v,device\r\n2026-01-05T10:00:00Z,1.5,d1\r\n"+crcrlf("2026-01-05T10:00:01Z,2,d2\n"))
	text("line-ends/cr-cr-lf-quoted.csv", "time,v,device\r\n2026-01-05T10:00:00Z,1.5,\"d 1\"\r\n"+crcrlf("2026-01-05T10:00:01Z,2,\"d 2\"\n"))
	text("line-ends/cr-cr-lf.tsv", "time\tdevice\tv\n"+crcrlf("2026-01-05T10:00:00Z\td1\t1.5\n"))
	text("line-ends/cr-in-value.csv", good+"2026-01-05T10:00:01Z,d\r1,2\n")
	text("line-ends/cr-at-end.csv", good+"2026-01-05T10:00:01Z,d1,2\r")
	text("line-ends/quoted-crlf-lf-file.csv", header+"2026-01-05T10:00:00Z,\"a\r\nb\",1.5\n2026-01-05T10:00:01Z,\"c\r\r\nd\",2\n2026-01-05T10:00:02Z,\"e\rf\",3\n")
	text("line-ends/quoted-crlf-at-end.csv", "time,v,note\r\n2026-01-05T10:00:00Z,1.5,\"first\r\n\"\r\n2026-01-05T10:00:01Z,2,second\r\n")
	text("line-ends/quoted-crlf-inferred.csv", "time,note,v\r\n2026-01-05T10:00:00Z,\"a\r\nb\",1\r\n")

	// parquet-types: Parquet types at their extremes.
	halves := timeDevice(arrow.FixedWidthTypes.Float16, func(b array.Builder) {
		for _, bits := range []uint16{0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0x3555} {
			b.(*array.Float16Builder).Append(float16.FromBits(bits))
		}
	})
	halves.Retain()
	f["parquet-types/float16.parquet"] = parquetFile(halves)
	f["parquet-types/float16-into-double.parquet"] = parquetFile(halves)
	f["parquet-types/unsigned.parquet"] = parquetFile(record([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true}, {Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true}, {Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	}, func(bs []array.Builder) {
		for i := range 2 {
			bs[0].(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 1, 5, 10, 0, i, 0, time.UTC).UnixMicro()))
		}
		bs[1].(*array.Uint8Builder).AppendValues([]uint8{0, 255}, nil)
		bs[2].(*array.Uint16Builder).AppendValues([]uint16{0, 65535}, nil)
		bs[3].(*array.Uint32Builder).AppendValues([]uint32{0, 4294967295}, nil)
		bs[4].(*array.Uint64Builder).AppendValues([]uint64{0, 9223372036854775807}, nil)
	}))
	f["parquet-types/uint8-beyond-width.parquet"] = lowLevelFile(
		leaf("v", schema.NewIntLogicalType(8, false), parquet.Types.Int32), []int32{255, 256})
	f["parquet-types/int96-extremes.parquet"] = lowLevelFile(leaf("v", nil, parquet.Types.Int96), []parquet.Int96{
		// Near the ends of the nanosecond range, within the 2^53
		// microseconds JavaScript readers hold exactly.
		int96(time.Date(1685, 1, 1, 0, 0, 0, 123000789, time.UTC)), int96(time.Date(2254, 12, 31, 23, 59, 59, 999000999, time.UTC)),
	})
	f["parquet-types/int96-year-1200.parquet"] = lowLevelFile(leaf("v", nil, parquet.Types.Int96), []parquet.Int96{
		int96(time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)), int96(time.Date(1200, 1, 1, 0, 0, 0, 0, time.UTC)),
	})
	midnight := int96(time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC))
	midnight.SetNanoSeconds(86_400_000_000_000)
	f["parquet-types/int96-time-of-day.parquet"] = lowLevelFile(leaf("v", nil, parquet.Types.Int96), []parquet.Int96{
		int96(time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)), midnight,
	})
	f["parquet-types/decimal-beyond-precision.parquet"] = lowLevelFile(
		leaf("v", schema.NewDecimalLogicalType(4, 2), parquet.Types.Int32), []int32{9999, 123456})
	f["parquet-types/large-and-dictionary-strings.parquet"] = parquetFile(largeStrings())
	f["parquet-types/enum.parquet"] = enumFile()
	f["parquet-types/uuid-into-string.parquet"] = uuidFile()

	// parquet-pages: how Parquet pages are stored.
	plain := parquetFile(timeDevice(arrow.PrimitiveTypes.Float64, func(b array.Builder) {
		b.(*array.Float64Builder).AppendValues([]float64{1.5, 2.5, 3.5}, nil)
	}), parquet.WithDictionaryDefault(false), parquet.WithCompression(compress.Codecs.Uncompressed))
	withCRC := pagecrc.WithChecksums(genTB{}, plain)
	f["parquet-pages/checksums.parquet"] = withCRC
	vPages := pagecrc.Pages(genTB{}, withCRC, 0, "v")
	f["parquet-pages/checksum-mismatch.parquet"] = pagecrc.FlipLastValueBit(withCRC, vPages[len(vPages)-1])
	f["parquet-pages/lz4-hadoop.parquet"] = lz4File(lz4Hadoop)
	f["parquet-pages/lz4-frame.parquet"] = lz4File(lz4Frame)
	return f
}

// genTB lets the test helpers of pagecrc run here: a failure ends gen.
type genTB struct{ testing.TB }

func (genTB) Helper()                   {}
func (genTB) Fatal(args ...any)         { fail(fmt.Errorf("%s", fmt.Sprint(args...))) }
func (genTB) Fatalf(f string, a ...any) { fail(fmt.Errorf(f, a...)) }

// lz4Writer is the deprecated Parquet codec LZ4 (codec 5), arrow-go
// reading none of it, its pages written by encode.
type lz4Writer struct{ encode func([]byte) []byte }

func (c lz4Writer) Encode(_, src []byte) []byte             { return c.encode(src) }
func (c lz4Writer) EncodeLevel(_, src []byte, _ int) []byte { return c.encode(src) }
func (lz4Writer) CompressBound(n int64) int64               { return 64 + 2*n }
func (lz4Writer) Decode(_, _ []byte) []byte                 { panic("gen writes LZ4 pages only") }

// lz4File is 8 rows of (time, device, v), no dictionary, the pages in the
// deprecated LZ4 codec (codec 5) as encode writes them.
func lz4File(encode func([]byte) []byte) []byte {
	compress.RegisterCodec(compress.Codecs.Lz4, lz4Writer{encode: encode})
	return parquetFile(timeDevice(arrow.PrimitiveTypes.Float64, func(b array.Builder) {
		for i := range 8 {
			b.(*array.Float64Builder).Append(float64(i) + 0.5)
		}
	}), parquet.WithDictionaryDefault(false), parquet.WithCompression(compress.Codecs.Lz4))
}

// lz4Block is src as a raw LZ4 block (literals alone where LZ4 finds no
// match).
func lz4Block(src []byte) []byte {
	dst := make([]byte, lz4.CompressBlockBound(len(src)))
	n, err := lz4.CompressBlock(src, dst, nil)
	if err != nil {
		fail(err)
	}
	if n > 0 || len(src) == 0 {
		return dst[:n]
	}
	// One sequence of literals: the token, the length beyond 15 in bytes
	// of 255 and a last byte, then the bytes.
	out := []byte{0xf0}
	if len(src) < 15 {
		out[0] = byte(len(src)) << 4
	} else {
		rest := len(src) - 15
		for ; rest >= 255; rest -= 255 {
			out = append(out, 255)
		}
		out = append(out, byte(rest))
	}
	return append(out, src...)
}

// lz4Hadoop is src in the Hadoop framing of parquet-mr and Arrow C++: a
// 4-byte big-endian uncompressed size, a 4-byte big-endian compressed size
// and a raw LZ4 block.
func lz4Hadoop(src []byte) []byte {
	b := lz4Block(src)
	out := binary.BigEndian.AppendUint32(nil, uint32(len(src)))
	out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
	return append(out, b...)
}

// lz4Frame is src in the LZ4 frame format, as older pyarrow wrote LZ4
// pages.
func lz4Frame(src []byte) []byte {
	var b bytes.Buffer
	w := lz4.NewWriter(&b)
	if _, err := w.Write(src); err != nil {
		fail(err)
	}
	if err := w.Close(); err != nil {
		fail(err)
	}
	return b.Bytes()
}

// columnsFile writes a required column "time" (INT64 TIMESTAMP(MICROS,
// UTC), one second apart from 2026-01-05T10:00:00Z) for rows rows and
// the columns of nodes, each written by its write, with the low-level
// writer and no Arrow schema, as parquet-mr writes files.
func columnsFile(rows int, nodes []schema.Node, writes []func(file.ColumnChunkWriter) error) []byte {
	tn, err := schema.NewPrimitiveNodeLogical("time", parquet.Repetitions.Required,
		schema.NewTimestampLogicalType(true, schema.TimeUnitMicros), parquet.Types.Int64, -1, -1)
	if err != nil {
		fail(err)
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, append(schema.FieldList{tn}, nodes...), -1)
	if err != nil {
		fail(err)
	}
	times := make([]int64, rows)
	for i := range times {
		times[i] = time.Date(2026, 1, 5, 10, 0, i, 0, time.UTC).UnixMicro()
	}
	writes = append([]func(file.ColumnChunkWriter) error{func(cw file.ColumnChunkWriter) error {
		_, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(times, nil, nil)
		return err
	}}, writes...)
	var b bytes.Buffer
	w := file.NewParquetWriter(&b, root, file.WithWriterProps(parquet.NewWriterProperties(parquet.WithCreatedBy("timelake corpus"))))
	rg := w.AppendRowGroup()
	for _, write := range writes {
		cw, err := rg.NextColumn()
		if err == nil {
			err = write(cw)
		}
		if err == nil {
			err = cw.Close()
		}
		if err != nil {
			fail(err)
		}
	}
	if err := rg.Close(); err != nil {
		fail(err)
	}
	if err := w.Close(); err != nil {
		fail(err)
	}
	return b.Bytes()
}

// byteArrays writes values (nil for null) to a BYTE_ARRAY column.
func byteArrays(values ...*string) func(file.ColumnChunkWriter) error {
	return func(cw file.ColumnChunkWriter) error {
		var vals []parquet.ByteArray
		def := make([]int16, len(values))
		for i, v := range values {
			if v != nil {
				vals = append(vals, parquet.ByteArray(*v))
				def[i] = 1
			}
		}
		_, err := cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(vals, def, nil)
		return err
	}
}

func str(s string) *string { return &s }

// enumFile is 3 rows of two ENUM columns (BYTE_ARRAY annotated ENUM),
// "mode" with a null.
func enumFile() []byte {
	state := leaf("state", schema.EnumLogicalType{}, parquet.Types.ByteArray)
	mode := leaf("mode", schema.EnumLogicalType{}, parquet.Types.ByteArray)
	return columnsFile(3, []schema.Node{state, mode}, []func(file.ColumnChunkWriter) error{
		byteArrays(str("RUNNING"), str("STOPPED"), str("GESTÖRT")),
		byteArrays(str("AUTO"), nil, str("MANUAL")),
	})
}

// uuidFile is 4 rows of a UUID column "id" (FIXED_LEN_BYTE_ARRAY(16)
// annotated UUID), one null.
func uuidFile() []byte {
	id, err := schema.NewPrimitiveNodeLogical("id", parquet.Repetitions.Optional, schema.UUIDLogicalType{}, parquet.Types.FixedLenByteArray, 16, -1)
	if err != nil {
		fail(err)
	}
	return columnsFile(4, []schema.Node{id}, []func(file.ColumnChunkWriter) error{func(cw file.ColumnChunkWriter) error {
		_, err := cw.(*file.FixedLenByteArrayColumnChunkWriter).WriteBatch([]parquet.FixedLenByteArray{
			{0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00},
			{0xf8, 0x1d, 0x4f, 0xae, 0x7d, 0xec, 0x11, 0xd0, 0xa7, 0x65, 0x00, 0xa0, 0xc9, 0x1e, 0x6b, 0xf6},
			make(parquet.FixedLenByteArray, 16),
		}, []int16{1, 0, 1, 1}, nil)
		return err
	}})
}

// leaf is a node of an optional column, logical nil for none.
func leaf(name string, logical schema.LogicalType, physical parquet.Type) schema.Node {
	if logical == nil {
		logical = schema.NoLogicalType{}
	}
	n, err := schema.NewPrimitiveNodeLogical(name, parquet.Repetitions.Optional, logical, physical, -1, -1)
	if err != nil {
		fail(err)
	}
	return n
}

// lowLevelFile writes a required column "time" (INT64 TIMESTAMP(MICROS,
// UTC), one second apart from 2026-01-05T10:00:00Z) and the column v with
// values (int32 or parquet.Int96, none null) with the low-level writer:
// the bytes are those the Parquet format describes, also where they are no
// valid value of the column's type.
func lowLevelFile[T int32 | parquet.Int96](v schema.Node, values []T) []byte {
	tn, err := schema.NewPrimitiveNodeLogical("time", parquet.Repetitions.Required,
		schema.NewTimestampLogicalType(true, schema.TimeUnitMicros), parquet.Types.Int64, -1, -1)
	if err != nil {
		fail(err)
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{tn, v}, -1)
	if err != nil {
		fail(err)
	}
	var b bytes.Buffer
	w := file.NewParquetWriter(&b, root, file.WithWriterProps(parquet.NewWriterProperties(parquet.WithCreatedBy("timelake corpus"))))
	rg := w.AppendRowGroup()
	times := make([]int64, len(values))
	def := make([]int16, len(values))
	for i := range times {
		times[i] = time.Date(2026, 1, 5, 10, 0, i, 0, time.UTC).UnixMicro()
		def[i] = 1
	}
	cw, err := rg.NextColumn()
	if err == nil {
		_, err = cw.(*file.Int64ColumnChunkWriter).WriteBatch(times, nil, nil)
	}
	if err == nil {
		err = cw.Close()
	}
	if err == nil {
		cw, err = rg.NextColumn()
	}
	if err == nil {
		switch vals := any(values).(type) {
		case []int32:
			_, err = cw.(*file.Int32ColumnChunkWriter).WriteBatch(vals, def, nil)
		case []parquet.Int96:
			_, err = cw.(*file.Int96ColumnChunkWriter).WriteBatch(vals, def, nil)
		}
	}
	for _, c := range []interface{ Close() error }{cw, rg, w} {
		if err == nil {
			err = c.Close()
		}
	}
	if err != nil {
		fail(err)
	}
	return b.Bytes()
}

// int96 is t as an INT96 timestamp (the Impala layout: nanoseconds of the
// day, then the Julian day), also outside the nanosecond range.
func int96(t time.Time) parquet.Int96 {
	const julianUnixEpoch = 2440588
	t = t.UTC()
	midnight := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	days := midnight.Unix()/86400 + julianUnixEpoch
	var v parquet.Int96
	v.SetNanoSeconds(int64(t.Sub(midnight)))
	v[8], v[9], v[10], v[11] = byte(days), byte(days>>8), byte(days>>16), byte(days>>24)
	return v
}

// largeStrings is rows of a large_string column "device" and a
// dictionary<int8, large_string> column "site".
func largeStrings() arrow.RecordBatch {
	mem := memory.DefaultAllocator
	dev := array.NewLargeStringBuilder(mem)
	dev.AppendValues([]string{"", "😀", ""}, []bool{true, true, false})
	devices := dev.NewArray()
	site := array.NewLargeStringBuilder(mem)
	site.AppendValues([]string{"Zürich", "東京"}, nil)
	sites := site.NewArray()
	idx := array.NewInt8Builder(mem)
	idx.AppendValues([]int8{0, 1, 0}, nil)
	indices := idx.NewArray()
	tb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"})
	for i := range 3 {
		tb.Append(arrow.Timestamp(time.Date(2026, 1, 5, 10, 0, i, 0, time.UTC).UnixMicro()))
	}
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.LargeString}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: tb.Type()}, {Name: "device", Type: arrow.BinaryTypes.LargeString, Nullable: true}, {Name: "site", Type: dt, Nullable: true},
	}, nil)
	return array.NewRecordBatch(sc, []arrow.Array{tb.NewArray(), devices, array.NewDictionaryArray(dt, indices, sites)}, 3)
}

func utf16le(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return b
}

func utf16be(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u>>8), byte(u))
	}
	return b
}

func utf32le(s string) []byte {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r), byte(r>>8), byte(r>>16), byte(r>>24))
	}
	return b
}

// gzipBytes compresses s without a name or time, so the bytes are the same
// on every run.
func gzipBytes(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		fail(err)
	}
	if err := w.Close(); err != nil {
		fail(err)
	}
	return b.Bytes()
}

// zlibBytes compresses s as zlib data (deflate with a zlib header), not
// gzip.
func zlibBytes(s string) []byte {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		fail(err)
	}
	if err := w.Close(); err != nil {
		fail(err)
	}
	return b.Bytes()
}

// tarBytes is a tar archive of a folder "export/" and files (name to
// body, in name order), times fixed.
func tarBytes(files map[string]string) []byte {
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	mod := time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC)
	if err := w.WriteHeader(&tar.Header{Name: "export/", Mode: 0o755, Typeflag: tar.TypeDir, ModTime: mod}); err != nil {
		fail(err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := w.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg, ModTime: mod}); err != nil {
			fail(err)
		}
		if _, err := w.Write([]byte(files[n])); err != nil {
			fail(err)
		}
	}
	if err := w.Close(); err != nil {
		fail(err)
	}
	return b.Bytes()
}

func zstdBytes(s string) []byte {
	w, err := zstd.NewWriter(nil)
	if err != nil {
		fail(err)
	}
	defer w.Close()
	return w.EncodeAll([]byte(s), nil)
}

func zipBytes(name, body string) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)}
	fw, err := w.CreateHeader(h)
	if err != nil {
		fail(err)
	}
	if _, err := fw.Write([]byte(body)); err != nil {
		fail(err)
	}
	if err := w.Close(); err != nil {
		fail(err)
	}
	return b.Bytes()
}

// record builds one record batch of fields with fill.
func record(fields []arrow.Field, fill func([]array.Builder)) arrow.RecordBatch {
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	if fill != nil {
		fill(b.Fields())
	}
	return b.NewRecordBatch()
}

// timeDevice is rows of (time us UTC, device, v of type vt): one row per
// value fill appends to v, one second apart, device d1.
func timeDevice(vt arrow.DataType, fill func(array.Builder)) arrow.RecordBatch {
	return record([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "device", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: vt, Nullable: true},
	}, func(bs []array.Builder) {
		if fill == nil {
			return
		}
		fill(bs[2])
		for i := 0; i < bs[2].Len(); i++ {
			bs[0].(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 1, 5, 10, 0, i, 0, time.UTC).UnixMicro()))
			bs[1].(*array.StringBuilder).Append("d1")
		}
	})
}

// timeDeviceStrings is rows of (time, device) with the given devices, the
// device column dictionary-encoded when dict is set.
func timeDeviceStrings(dict bool, devices ...string) arrow.RecordBatch {
	var dt arrow.DataType = arrow.BinaryTypes.String
	if dict {
		dt = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	}
	return record([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "device", Type: dt, Nullable: true},
	}, func(bs []array.Builder) {
		for i, d := range devices {
			bs[0].(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 1, 5, 10, 0, i, 0, time.UTC).UnixMicro()))
			switch b := bs[1].(type) {
			case *array.StringBuilder:
				b.Append(d)
			case *array.BinaryDictionaryBuilder:
				if err := b.AppendString(d); err != nil {
					fail(err)
				}
			}
		}
	})
}

// naiveTimes is one row of a millisecond timestamp without zone (Parquet
// isAdjustedToUTC=false) holding the wall clock of t.
func naiveTimes(t time.Time) arrow.RecordBatch {
	return record([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, func(bs []array.Builder) {
		bs[0].(*array.TimestampBuilder).Append(arrow.Timestamp(t.UnixMilli()))
		bs[1].(*array.Float64Builder).Append(1)
	})
}

// utcTimes is one row of a microsecond UTC timestamp t.
func utcTimes(t time.Time) arrow.RecordBatch {
	return record([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, func(bs []array.Builder) {
		bs[0].(*array.TimestampBuilder).Append(arrow.Timestamp(t.UnixMicro()))
		bs[1].(*array.Float64Builder).Append(1)
	})
}

// nanoTimes is two rows of nanosecond UTC timestamps with digits below the
// microsecond.
func nanoTimes() arrow.RecordBatch {
	return record([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, func(bs []array.Builder) {
		base := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
		bs[0].(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{
			arrow.Timestamp(base.Add(123456789).UnixNano()), arrow.Timestamp(base.Add(time.Second + 999).UnixNano()),
		}, nil)
		bs[1].(*array.Float64Builder).AppendValues([]float64{1, 2}, nil)
	})
}

// parquetFile writes rec with the Arrow schema stored (zones and
// dictionaries survive), dictionary pages on, Snappy unless opts say.
func parquetFile(rec arrow.RecordBatch, opts ...any) []byte {
	defer rec.Release()
	wopts := []parquet.WriterProperty{parquet.WithDictionaryDefault(true), parquet.WithCreatedBy("timelake corpus")}
	aopts := []pqarrow.WriterOption{pqarrow.WithStoreSchema()}
	for _, o := range opts {
		switch o := o.(type) {
		case parquet.WriterProperty:
			wopts = append(wopts, o)
		case pqarrow.WriterOption:
			aopts = append(aopts, o)
		}
	}
	var b bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &b, parquet.NewWriterProperties(wopts...), pqarrow.NewArrowWriterProperties(aopts...))
	if err != nil {
		fail(err)
	}
	if err := w.Write(rec); err != nil {
		fail(err)
	}
	if err := w.Close(); err != nil {
		fail(err)
	}
	return b.Bytes()
}

// int96File writes one INT96 timestamp column "time" holding t, which may
// lie outside the nanosecond range (the Impala layout: nanoseconds of the
// day, then the Julian day), with the low-level writer.
func int96File(t time.Time) []byte {
	node, err := schema.NewPrimitiveNode("time", parquet.Repetitions.Required, parquet.Types.Int96, -1, -1)
	if err != nil {
		fail(err)
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{node}, -1)
	if err != nil {
		fail(err)
	}
	var b bytes.Buffer
	w := file.NewParquetWriter(&b, root, file.WithWriterProps(parquet.NewWriterProperties(parquet.WithCreatedBy("timelake corpus"))))
	rg := w.AppendRowGroup()
	cw, err := rg.NextColumn()
	if err != nil {
		fail(err)
	}
	const julianUnixEpoch = 2440588
	days := t.Unix()/86400 + julianUnixEpoch
	if t.Unix()%86400 < 0 {
		days--
	}
	midnight := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	var v parquet.Int96
	v.SetNanoSeconds(int64(t.Sub(midnight)))
	v[8], v[9], v[10], v[11] = byte(days), byte(days>>8), byte(days>>16), byte(days>>24)
	if _, err := cw.(*file.Int96ColumnChunkWriter).WriteBatch([]parquet.Int96{v}, nil, nil); err != nil {
		fail(err)
	}
	if err := cw.Close(); err != nil {
		fail(err)
	}
	if err := rg.Close(); err != nil {
		fail(err)
	}
	if err := w.Close(); err != nil {
		fail(err)
	}
	return b.Bytes()
}
