package decode

import (
	"bytes"
	"fmt"
	"hash/maphash"
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
	var rk runKeys
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
			dups += rk.repeatedKeys(enc, offs)
		}
		start = end
	}
	return dups, nil
}

// pairwiseRun is the longest run of one time whose keys' hashes are
// compared pairwise; longer runs go through a map of the hashes. Either
// way no string is allocated per row, and keys are compared byte by byte
// only where their hashes agree.
const pairwiseRun = 64

// keyHash hashes an encoded series key; a variable so that a test can make
// keys collide.
var keyHash = func(seed maphash.Seed, b []byte) uint64 { return maphash.Bytes(seed, b) }

var keySeed = maphash.MakeSeed()

// runKeys holds the buffers repeatedKeys reuses from one run to the next.
type runKeys struct {
	hashes []uint64
	seen   map[uint64]int // a long run's first key of each hash
}

// repeatedKeys counts the keys enc[offs[i]:offs[i+1]] equal to an earlier
// one.
func (rk *runKeys) repeatedKeys(enc []byte, offs []int) int64 {
	n := len(offs) - 1
	key := func(i int) []byte { return enc[offs[i]:offs[i+1]] }
	rk.hashes = rk.hashes[:0]
	for i := range n {
		rk.hashes = append(rk.hashes, keyHash(keySeed, key(i)))
	}
	h := rk.hashes
	earlier := func(i int) bool {
		for j := range i {
			if h[j] == h[i] && bytes.Equal(key(i), key(j)) {
				return true
			}
		}
		return false
	}
	var dups int64
	if n <= pairwiseRun {
		for i := 1; i < n; i++ {
			if earlier(i) {
				dups++
			}
		}
		return dups
	}
	if rk.seen == nil {
		rk.seen = map[uint64]int{}
	}
	clear(rk.seen)
	for i := range n {
		j, ok := rk.seen[h[i]]
		switch {
		case !ok:
			rk.seen[h[i]] = i
		case bytes.Equal(key(i), key(j)) || earlier(i): // earlier: another key of the same hash
			dups++
		}
	}
	return dups
}

// keyColumn is one series key column across the batches of a file.
type keyColumn struct {
	idx    int
	chunks []arrow.Array
	starts []int64 // file row of each chunk's first row
	last   int     // the chunk of the row appendValue was last given
}

// appendValue appends an unambiguous encoding of the value at file row r:
// a null marker, or a length and the value's text.
func (k *keyColumn) appendValue(buf []byte, r int) []byte {
	c := k.last
	if int64(r) < k.starts[c] || c+1 < len(k.starts) && int64(r) >= k.starts[c+1] {
		c = sort.Search(len(k.starts), func(c int) bool { return k.starts[c] > int64(r) }) - 1
		k.last = c
	}
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
