package pqlite

import (
	"bytes"
	"context"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"
)

// deepFooterFile is a file of only a footer whose schema nests depth
// groups of one child each down to one INT32 column.
func deepFooterFile(t *testing.T, depth int) []byte {
	t.Helper()
	ctx := context.Background()
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTCompactProtocolConf(buf, &thrift.TConfiguration{})
	check := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	i32 := func(id int16, v int32) {
		check(p.WriteFieldBegin(ctx, "", thrift.I32, id))
		check(p.WriteI32(ctx, v))
		check(p.WriteFieldEnd(ctx))
	}
	check(p.WriteStructBegin(ctx, "FileMetaData"))
	i32(1, 1)
	check(p.WriteFieldBegin(ctx, "", thrift.LIST, 2))
	check(p.WriteListBegin(ctx, thrift.STRUCT, depth+2))
	for i := range depth + 2 {
		check(p.WriteStructBegin(ctx, "SchemaElement"))
		if i == depth+1 {
			i32(1, 1) // INT32
		}
		check(p.WriteFieldBegin(ctx, "", thrift.STRING, 4))
		check(p.WriteString(ctx, "g"))
		check(p.WriteFieldEnd(ctx))
		if i <= depth {
			i32(5, 1)
		}
		check(p.WriteFieldStop(ctx))
		check(p.WriteStructEnd(ctx))
	}
	check(p.WriteListEnd(ctx))
	check(p.WriteFieldEnd(ctx))
	check(p.WriteFieldBegin(ctx, "", thrift.I64, 3))
	check(p.WriteI64(ctx, 0))
	check(p.WriteFieldEnd(ctx))
	check(p.WriteFieldBegin(ctx, "", thrift.LIST, 4))
	check(p.WriteListBegin(ctx, thrift.STRUCT, 0))
	check(p.WriteListEnd(ctx))
	check(p.WriteFieldEnd(ctx))
	check(p.WriteFieldStop(ctx))
	check(p.WriteStructEnd(ctx))
	check(p.Flush(ctx))
	meta := buf.Bytes()
	file := append([]byte("PAR1"), meta...)
	file = binary.LittleEndian.AppendUint32(file, uint32(len(meta)))
	return append(file, "PAR1"...)
}

// TestDeepSchemaBounded: a footer of a schema nested many levels deep
// (a few bytes a level) is read in memory in proportion to it, not to
// the square of its depth (each element's path was a copy of its
// parent's), and refused past maxSchemaDepth rather than read with a
// stack of its depth (a footer of 256 MB would pass Go's limit, which is
// fatal).
func TestDeepSchemaBounded(t *testing.T) {
	shallow := deepFooterFile(t, 3)
	if _, err := readFooter(context.Background(), bytes.NewReader(shallow), int64(len(shallow))); err != nil {
		t.Fatalf("a schema 3 deep: %v", err)
	}
	data := deepFooterFile(t, 20_000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readFooter(context.Background(), bytes.NewReader(data), int64(len(data)))
	runtime.ReadMemStats(&after)
	t.Logf("%d bytes: %v; %d bytes allocated", len(data), err, after.TotalAlloc-before.TotalAlloc)
	if err == nil {
		t.Error("a schema 20,000 deep is read")
	}
	// The footer's Thrift structs take some 250 bytes of garbage a byte.
	if n := after.TotalAlloc - before.TotalAlloc; n > 1024*uint64(len(data)) {
		t.Errorf("a footer of %d bytes: %d bytes allocated", len(data), n)
	}
}
