// Package pagecrc writes page checksums into Parquet files of arrow-go's
// writer, which writes none, and finds the pages of a column chunk, for
// the tests of the decoder's page checksum check (internal/decode,
// pagecrc.go). It reads page headers with its own code, not the
// decoder's. It is only meant to be imported from _test.go files.
package pagecrc

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/thrift/lib/go/thrift"
)

// Page is a page of a Parquet file.
type Page struct {
	// Header and Bytes are the offsets in the file of the page header and
	// of the page's bytes that follow it.
	Header, Bytes int64
	// Size is the compressed_page_size of the header.
	Size int32
	// CRC is the crc of the header, when HasCRC.
	CRC    uint32
	HasCRC bool
}

// Footer reads the footer of a Parquet file.
func Footer(tb testing.TB, data []byte) *metadata.FileMetaData {
	tb.Helper()
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	md, err := metadata.NewFileMetaData(data[len(data)-8-n:len(data)-8], nil)
	if err != nil {
		tb.Fatal(err)
	}
	return md
}

// EditFooter is data with its footer changed by edit; nothing else moves.
func EditFooter(tb testing.TB, data []byte, edit func(*metadata.FileMetaData)) []byte {
	tb.Helper()
	md := Footer(tb, data)
	edit(md)
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	return withFooter(tb, data[:len(data)-8-n], md)
}

// withFooter is body followed by md as the footer.
func withFooter(tb testing.TB, body []byte, md *metadata.FileMetaData) []byte {
	tb.Helper()
	out := bytes.NewBuffer(slices.Clone(body))
	if _, err := md.WriteTo(out, nil); err != nil {
		tb.Fatal(err)
	}
	out.Write(binary.LittleEndian.AppendUint32(nil, uint32(out.Len()-len(body))))
	out.WriteString("PAR1")
	return out.Bytes()
}

// Pages lists the pages of the column chunk of column (its dotted path) in
// row group g.
func Pages(tb testing.TB, data []byte, g int, column string) []Page {
	tb.Helper()
	rg := Footer(tb, data).RowGroups[g]
	for _, cc := range rg.Columns {
		if strings.Join(cc.MetaData.PathInSchema, ".") == column {
			start, length := chunkRange(cc.MetaData.DataPageOffset, cc.MetaData.DictionaryPageOffset, cc.MetaData.TotalCompressedSize)
			return pagesAt(tb, data, start, length)
		}
	}
	tb.Fatalf("no column %q in row group %d", column, g)
	return nil
}

// chunkRange is where a column chunk starts (its dictionary page, if it
// has one) and its length.
func chunkRange(data int64, dictionary *int64, length int64) (int64, int64) {
	if dictionary != nil && *dictionary > 0 && *dictionary < data {
		return *dictionary, length
	}
	return data, length
}

// pagesAt lists the pages of the length bytes of a column chunk at start.
func pagesAt(tb testing.TB, data []byte, start, length int64) []Page {
	tb.Helper()
	chunk := data[start : start+length]
	buf := thrift.NewTMemoryBuffer()
	buf.Buffer = bytes.NewBuffer(chunk)
	proto := thrift.NewTCompactProtocol(buf)
	var pages []Page
	for buf.Len() > 0 {
		p := Page{Header: start + length - int64(buf.Len())}
		readHeader(tb, proto, &p)
		p.Bytes = start + length - int64(buf.Len())
		if int(p.Size) > buf.Len() {
			tb.Fatalf("page of %d bytes at %d past the end of its column chunk", p.Size, p.Header)
		}
		buf.Next(int(p.Size))
		pages = append(pages, p)
	}
	return pages
}

// readHeader reads a page header into p.
func readHeader(tb testing.TB, proto *thrift.TCompactProtocol, p *Page) {
	tb.Helper()
	ctx := context.Background()
	check := func(err error) {
		if err != nil {
			tb.Fatalf("page header at %d: %v", p.Header, err)
		}
	}
	_, err := proto.ReadStructBegin(ctx)
	check(err)
	for {
		_, typ, id, err := proto.ReadFieldBegin(ctx)
		check(err)
		if typ == thrift.STOP {
			break
		}
		switch id {
		case 3:
			p.Size, err = proto.ReadI32(ctx)
		case 4:
			var crc int32
			crc, err = proto.ReadI32(ctx)
			p.CRC, p.HasCRC = uint32(crc), true
		default:
			err = proto.Skip(ctx, typ)
		}
		check(err)
		check(proto.ReadFieldEnd(ctx))
	}
	check(proto.ReadStructEnd(ctx))
}

// WithChecksums rewrites a Parquet file of arrow-go's writer (without a
// page index or bloom filters) with the crc of every page in its header.
func WithChecksums(tb testing.TB, data []byte) []byte {
	tb.Helper()
	md := Footer(tb, data)
	out := []byte("PAR1")
	moved := map[int64]int64{} // page offsets, old to new
	for _, rg := range md.RowGroups {
		rgStart := int64(len(out))
		for _, cc := range rg.Columns {
			cm := cc.MetaData
			if cc.ColumnIndexOffset != nil || cc.OffsetIndexOffset != nil || cm.BloomFilterOffset != nil {
				tb.Fatal("a page index or bloom filter would not be moved")
			}
			start, length := chunkRange(cm.DataPageOffset, cm.DictionaryPageOffset, cm.TotalCompressedSize)
			newStart := int64(len(out))
			for _, p := range pagesAt(tb, data, start, length) {
				moved[p.Header] = int64(len(out))
				end := p.Bytes + int64(p.Size)
				out = append(out, headerWithCRC(tb, data[p.Header:p.Bytes], crc32.ChecksumIEEE(data[p.Bytes:end]))...)
				out = append(out, data[p.Bytes:end]...)
			}
			grown := int64(len(out)) - newStart - length
			cm.TotalCompressedSize += grown
			cm.TotalUncompressedSize += grown
			cm.DataPageOffset = moved[cm.DataPageOffset]
			if cm.DictionaryPageOffset != nil {
				d := moved[*cm.DictionaryPageOffset]
				cm.DictionaryPageOffset = &d
			}
			if cc.FileOffset != 0 {
				cc.FileOffset += newStart - start
			}
		}
		if rg.FileOffset != nil {
			rg.FileOffset = &rgStart
		}
		if rg.TotalCompressedSize != nil {
			size := int64(len(out)) - rgStart
			rg.TotalCompressedSize = &size
		}
	}
	return withFooter(tb, out, md)
}

// headerWithCRC adds crc to a page header of arrow-go's writer, which
// starts with fields 1 to 3 (i32, field id deltas of 1) and goes on with a
// field after 4.
func headerWithCRC(tb testing.TB, header []byte, crc uint32) []byte {
	tb.Helper()
	i := 0
	for range 3 {
		if header[i] != 0x15 {
			tb.Fatalf("page header % x does not start with fields 1 to 3", header)
		}
		for i++; header[i]&0x80 != 0; i++ {
		}
		i++
	}
	next := header[i]
	if next>>4 < 2 {
		tb.Fatalf("page header % x goes on with field %d", header, 3+next>>4)
	}
	n := int32(crc)
	out := append(slices.Clone(header[:i]), 0x15)
	out = binary.AppendUvarint(out, uint64(uint32(n<<1^n>>31)))
	out = append(out, (next>>4-1)<<4|next&0x0f)
	return append(out, header[i+1:]...)
}

// FlipLastValueBit is data with a bit flipped in the last bytes of page,
// its last value in a plain-encoded page.
func FlipLastValueBit(data []byte, page Page) []byte {
	out := slices.Clone(data)
	out[page.Bytes+int64(page.Size)-2] ^= 0x10
	return out
}
