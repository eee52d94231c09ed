package decode

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// DuplicateRows counts the rows of d whose (series key, time) an earlier row
// of the same file already has. Such rows are loaded like any other (a
// gateway may send two readings for one instant; Timelake convention:
// nothing is dropped or merged on load), and the count lets the report say
// so. seriesKey names columns of d.Schema; with none it returns 0 (rows of
// a table without a series key only share times).
//
// Cost: one pass over the time column when it is in non-decreasing order,
// as gateway files are, comparing the series keys only within runs of one
// time; otherwise the rows are ordered by time first (O(n log n)).
func (d *Decoded) DuplicateRows(seriesKey []string) (int64, error) {
	if d == nil || d.Rows == 0 || len(seriesKey) == 0 {
		return 0, nil
	}
	ti := d.Schema.FieldIndices(d.TimeColumn)
	if len(ti) != 1 {
		return 0, fmt.Errorf("duplicate rows: no time column %q", d.TimeColumn)
	}
	times := make([]int64, 0, d.Rows)
	keys := make([]keyColumn, len(seriesKey))
	for k, name := range seriesKey {
		idx := d.Schema.FieldIndices(name)
		if len(idx) != 1 {
			return 0, fmt.Errorf("duplicate rows: no series key column %q", name)
		}
		keys[k].idx = idx[0]
	}
	for _, rec := range d.Records {
		ts, ok := rec.Column(ti[0]).(*array.Timestamp)
		if !ok {
			return 0, fmt.Errorf("duplicate rows: time column %q is not a timestamp", d.TimeColumn)
		}
		for i := 0; i < ts.Len(); i++ {
			times = append(times, int64(ts.Value(i)))
		}
		for k := range keys {
			keys[k].chunks = append(keys[k].chunks, rec.Column(keys[k].idx))
			keys[k].starts = append(keys[k].starts, int64(len(times))-rec.NumRows())
		}
	}
	var order []int32
	if !slices.IsSorted(times) {
		order = make([]int32, len(times))
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortStableFunc(order, func(a, b int32) int {
			switch {
			case times[a] < times[b]:
				return -1
			case times[a] > times[b]:
				return 1
			}
			return 0
		})
	}
	row := func(i int) int {
		if order != nil {
			return int(order[i])
		}
		return i
	}
	var dups int64
	var enc []byte // the keys of the current run, encoded back to back
	var offs []int // where each row's key starts in enc
	seen := map[string]struct{}{}
	for start := 0; start < len(times); {
		end := start + 1
		for end < len(times) && times[row(end)] == times[row(start)] {
			end++
		}
		if end-start > 1 {
			enc, offs = enc[:0], offs[:0]
			for i := start; i < end; i++ {
				offs = append(offs, len(enc))
				for k := range keys {
					enc = keys[k].appendValue(enc, row(i))
				}
			}
			offs = append(offs, len(enc))
			key := func(i int) []byte { return enc[offs[i]:offs[i+1]] }
			if n := end - start; n <= 32 {
				// A few series share a time: compare them pairwise.
				for i := 1; i < n; i++ {
					for j := 0; j < i; j++ {
						if bytes.Equal(key(i), key(j)) {
							dups++
							break
						}
					}
				}
			} else {
				clear(seen)
				for i := range n {
					if _, ok := seen[string(key(i))]; ok {
						dups++
					} else {
						seen[string(key(i))] = struct{}{}
					}
				}
			}
		}
		start = end
	}
	return dups, nil
}

// keyColumn is one series key column across the batches of a file.
type keyColumn struct {
	idx    int
	chunks []arrow.Array
	starts []int64 // file row of each chunk's first row
}

// appendValue appends an unambiguous encoding of the value at file row r:
// a null marker, or a length and the value's text.
func (k *keyColumn) appendValue(buf []byte, r int) []byte {
	c := sort.Search(len(k.starts), func(c int) bool { return k.starts[c] > int64(r) }) - 1
	arr, i := k.chunks[c], r-int(k.starts[c])
	if arr.IsNull(i) {
		return append(buf, 0)
	}
	var v string
	if s, ok := arr.(*array.String); ok {
		v = s.Value(i)
	} else {
		v = arr.ValueStr(i)
	}
	buf = append(buf, 1)
	buf = strconv.AppendInt(buf, int64(len(v)), 10)
	buf = append(buf, ':')
	return append(buf, v...)
}
