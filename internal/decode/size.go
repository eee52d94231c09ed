package decode

import (
	"bytes"
	"io"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// DecodedSize is the size of a downloaded file in the unit of
// DecodeOptions.PieceBytes, for a memory budget to charge before the file
// is decoded: textBytes (the caller's count of its decompressed text, e.g.
// while hashing it) for CSV and TSV; for Parquet, the Arrow size of its
// values as estimated from the footer (ParquetValueBytes), or src.Size
// when the footer does not read (Decode then says why).
func DecodedSize(src Source, textBytes int64) int64 {
	head := make([]byte, len(parquetMagic))
	if n, _ := src.R.ReadAt(head, 0); n < len(head) || !bytes.Equal(head, parquetMagic) {
		return textBytes
	}
	if n, ok := ParquetValueBytes(src); ok {
		return max(n, src.Size)
	}
	return src.Size
}

// ParquetValueBytes estimates the bytes of the Arrow arrays a Parquet
// file's values decode to, from its footer alone: fixed-width columns
// exactly (their values' width and a validity bit), strings and binaries
// as 4 bytes of offset each plus a length, the mean of the lengths of the
// column chunk's minimum and maximum (its statistics) or, without them,
// the chunk's uncompressed size. ok is false when the footer does not read.
func ParquetValueBytes(src Source) (n int64, ok bool) {
	defer func() {
		if recover() != nil { // a footer the reader panics on: Decode refuses it
			n, ok = 0, false
		}
	}()
	pf, err := file.NewParquetReader(io.NewSectionReader(src.R, 0, src.Size))
	if err != nil {
		return 0, false
	}
	defer pf.Close()
	return parquetValueBytes(pf)
}

// parquetValueBytes is ParquetValueBytes of an open file.
func parquetValueBytes(pf *file.Reader) (n int64, ok bool) {
	md := pf.MetaData()
	for g := range md.NumRowGroups() {
		rg := md.RowGroup(g)
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return 0, false
			}
			values := cc.NumValues()
			n += values / 8 // validity
			switch cc.Type() {
			case parquet.Types.Boolean:
				n += values / 8
			case parquet.Types.Int32, parquet.Types.Float:
				n += 4 * values
			case parquet.Types.Int64, parquet.Types.Double, parquet.Types.Int96:
				n += 8 * values // INT96 reads as a timestamp
			case parquet.Types.FixedLenByteArray:
				n += int64(md.Schema.Column(c).TypeLength()) * values
			default:
				data := cc.TotalUncompressedSize()
				if set, _ := cc.StatsSet(); set {
					if st, err := cc.Statistics(); err == nil && st.HasMinMax() {
						data = max(data, values*int64(len(st.EncodeMin())+len(st.EncodeMax()))/2)
					}
				}
				n += 4*values + data
			}
		}
	}
	return n, true
}
