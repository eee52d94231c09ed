package decode

import "bytes"

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
	if parquetFormat == nil || footerTooLarge(src) != "" {
		return 0, false
	}
	defer func() {
		if recover() != nil { // a footer the reader panics on: Decode refuses it
			n, ok = 0, false
		}
	}()
	return parquetFormat.ValueBytes(src)
}
