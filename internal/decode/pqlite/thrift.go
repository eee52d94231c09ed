package pqlite

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/apache/thrift/lib/go/thrift"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// The footer and the page headers are Thrift compact structs. They are
// read here with Apache Thrift's compact protocol, which package decode
// already links for its page checksums, the way arrow-go's generated code
// reads them: a field of another wire type than the struct's is skipped,
// a list's element type is not checked, a struct without one of its
// required fields is refused. parquet-go's own Thrift decoder checks list
// element types and skips a list whose type differs, so a footer damaged
// in one byte would be read, or refused, otherwise than pqarrow reads it
// (TestColumnReaderAgrees). The values land in parquet-go's format structs.

// tfield is a field of a Thrift struct: its wire type, whether the struct
// requires it, and how its value is read.
type tfield struct {
	typ      thrift.TType
	required bool
	read     func() error
}

// reader reads Thrift structs with one protocol.
type reader struct {
	ctx context.Context
	p   thrift.TProtocol
}

// strct reads a struct of fields keyed by field id.
func (r *reader) strct(fields map[int16]tfield) error {
	if _, err := r.p.ReadStructBegin(r.ctx); err != nil {
		return err
	}
	var set map[int16]bool
	for {
		_, typ, id, err := r.p.ReadFieldBegin(r.ctx)
		if err != nil {
			return err
		}
		if typ == thrift.STOP {
			break
		}
		if f, ok := fields[id]; ok && f.typ == typ {
			if err := f.read(); err != nil {
				return err
			}
			if set == nil {
				set = map[int16]bool{}
			}
			set[id] = true
		} else if err := r.p.Skip(r.ctx, typ); err != nil {
			return err
		}
		if err := r.p.ReadFieldEnd(r.ctx); err != nil {
			return err
		}
	}
	if err := r.p.ReadStructEnd(r.ctx); err != nil {
		return err
	}
	for id, f := range fields {
		if f.required && !set[id] {
			return fmt.Errorf("required field %d is not set", id)
		}
	}
	return nil
}

// list reads a list, elem reading each element.
func (r *reader) list(elem func() error) error {
	_, size, err := r.p.ReadListBegin(r.ctx)
	if err != nil {
		return err
	}
	for range size {
		if err := elem(); err != nil {
			return err
		}
	}
	return r.p.ReadListEnd(r.ctx)
}

func (r *reader) i32(required bool, set func(int32)) tfield {
	return tfield{thrift.I32, required, func() error {
		v, err := r.p.ReadI32(r.ctx)
		set(v)
		return err
	}}
}

func (r *reader) i64(required bool, set func(int64)) tfield {
	return tfield{thrift.I64, required, func() error {
		v, err := r.p.ReadI64(r.ctx)
		set(v)
		return err
	}}
}

func (r *reader) boolean(required bool, set func(bool)) tfield {
	return tfield{thrift.BOOL, required, func() error {
		v, err := r.p.ReadBool(r.ctx)
		set(v)
		return err
	}}
}

func (r *reader) str(required bool, set func(string)) tfield {
	return tfield{thrift.STRING, required, func() error {
		v, err := r.p.ReadString(r.ctx)
		set(v)
		return err
	}}
}

func (r *reader) bin(required bool, set func([]byte)) tfield {
	return tfield{thrift.STRING, required, func() error {
		v, err := r.p.ReadBinary(r.ctx)
		set(v)
		return err
	}}
}

func (r *reader) sub(required bool, fields map[int16]tfield) tfield {
	return tfield{thrift.STRUCT, required, func() error { return r.strct(fields) }}
}

func (r *reader) lst(required bool, elem func() error) tfield {
	return tfield{thrift.LIST, required, func() error { return r.list(elem) }}
}

// i32s is a list field of i32s, read and dropped.
func (r *reader) i32s(required bool) tfield {
	return r.lst(required, func() error { _, err := r.p.ReadI32(r.ctx); return err })
}

// unknownLogical is a LogicalType union of no member arrow-go knows,
// which it refuses (parquetArrowType).
type unknownLogical struct{}

func (unknownLogical) FieldID() int16 { return 0 }
func (unknownLogical) String() string { return "UNKNOWN" }

// timeUnit reads a TimeUnit union.
func (r *reader) timeUnit(u *format.TimeUnit) tfield {
	empty := map[int16]tfield{}
	return r.sub(true, map[int16]tfield{
		1: {thrift.STRUCT, false, func() error { u.Value = &format.MilliSeconds{}; return r.strct(empty) }},
		2: {thrift.STRUCT, false, func() error { u.Value = &format.MicroSeconds{}; return r.strct(empty) }},
		3: {thrift.STRUCT, false, func() error { u.Value = &format.NanoSeconds{}; return r.strct(empty) }},
	})
}

// logicalType reads a LogicalType union into lt.
func (r *reader) logicalType(lt *format.LogicalType) error {
	empty := map[int16]tfield{}
	member := func(v format.LogicalTypeValue, fields map[int16]tfield) tfield {
		return tfield{thrift.STRUCT, false, func() error { lt.Value = v; return r.strct(fields) }}
	}
	dec, tm, ts, it := &format.DecimalType{}, &format.TimeType{}, &format.TimestampType{}, &format.IntType{}
	err := r.strct(map[int16]tfield{
		1: member(&format.StringType{}, empty),
		2: member(&format.MapType{}, empty),
		3: member(&format.ListType{}, empty),
		4: member(&format.EnumType{}, empty),
		5: member(dec, map[int16]tfield{
			1: r.i32(true, func(v int32) { dec.Scale = v }),
			2: r.i32(true, func(v int32) { dec.Precision = v }),
		}),
		6: member(&format.DateType{}, empty),
		7: member(tm, map[int16]tfield{
			1: r.boolean(true, func(v bool) { tm.IsAdjustedToUTC = v }),
			2: r.timeUnit(&tm.Unit),
		}),
		8: member(ts, map[int16]tfield{
			1: r.boolean(true, func(v bool) { ts.IsAdjustedToUTC = v }),
			2: r.timeUnit(&ts.Unit),
		}),
		10: member(it, map[int16]tfield{
			1: {thrift.BYTE, true, func() error { v, err := r.p.ReadByte(r.ctx); it.BitWidth = v; return err }},
			2: r.boolean(true, func(v bool) { it.IsSigned = v }),
		}),
		11: member(&format.NullType{}, empty),
		12: member(&format.JsonType{}, empty),
		13: member(&format.BsonType{}, empty),
		14: member(&format.UUIDType{}, empty),
		15: member(&format.Float16Type{}, empty),
		16: member(&format.VariantType{}, empty),
		17: member(&format.GeometryType{}, empty),
		18: member(&format.GeographyType{}, empty),
	})
	if err == nil && lt.Value == nil {
		lt.Value = unknownLogical{}
	}
	return err
}

// schemaElement reads a SchemaElement.
func (r *reader) schemaElement(el *format.SchemaElement) error {
	return r.strct(map[int16]tfield{
		1:  r.i32(false, func(v int32) { el.Type.Set(format.Type(v)) }),
		2:  r.i32(false, func(v int32) { el.TypeLength.Set(v) }),
		3:  r.i32(false, func(v int32) { el.RepetitionType.Set(format.FieldRepetitionType(v)) }),
		4:  r.str(true, func(v string) { el.Name = v }),
		5:  r.i32(false, func(v int32) { el.NumChildren.Set(v) }),
		6:  r.i32(false, func(v int32) { el.ConvertedType.Set(deprecated.ConvertedType(v)) }),
		7:  r.i32(false, func(v int32) { el.Scale.Set(v) }),
		8:  r.i32(false, func(v int32) { el.Precision.Set(v) }),
		9:  r.i32(false, func(v int32) { el.FieldID = v }),
		10: {thrift.STRUCT, false, func() error { return r.logicalType(&el.LogicalType) }},
	})
}

// keyValue reads a KeyValue.
func (r *reader) keyValue(kv *format.KeyValue) error {
	return r.strct(map[int16]tfield{
		1: r.str(true, func(v string) { kv.Key = v }),
		2: r.str(false, func(v string) { kv.Value = v }),
	})
}

// statistics reads a Statistics struct.
func (r *reader) statistics(st *format.Statistics) tfield {
	return r.sub(false, map[int16]tfield{
		1: r.bin(false, func(v []byte) { st.Max = v }),
		2: r.bin(false, func(v []byte) { st.Min = v }),
		3: r.i64(false, func(v int64) { st.NullCount = v }),
		4: r.i64(false, func(v int64) { st.DistinctCount = v }),
		5: r.bin(false, func(v []byte) { st.MaxValue = v }),
		6: r.bin(false, func(v []byte) { st.MinValue = v }),
	})
}

// columnMetaData reads a ColumnMetaData.
func (r *reader) columnMetaData(cm *format.ColumnMetaData) error {
	nop32, nop64 := func(int32) {}, func(int64) {}
	return r.strct(map[int16]tfield{
		1: r.i32(true, func(v int32) { cm.Type = format.Type(v) }),
		2: r.i32s(true),
		3: r.lst(true, func() error {
			v, err := r.p.ReadString(r.ctx)
			cm.PathInSchema = append(cm.PathInSchema, v)
			return err
		}),
		4:  r.i32(true, func(v int32) { cm.Codec = format.CompressionCodec(v) }),
		5:  r.i64(true, func(v int64) { cm.NumValues = v }),
		6:  r.i64(true, func(v int64) { cm.TotalUncompressedSize = v }),
		7:  r.i64(true, func(v int64) { cm.TotalCompressedSize = v }),
		8:  r.lst(false, func() error { var kv format.KeyValue; return r.keyValue(&kv) }),
		9:  r.i64(true, func(v int64) { cm.DataPageOffset = v }),
		10: r.i64(false, nop64),
		11: r.i64(false, func(v int64) { cm.DictionaryPageOffset = v }),
		12: r.statistics(&cm.Statistics),
		13: r.lst(false, func() error {
			return r.strct(map[int16]tfield{1: r.i32(true, nop32), 2: r.i32(true, nop32), 3: r.i32(true, nop32)})
		}),
		14: r.i64(false, nop64),
		15: r.i32(false, nop32),
		17: r.sub(false, map[int16]tfield{
			1: r.sub(false, map[int16]tfield{
				1: {thrift.DOUBLE, true, r.double}, 2: {thrift.DOUBLE, true, r.double},
				3: {thrift.DOUBLE, true, r.double}, 4: {thrift.DOUBLE, true, r.double},
			}),
			2: r.i32s(false),
		}),
	})
}

func (r *reader) double() error { _, err := r.p.ReadDouble(r.ctx); return err }

// columnChunk reads a ColumnChunk.
func (r *reader) columnChunk(cc *format.ColumnChunk) error {
	nop32, nop64 := func(int32) {}, func(int64) {}
	return r.strct(map[int16]tfield{
		1: r.str(false, func(v string) { cc.FilePath = v }),
		2: r.i64(true, func(v int64) { cc.FileOffset = v }),
		3: {thrift.STRUCT, false, func() error { return r.columnMetaData(&cc.MetaData) }},
		4: r.i64(false, nop64),
		5: r.i32(false, nop32),
		6: r.i64(false, nop64),
		7: r.i32(false, nop32),
		8: {thrift.STRUCT, false, func() error {
			cc.CryptoMetadata.Value = &format.EncryptionWithFooterKey{}
			return r.strct(map[int16]tfield{
				1: r.sub(false, map[int16]tfield{}),
				2: r.sub(false, map[int16]tfield{
					1: r.lst(true, func() error { _, err := r.p.ReadString(r.ctx); return err }),
				}),
			})
		}},
		9: r.bin(false, func(v []byte) { cc.EncryptedColumnMetadata = v }),
	})
}

// rowGroup reads a RowGroup.
func (r *reader) rowGroup(rg *format.RowGroup) error {
	nop64 := func(int64) {}
	return r.strct(map[int16]tfield{
		1: r.lst(true, func() error {
			rg.Columns = append(rg.Columns, format.ColumnChunk{})
			return r.columnChunk(&rg.Columns[len(rg.Columns)-1])
		}),
		2: r.i64(true, func(v int64) { rg.TotalByteSize = v }),
		3: r.i64(true, func(v int64) { rg.NumRows = v }),
		4: r.lst(false, func() error {
			return r.strct(map[int16]tfield{
				1: r.i32(true, func(int32) {}), 2: r.boolean(true, func(bool) {}), 3: r.boolean(true, func(bool) {}),
			})
		}),
		5: r.i64(false, nop64),
		6: r.i64(false, nop64),
		7: {thrift.I16, false, func() error { _, err := r.p.ReadI16(r.ctx); return err }},
	})
}

// fileMetaData reads a FileMetaData.
func (r *reader) fileMetaData(fm *format.FileMetaData) error {
	return r.strct(map[int16]tfield{
		1: r.i32(true, func(v int32) { fm.Version = v }),
		2: r.lst(true, func() error {
			fm.Schema = append(fm.Schema, format.SchemaElement{})
			return r.schemaElement(&fm.Schema[len(fm.Schema)-1])
		}),
		3: r.i64(true, func(v int64) { fm.NumRows = v }),
		4: r.lst(true, func() error {
			fm.RowGroups = append(fm.RowGroups, format.RowGroup{})
			return r.rowGroup(&fm.RowGroups[len(fm.RowGroups)-1])
		}),
		5: r.lst(false, func() error {
			fm.KeyValueMetadata = append(fm.KeyValueMetadata, format.KeyValue{})
			return r.keyValue(&fm.KeyValueMetadata[len(fm.KeyValueMetadata)-1])
		}),
		6: r.str(false, func(v string) { fm.CreatedBy = v }),
	})
}

// readFileMetaData reads the footer's FileMetaData from buf, as arrow-go
// does (a memory buffer, the compact protocol of the default
// configuration).
func readFileMetaData(ctx context.Context, buf []byte, fm *format.FileMetaData) error {
	t := &thrift.TMemoryBuffer{Buffer: bytes.NewBuffer(buf)}
	r := &reader{ctx: ctx, p: thrift.NewTCompactProtocolConf(t, &thrift.TConfiguration{})}
	return r.fileMetaData(fm)
}

// pageHeader reads a PageHeader.
func (r *reader) pageHeader(h *format.PageHeader) error {
	var dp format.DataPageHeader
	var dict format.DictionaryPageHeader
	var v2 format.DataPageHeaderV2
	var st format.Statistics
	err := r.strct(map[int16]tfield{
		1: r.i32(true, func(v int32) { h.Type = format.PageType(v) }),
		2: r.i32(true, func(v int32) { h.UncompressedPageSize = v }),
		3: r.i32(true, func(v int32) { h.CompressedPageSize = v }),
		4: r.i32(false, func(v int32) { h.CRC = v }),
		5: {thrift.STRUCT, false, func() error {
			h.DataPageHeader.Valid = true
			return r.strct(map[int16]tfield{
				1: r.i32(true, func(v int32) { dp.NumValues = v }),
				2: r.i32(true, func(v int32) { dp.Encoding = format.Encoding(v) }),
				3: r.i32(true, func(v int32) { dp.DefinitionLevelEncoding = format.Encoding(v) }),
				4: r.i32(true, func(v int32) { dp.RepetitionLevelEncoding = format.Encoding(v) }),
				5: r.statistics(&st),
			})
		}},
		6: r.sub(false, map[int16]tfield{}),
		7: {thrift.STRUCT, false, func() error {
			h.DictionaryPageHeader.Valid = true
			return r.strct(map[int16]tfield{
				1: r.i32(true, func(v int32) { dict.NumValues = v }),
				2: r.i32(true, func(v int32) { dict.Encoding = format.Encoding(v) }),
				3: r.boolean(false, func(v bool) { dict.IsSorted = v }),
			})
		}},
		8: {thrift.STRUCT, false, func() error {
			h.DataPageHeaderV2.Valid = true
			return r.strct(map[int16]tfield{
				1: r.i32(true, func(v int32) { v2.NumValues = v }),
				2: r.i32(true, func(v int32) { v2.NumNulls = v }),
				3: r.i32(true, func(v int32) { v2.NumRows = v }),
				4: r.i32(true, func(v int32) { v2.Encoding = format.Encoding(v) }),
				5: r.i32(true, func(v int32) { v2.DefinitionLevelsByteLength = v }),
				6: r.i32(true, func(v int32) { v2.RepetitionLevelsByteLength = v }),
				7: r.boolean(false, func(v bool) { v2.IsCompressed.Set(v) }),
				8: r.statistics(&st),
			})
		}},
	})
	h.DataPageHeader.V, h.DictionaryPageHeader.V, h.DataPageHeaderV2.V = dp, dict, v2
	return err
}

// headerTransport is the Thrift transport page headers are read through.
type headerTransport struct{ r *bufio.Reader }

func (t headerTransport) Read(p []byte) (int, error) { return t.r.Read(p) }
func (t headerTransport) ReadByte() (byte, error)    { return t.r.ReadByte() }
func (t headerTransport) Write([]byte) (int, error) {
	return 0, errors.New("a column chunk is read only")
}
func (t headerTransport) Close() error                { return nil }
func (t headerTransport) Flush(context.Context) error { return nil }
func (t headerTransport) Open() error                 { return nil }
func (t headerTransport) IsOpen() bool                { return true }
func (t headerTransport) RemainingBytes() uint64      { return math.MaxUint64 }
