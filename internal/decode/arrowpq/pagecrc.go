package arrowpq

import (
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/timelake/timelake/internal/decode"
)

// columnChunks lists the column chunks of md for decode.VerifyPageChecksums,
// in the order of the footer, up to the first whose metadata does not
// read. A file of a writer that left the dictionary page header out of
// total_compressed_size (parquet-mr 1.2.8 and earlier, PARQUET-816) has
// none listed: its column chunks cannot be walked to their end, and those
// writers predate page checksums.
func columnChunks(md *metadata.FileMetaData) []decode.ParquetColumnChunk {
	if md.WriterVersion().LessThan(metadata.Parquet816FixedVersion) {
		return nil
	}
	var out []decode.ParquetColumnChunk
	groups := md.NumRowGroups()
	for g := range groups {
		rg := md.RowGroup(g)
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return append(out, decode.ParquetColumnChunk{Group: g, Groups: groups, Err: err})
			}
			if cc.CryptoMetadata() != nil || cc.NumValues() <= 0 {
				out = append(out, decode.ParquetColumnChunk{Group: g, Groups: groups, Skip: true})
				continue
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
				start = cc.DictionaryPageOffset()
			}
			out = append(out, decode.ParquetColumnChunk{Column: cc.PathInSchema().String(), Group: g, Groups: groups,
				Start: start, Length: cc.TotalCompressedSize()})
		}
	}
	return out
}
