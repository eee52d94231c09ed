package decode

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// csvChunkCase is a chunk of CSV text read by chunkedText.read: its
// header line, its text and how it is read.
type csvChunkCase struct {
	header, text string
	comma        rune
	types        []arrow.DataType // per column, nil for text
	nulls        []string         // --csv-null values
	maxRecord    int64
	batchRows    int
}

// readCSVChunk reads cc's text as one chunk, the scan on or off, and
// describes the batches and the error.
func readCSVChunk(t testing.TB, mem memory.Allocator, cc csvChunkCase, fast bool) string {
	hr := csv.NewReader(strings.NewReader(cc.header))
	hr.Comma = cc.comma
	names, err := hr.Read()
	if err != nil {
		return "header: " + err.Error()
	}
	cols := newTextColumns(names)
	fields := cols.read.Fields()
	for i, dt := range cc.types {
		if dt != nil && i < len(fields) && names[i] != "" { // as numbersAsTarget types them
			fields[i].Type = dt
		}
	}
	cols = textColumns{read: arrow.NewSchema(fields, nil), out: arrow.NewSchema(fields[:cols.out.NumFields()], nil)}
	ro := &resolved{key: "t.csv", mem: mem, nulls: append([]string{""}, cc.nulls...), maxRecord: cc.maxRecord, batchRows: cmpOr(cc.batchRows, 5)}
	c := &chunkedText{ctx: context.Background(), ro: ro, cols: cols, comma: cc.comma, header: []byte(cc.header), slow: !fast}
	var res chunkResult
	err = c.read(textChunk{off: 0, end: int64(len(cc.text)), lines: 1, text: []byte(cc.text)}, &res)
	defer ReleaseAll(res.recs)
	var out strings.Builder
	for _, rec := range res.recs {
		fmt.Fprintf(&out, "batch %d rows:", rec.NumRows())
		for j, col := range rec.Columns() {
			fmt.Fprintf(&out, " [%s %s", rec.Schema().Field(j).Name, col.DataType())
			s := storageOf(col)
			for i := 0; i < col.Len(); i++ {
				if col.IsNull(i) {
					out.WriteString(" null")
				} else {
					fmt.Fprintf(&out, " %q", s.ValueStr(i))
				}
			}
			out.WriteString("]")
		}
		out.WriteString("\n")
	}
	fmt.Fprintf(&out, "rows %d err %v read %v errRow %d\n", res.rows, err, res.read, res.errRow)
	return out.String()
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// checkCSVChunk fails when the scan reads cc otherwise than the reader.
func checkCSVChunk(t *testing.T, mem *memory.CheckedAllocator, cc csvChunkCase) {
	t.Helper()
	slow := readCSVChunk(t, mem, cc, false)
	fast := readCSVChunk(t, mem, cc, true)
	if slow != fast {
		t.Fatalf("header %q text %q comma %q types %v nulls %q max %d:\nreader:\n%s\nscan:\n%s", cc.header, cc.text, cc.comma, cc.types, cc.nulls, cc.maxRecord, slow, fast)
	}
}

var (
	i32 = arrow.PrimitiveTypes.Int32
	i64 = arrow.PrimitiveTypes.Int64
	f32 = newStrictFloatType(arrow.PrimitiveTypes.Float32)
	f64 = newStrictFloatType(arrow.PrimitiveTypes.Float64)
)

// csvChunkTexts are chunks the scan reads, and chunks it must leave to the
// reader; each must read as the reader reads it.
var csvChunkTexts = []string{
	"", "\n", "\r\n", "\n\n\n", "a,b,c\n", "a,b,c", "a,b,c\r\n", "a,b,c\r", "a,b,c\r\r\n", "a,\rb,c\n",
	"1,2,3\n4,5,6\n7,8,9\n10,11,12\n13,14,15\n16,17,18\n19,20,21\n",
	"1,2,3\r\n4,5,6\r\n\r\n7,8,9", "1,2\n", "1,2,3,4\n", "1,2,3,\n", ",,\n", ",,,\n", "\"a\",b,c\n", "a,b\"x,c\n",
	"a,\"b\nc\",d\n", "NULL,null,N/A\n", "1.5,2e3,-0\n", "1,5,2\n", " 1,2 ,3\n", "+1,-2,0x3\n", "1_000,2,3\n",
	"9223372036854775807,2147483647,3.4e38\n", "9223372036854775808,2147483648,3.5e39\n", "NaN,Inf,-Infinity\n",
	"a\x00,b,c\n", "\xef\xbb\xbfa,b,c\n", "a,\xef\xbb\xbfb,c\n", "\xff\xfe,b,c\n", "é,ü,日本\n", "a,b,c\n\n\n1,2,3\n",
	"a;b;c\n", "a\tb\tc\n", "a,b,c\nx,y\n1,2,3\n", "1,2,3\n1,2,3\n1,2,3\n1,2,3\n1,2,3\n1,2,3\n1,2\n",
	strings.Repeat("x", 100) + ",y,z\n", "a,b,c\n" + strings.Repeat("1,2,3\n", 40),
	"1,,3\n,,\n,2,\n", "N/A,N/A,N/A\n", "1.5,2.5,3.5\n1,2,x\n", "1,2,3\n4,5,6\r",
}

func TestCSVChunkScan(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	// The scan reads the common shape itself.
	for _, text := range []string{"1,2,3\n", "1,,x\r\n\n4,5,6", ",,\nNULL,2.5,\n"} {
		cols := newTextColumns([]string{"a", "b", "c"})
		cols = numbersAsTarget(cols, arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.PrimitiveTypes.Float64}}, nil), false)
		ro := &resolved{key: "t.csv", mem: mem, nulls: []string{"", "NULL"}, maxRecord: DefaultMaxRecordBytes, batchRows: 5}
		c := &chunkedText{ctx: context.Background(), ro: ro, cols: cols, comma: ',', header: []byte("a,b,c\n")}
		var res chunkResult
		ok, err := c.readFast(textChunk{end: int64(len(text)), text: []byte(text)}, &res)
		ReleaseAll(res.recs)
		if !ok || err != nil {
			t.Errorf("%q: scan %v, %v", text, ok, err)
		}
	}
	headers := []struct {
		header string
		comma  rune
	}{
		{"a,b,c\n", ','}, {"a,b,c\r\n", ','}, {"a,b,\n", ','}, {"a;b;c\n", ';'}, {"a\tb\tc\n", '\t'},
		{"a|b|c\n", '|'}, {"a·b·c\n", '·'}, {"a\n", ','}, {"a,b\n", ','},
	}
	typings := [][]arrow.DataType{nil, {i64, f64, i32}, {f32, nil, i64}, {nil, f64, f64}}
	for _, h := range headers {
		for _, text := range csvChunkTexts {
			text = strings.ReplaceAll(text, ",", string(h.comma))
			for _, types := range typings {
				for _, nulls := range [][]string{nil, {"NULL", "N/A"}} {
					for _, max := range []int64{0, 8, DefaultMaxRecordBytes} {
						checkCSVChunk(t, mem, csvChunkCase{header: h.header, text: text, comma: h.comma, types: types, nulls: nulls, maxRecord: max})
					}
				}
			}
		}
	}
}

// TestCSVChunkScanBytes puts every byte at every position of short
// chunks.
func TestCSVChunkScanBytes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	bases := []string{"a,b,c\n1,2,3\n", "1.5,,x\r\n4,5,6", ",,\n"}
	for _, base := range bases {
		for pos := 0; pos <= len(base); pos++ {
			for c := 0; c < 256; c++ {
				ins := base[:pos] + string([]byte{byte(c)}) + base[pos:]
				rep := ""
				if pos < len(base) {
					rep = base[:pos] + string([]byte{byte(c)}) + base[pos+1:]
				}
				for _, text := range []string{ins, rep} {
					for _, types := range [][]arrow.DataType{nil, {f64, i64, nil}} {
						checkCSVChunk(t, mem, csvChunkCase{header: "a,b,c\n", text: text, comma: ',', types: types, nulls: []string{"x"}, maxRecord: 6, batchRows: 1})
						checkCSVChunk(t, mem, csvChunkCase{header: "a,b,\n", text: text, comma: ',', types: types})
					}
				}
			}
		}
	}
}

func FuzzCSVChunkScan(f *testing.F) {
	for _, text := range csvChunkTexts {
		f.Add(text, false)
	}
	f.Fuzz(func(t *testing.T, text string, typed bool) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		var types []arrow.DataType
		if typed {
			types = []arrow.DataType{i64, f64, nil}
		}
		checkCSVChunk(t, mem, csvChunkCase{header: "a,b,c\n", text: text, comma: ',', types: types, nulls: []string{"NULL"}, maxRecord: 64})
	})
}

// BenchmarkCSVChunkRead reads BenchmarkDecodeCSV's rows as one chunk
// (chunkedText.read, the table's float columns typed as numbersAsTarget
// types them, no conversion) with the reader and with the scan.
func BenchmarkCSVChunkRead(b *testing.B) {
	data := benchCSV(200_000)
	nl := bytes.IndexByte(data, '\n') + 1
	header, text := data[:nl], data[nl:]
	cols := newTextColumns(strings.Split(strings.TrimSuffix(string(header), "\n"), ","))
	cols = numbersAsTarget(cols, gatewayTarget(b), false)
	for _, fast := range []bool{false, true} {
		b.Run(map[bool]string{false: "reader", true: "scan"}[fast], func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			ro := &resolved{key: "b.csv", mem: memory.DefaultAllocator, nulls: []string{""}, maxRecord: DefaultMaxRecordBytes, batchRows: DefaultBatchRows}
			c := &chunkedText{ctx: context.Background(), ro: ro, cols: cols, comma: ',', header: header, slow: !fast}
			for range b.N {
				var res chunkResult
				if err := c.read(textChunk{end: int64(len(text)), lines: 1, text: text}, &res); err != nil {
					b.Fatal(err)
				}
				if res.rows != 200_000 {
					b.Fatalf("%d rows", res.rows)
				}
				ReleaseAll(res.recs)
			}
		})
	}
}
