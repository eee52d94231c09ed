package interop

import (
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go"
)

// EntryFromDataFile is iceberg-go's view of a manifest entry.
func EntryFromDataFile(df iceberg.DataFile, cols []Column) (ManifestEntry, error) {
	e := ManifestEntry{Path: df.FilePath(), RecordCount: df.Count(),
		ValueCounts: df.ValueCounts(), NullCounts: df.NullValueCounts(),
		Lower: map[int]any{}, Upper: map[int]any{}}
	for _, c := range cols {
		for _, b := range []struct {
			raw map[int][]byte
			dst map[int]any
		}{{df.LowerBoundValues(), e.Lower}, {df.UpperBoundValues(), e.Upper}} {
			raw, ok := b.raw[c.ID]
			if !ok {
				continue
			}
			v, err := DecodeBound(raw, c.Type)
			if err != nil {
				return e, fmt.Errorf("%s column %s: %w", df.FilePath(), c.Name, err)
			}
			b.dst[c.ID] = v
		}
	}
	return e, nil
}

// Entry is icebird's view of the manifest entry (decoded by icebird's own
// Avro reader, independent of iceberg-go).
func (f IcebirdFile) Entry(cols []Column) (ManifestEntry, error) {
	e := ManifestEntry{Path: f.Path, RecordCount: f.RecordCount, ValueCounts: map[int]int64{},
		NullCounts: map[int]int64{}, Lower: map[int]any{}, Upper: map[int]any{}}
	for _, c := range cols {
		key := strconv.Itoa(c.ID)
		for _, m := range []struct {
			src map[string]string
			dst map[int]int64
		}{{f.ValueCounts, e.ValueCounts}, {f.NullValueCounts, e.NullCounts}} {
			if s, ok := m.src[key]; ok {
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					return e, fmt.Errorf("%s column %s: count %q: %w", f.Path, c.Name, s, err)
				}
				m.dst[c.ID] = n
			}
		}
		lo, hi, ok, err := f.Bounds(c)
		if err != nil {
			return e, fmt.Errorf("%s column %s: %w", f.Path, c.Name, err)
		}
		if ok {
			e.Lower[c.ID], e.Upper[c.ID] = lo, hi
		}
	}
	return e, nil
}
