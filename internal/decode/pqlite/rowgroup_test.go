package pqlite

import (
	"bufio"
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// TestChunkEndsWithItsRowGroup: a data page of 31 bytes whose levels are
// a run of 2^31-1 nulls, in a column chunk of a row group of 10 rows, is
// read to the row group's 10 rows, as arrow-go reads it, not through its
// 2^31 levels (seconds a page, a few pages a kilobyte).
func TestChunkEndsWithItsRowGroup(t *testing.T) {
	ctx := context.Background()
	body := []byte{6, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0x00} // levels: a run of 2^31-1 zeros
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTCompactProtocolConf(buf, &thrift.TConfiguration{})
	var werr error
	check := func(err error) {
		if err != nil && werr == nil {
			werr = err
		}
	}
	i32 := func(id int16, v int32) {
		check(p.WriteFieldBegin(ctx, "", thrift.I32, id))
		check(p.WriteI32(ctx, v))
		check(p.WriteFieldEnd(ctx))
	}
	check(p.WriteStructBegin(ctx, ""))
	i32(1, 0)
	i32(2, int32(len(body)))
	i32(3, int32(len(body)))
	check(p.WriteFieldBegin(ctx, "", thrift.STRUCT, 5))
	check(p.WriteStructBegin(ctx, ""))
	i32(1, 1<<31-1)
	i32(2, 0)
	i32(3, 3)
	i32(4, 3)
	check(p.WriteFieldStop(ctx))
	check(p.WriteStructEnd(ctx))
	check(p.WriteFieldEnd(ctx))
	check(p.WriteFieldStop(ctx))
	check(p.WriteStructEnd(ctx))
	check(p.Flush(ctx))
	if werr != nil {
		t.Fatal(werr)
	}
	data := append(buf.Bytes(), body...)
	leaf := &node{el: &format.SchemaElement{Name: "v"}, physical: format.Int32, maxDef: 1}
	c := &chunkReader{ctx: ctx, leaf: leaf, codec: format.Uncompressed, left: 10, rows: 10, length: int64(len(data)), src: &countingReader{r: bytes.NewReader(data)}}
	c.br = bufio.NewReaderSize(c.src, readBuffer)
	c.header = &reader{ctx: ctx, p: thrift.NewTCompactProtocolConf(headerTransport{c.br}, &thrift.TConfiguration{})}
	start := time.Now()
	var rows int64
	for rows < 1<<28 {
		n, err := c.read(1<<20, func(*values, int) error { return nil })
		rows += n
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if rows != 10 || time.Since(start) > 5*time.Second {
		t.Errorf("%d bytes: %d rows in %v", len(data), rows, time.Since(start))
	}
}
