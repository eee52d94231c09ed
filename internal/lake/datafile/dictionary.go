package datafile

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
)

// A string column of few values (a series key, a site) is given to the
// Parquet writer as Arrow dictionary arrays, one dictionary per partition:
// arrow-go's writer then writes the dictionary once and the indices as
// they are (its direct dictionary path), where for plain strings it hashes
// every value into its own dictionary (10 to 14% of an append's CPU) and
// compares every value for the statistics. The sort takes the indices
// (four bytes a row) instead of copying the strings. The file is the one
// plain strings give: the same Parquet schema, the same stored Arrow
// schema (ARROW:schema names the column a string), the same statistics
// (arrow-go computes them from the dictionary values a batch refers to),
// a dictionary page and RLE_DICTIONARY data pages. Where it differs: a
// row group that plain strings leave without a dictionary keeps one
// (arrow-go applies Parquet Java's cost rule to a row group's first
// write, which can be a few rows: their dictionary costs as much as their
// values); the
// dictionary of a row group holds every value of its partition's rows
// (arrow-go's own holds those of the row group), in order of value; the
// indices of a row group are one page (arrow-go cuts dictionary pages by
// the size of the values they stand for, which its direct path does not
// count), a few KB for a series key; and a partition whose dictionary
// would not pay (Parquet Java's cost rule: the dictionary and its indices
// at least as large as the plain values) or would pass the dictionary
// page size limit gets plain strings, as arrow-go would fall back to.
// TestDictionaryColumnsWriteTheSameFile compares the two.

// maxDictionaryValues bounds the distinct values of a column taken as a
// dictionary: past it (an id or a message column) the column is taken as
// strings, and counting stops.
const maxDictionaryValues = 1 << 16

// dictionaryColumn is a string column of SortedRows taken as dictionary
// arrays.
type dictionaryColumn struct {
	typ *arrow.DictionaryType
	// codes maps each sorted position to its value's index in the
	// dictionary of its partition; -1 for null.
	codes []int32
	nulls bool
	// parts holds the dictionary of each partition (runs), nil for a
	// partition taken as strings.
	parts []*array.String
}

// DictionaryColumns are the columns the layout's writer may take as
// dictionary arrays: strings with dictionary encoding enabled, no bloom
// filter (arrow-go fills it from the dictionary, which holds values other
// row groups have), and data pages of at least the default size (a table
// tuned for smaller pages, for its page index, keeps arrow-go's page
// cuts).
func (l *Layout) DictionaryColumns() []int {
	props := l.plainTime
	if props.DataPageSize() < table.ParquetPageSizeBytesDefault {
		return nil
	}
	var cols []int
	for i, f := range l.arrowSc.Fields() {
		if f.Type.ID() != arrow.STRING || i == l.timeCol {
			continue
		}
		if props.DictionaryEnabledFor(f.Name) && !props.BloomFilterEnabledFor(f.Name) {
			cols = append(cols, i)
		}
	}
	return cols
}

// encodeDictionaries makes Take return the layout's dictionary columns
// (DictionaryColumns) as dictionary arrays, where they pay
// (WithDictionaries); once the order is known. early holds the codes of
// the columns numbered while the rows were sorted (startStringCodes); the
// others are numbered here. The columns' dictionaries are made
// concurrently.
func (s *SortedRows) encodeDictionaries(l *Layout, early map[int]func() numbered) error {
	limit := l.plainTime.DictionaryPageSizeLimit()
	keyRanks := s.keyRanks
	s.keyRanks = nil
	type column struct {
		col  int
		make func() numbered // the codes and values of its rows
		dict *dictionaryColumn
		err  error
	}
	var todo []*column
	for _, c := range l.DictionaryColumns() {
		if c >= len(s.cols) || s.cols[c].DataType().ID() != arrow.STRING {
			continue
		}
		if r, ok := keyRanks[c]; ok { // a series key: the sort numbered its values
			if len(r.values) > maxDictionaryValues {
				continue
			}
			todo = append(todo, &column{col: c, make: func() numbered {
				codes := make([]int32, len(r.ranks))
				for i, rank := range r.ranks {
					codes[i] = int32(rank)
				}
				return numbered{codes, r.values, true}
			}})
			continue
		}
		numbering := early[c]
		if numbering == nil {
			chunks := s.cols[c].Chunks()
			numbering = func() numbered { return stringCodes(chunks) }
		}
		todo = append(todo, &column{col: c, make: numbering})
	}
	tasks := make([]func(), len(todo))
	for i, c := range todo {
		tasks[i] = func() {
			if n := c.make(); n.ok {
				c.dict, c.err = s.partitionDictionaries(n.codes, n.values, limit)
			}
		}
	}
	runAll(tasks)
	for _, c := range todo {
		if c.err != nil {
			return fmt.Errorf("dictionary of column %s: %w", s.sc.Field(c.col).Name, c.err)
		}
		if c.dict == nil {
			continue
		}
		if s.dicts == nil {
			s.dicts = make([]*dictionaryColumn, len(s.cols))
		}
		s.dicts[c.col] = c.dict
	}
	return nil
}

// startStringCodes numbers, on goroutines of their own while the rows are
// sorted, the values of the layout's dictionary columns that the sort
// does not number (those not in the series key, or all of them for a key
// of more than two columns: sortPermutation), and returns the wait for
// each column's result, by column. A panic of the numbering is raised
// again by the wait, on the caller's goroutine.
func (s *SortedRows) startStringCodes(l *Layout, seriesKey []string) map[int]func() numbered {
	out := map[int]func() numbered{}
	for _, c := range l.DictionaryColumns() {
		if c >= len(s.cols) || s.cols[c].DataType().ID() != arrow.STRING {
			continue
		}
		if len(seriesKey) <= 2 && slices.Contains(seriesKey, s.sc.Field(c).Name) {
			continue
		}
		chunks := s.cols[c].Chunks()
		out[c] = goValue(func() numbered { return stringCodes(chunks) })
	}
	return out
}

// numbered is a string column's rows numbered (numberStrings): the code
// of each row, -1 for null, and the values; ok is false when the column is
// not taken as a dictionary.
type numbered struct {
	codes  []int32
	values []string
	ok     bool
}

// stringCodes numbers the values of a string column's chunks (rows in
// input order) in order of first appearance: the code of each row (-1 for
// null) and the values. ok is false past maxDictionaryValues values, or
// once more than 1,024 values are more than half the rows so far (an id
// or a message per row: counting them would cost more than it saves).
func stringCodes(chunks []arrow.Array) numbered {
	codes, values, ok := numberStrings(chunks, func(distinct, rows int) bool {
		return distinct == maxDictionaryValues || distinct >= 1024 && 2*distinct > rows
	})
	return numbered{codes, values, ok}
}

// numberStrings numbers the values of a string column's chunks in order
// of first appearance: the code of each row (-1 for null) and the values
// (copies: they outlive the chunks' buffers). One map access per row, none
// within a run of one value (sorted or constant columns). ok is false for
// a chunk that is not a string array, or when stop (nil: never), asked
// before each new value with the values and rows so far, says so.
func numberStrings(chunks []arrow.Array, stop func(distinct, rows int) bool) (codes []int32, values []string, ok bool) {
	n := 0
	for _, a := range chunks {
		n += a.Len()
	}
	codes = make([]int32, n)
	var nb stringNumbering
	at := 0
	for _, chunk := range chunks {
		a, ok := chunk.(*array.String)
		if !ok {
			return nil, nil, false
		}
		if !nb.number(a, 0, a.Len(), codes[at:at+a.Len()], func(distinct int) bool { return stop != nil && stop(distinct, nb.rows) }) {
			return nil, nil, false
		}
		at += a.Len()
	}
	return codes, nb.values, true
}

// numberInParts is numberStrings of one string array without a stop, its
// row ranges numbered on goroutines of their own (parts of them, for at
// least parallelRows rows) and merged: the codes and values of one pass
// (the values a later range adds come after an earlier range's, in their
// order of first appearance).
func numberInParts(a *array.String, parts int) ([]int32, []string) {
	n := a.Len()
	if n < parallelRows {
		parts = 1
	}
	parts = max(parts, 1)
	codes := make([]int32, n)
	nbs := make([]stringNumbering, parts)
	tasks := make([]func(), parts)
	for p := range parts {
		lo, hi := n*p/parts, n*(p+1)/parts
		tasks[p] = func() { nbs[p].number(a, lo, hi, codes[lo:hi], nil) }
	}
	runAll(tasks)
	values := nbs[0].values
	index := nbs[0].index
	for p := 1; p < parts; p++ {
		to := make([]int32, len(nbs[p].values))
		for j, v := range nbs[p].values {
			code, ok := index[v]
			if !ok {
				code = int32(len(values))
				index[v] = code
				values = append(values, v)
			}
			to[j] = code
		}
		for i := n * p / parts; i < n*(p+1)/parts; i++ {
			if c := codes[i]; c >= 0 {
				codes[i] = to[c]
			}
		}
	}
	return codes, values
}

// parallelRows is the fewest rows numberInParts cuts into ranges.
const parallelRows = 1 << 16

// stringNumbering numbers string values in order of first appearance.
type stringNumbering struct {
	index    map[string]int32
	values   []string
	rows     int // rows numbered so far
	prev     string
	prevCode int32
	started  bool
}

// number writes the code of rows [lo, hi) of a into out (-1 for null),
// adding the values not seen before (copied); stop (nil: never), asked
// before each new value with the values so far, ends it with false.
func (nb *stringNumbering) number(a *array.String, lo, hi int, out []int32, stop func(distinct int) bool) bool {
	if nb.index == nil {
		nb.index = map[string]int32{}
	}
	for i := lo; i < hi; i++ {
		if a.IsNull(i) {
			out[i-lo] = -1
			nb.rows++
			continue
		}
		v := a.Value(i)
		if !nb.started || v != nb.prev {
			code, seen := nb.index[v]
			if !seen {
				if stop != nil && stop(len(nb.values)) {
					return false
				}
				v = strings.Clone(v)
				code = int32(len(nb.values))
				nb.index[v] = code
				nb.values = append(nb.values, v)
			}
			nb.prev, nb.prevCode, nb.started = v, code, true
		}
		out[i-lo] = nb.prevCode
		nb.rows++
	}
	return true
}

// runAll runs the tasks, each on a goroutine of its own but the last, and
// waits for all of them; the panic of the first task that panicked is
// raised again on the caller's goroutine once they are done, where a
// writer's recovery finds it.
func runAll(tasks []func()) {
	panics := make([]any, len(tasks))
	run := func(i int) {
		defer func() { panics[i] = recover() }()
		tasks[i]()
	}
	var wg sync.WaitGroup
	for i := range len(tasks) - 1 {
		wg.Go(func() { run(i) })
	}
	if len(tasks) > 0 {
		run(len(tasks) - 1)
	}
	wg.Wait()
	for _, v := range panics {
		if v != nil {
			panic(v)
		}
	}
}

// goValue runs f on a goroutine of its own and returns the wait for its
// result; a panic of f is raised again by the wait, on its caller's
// goroutine.
func goValue[T any](f func() T) func() T {
	type result struct {
		v     T
		panic any
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if v := recover(); v != nil {
				r.panic = v
			}
			done <- r
		}()
		r.v = f()
	}()
	return sync.OnceValue(func() T {
		r := <-done
		if r.panic != nil {
			panic(r.panic)
		}
		return r.v
	})
}

// partitionDictionaries gives each partition of s the dictionary of the
// values its rows hold, sorted, and each sorted position its index in it.
// A partition whose dictionary does not pay, or is at least limit bytes
// as Parquet stores it, keeps strings; nil when none pays.
func (s *SortedRows) partitionDictionaries(codes []int32, values []string, limit int64) (*dictionaryColumn, error) {
	n := s.Len()
	d := &dictionaryColumn{
		typ:   &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
		codes: make([]int32, n),
		parts: make([]*array.String, len(s.runs)-1),
	}
	row := func(pos int) int {
		if s.perm != nil {
			return int(s.perm[pos])
		}
		return pos
	}
	local := make([]int32, len(values)) // a value's index in the partition's dictionary, plus one
	var used []int32
	paid := false
	for p := range len(s.runs) - 1 {
		lo, hi := s.runs[p], s.runs[p+1]
		used = used[:0]
		var plainBytes int64
		for pos := lo; pos < hi; pos++ {
			g := codes[row(pos)]
			if g < 0 {
				d.nulls = true
				continue
			}
			plainBytes += int64(len(values[g])) + 4
			if local[g] == 0 {
				local[g] = -1
				used = append(used, g)
			}
		}
		slices.SortFunc(used, func(a, b int32) int { return strings.Compare(values[a], values[b]) })
		var dictBytes int64
		for k, g := range used {
			local[g] = int32(k + 1)
			dictBytes += int64(len(values[g])) + 4
		}
		// arrow-go's statistics of dictionary arrays skip empty strings
		// (ByteArrayStatistics.UpdateFromArrow), where those of strings
		// count them: a partition holding "" keeps strings, or its lower
		// bound would pass over "" (used is sorted: "" comes first).
		empty := len(used) > 0 && values[used[0]] == ""
		if len(used) > 0 && !empty && dictBytes < limit && dictBytes+indexBound(len(used), hi-lo) < plainBytes {
			b := array.NewStringBuilder(s.mem)
			for _, g := range used {
				b.Append(values[g])
			}
			d.parts[p] = b.NewStringArray()
			b.Release()
			paid = true
			for pos := lo; pos < hi; pos++ {
				if g := codes[row(pos)]; g >= 0 {
					d.codes[pos] = local[g] - 1
				} else {
					d.codes[pos] = -1
				}
			}
		}
		for _, g := range used {
			local[g] = 0
		}
	}
	if !paid {
		return nil, nil
	}
	return d, nil
}

// indexBound is arrow-go's bound of the size of n dictionary indices into
// a dictionary of entries values (the RLE encoder's buffer: a byte of bit
// width, the longest runs, one more literal run), which its cost rule
// (checkDictionarySizeLimit) weighs with the dictionary against the plain
// values: the same rule decides a file of one write as arrow-go would.
func indexBound(entries, n int) int64 {
	width := 1
	if entries > 1 {
		width = bits.Len32(uint32(entries - 1))
	}
	runs := (n + 7) / 8
	literal := runs + runs*width
	repeated := runs * (1 + (width+7)/8)
	const maxLiteralRun = 512 // values, as arrow-go's RLE encoder cuts them
	minBuffer := max(1+(maxLiteralRun*width+7)/8, binary.MaxVarintLen32+(width+7)/8)
	return int64(1 + max(literal, repeated) + minBuffer)
}

// take returns the sorted rows [lo, hi) of partition p as a dictionary
// array, or nil when the partition is taken as strings.
func (d *dictionaryColumn) take(mem memory.Allocator, p, lo, hi int) arrow.Array {
	dict := d.parts[p]
	if dict == nil {
		return nil
	}
	codes := d.codes[lo:hi]
	var validity *memory.Buffer
	nulls := 0
	if d.nulls {
		bitmap := make([]byte, bitutil.BytesForBits(int64(len(codes))))
		for i, c := range codes {
			if c >= 0 {
				bitutil.SetBit(bitmap, i)
			} else {
				nulls++
			}
		}
		if nulls > 0 {
			validity = memory.NewBufferBytes(bitmap)
		}
	}
	// A copy of the indices: a batch may outlive the sorted rows.
	idx := make([]int32, len(codes))
	for i, c := range codes {
		idx[i] = max(c, 0)
	}
	data := array.NewData(arrow.PrimitiveTypes.Int32, len(codes),
		[]*memory.Buffer{validity, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(idx))}, nil, nulls, 0)
	indices := array.MakeFromData(data)
	data.Release()
	defer indices.Release()
	// A dictionary array of its own for every batch: arrow-go computes a
	// batch's statistics from the values it refers to only when its
	// dictionary is not the very array it was given before (it would take
	// the whole dictionary's). Today it reads every batch's dictionary
	// back as a new array anyway, so that a constant partition gains
	// nothing from sharing one.
	values := array.NewSlice(dict, 0, int64(dict.Len()))
	defer values.Release()
	return array.NewDictionaryArray(d.typ, indices, values)
}

// release releases the partitions' dictionaries.
func (d *dictionaryColumn) release() {
	for _, p := range d.parts {
		if p != nil {
			p.Release()
		}
	}
}

// sameColumnTypes reports whether rec's columns are of sc's types.
func sameColumnTypes(sc *arrow.Schema, rec arrow.RecordBatch) bool {
	for i, c := range rec.Columns() {
		if !arrow.TypeEqual(c.DataType(), sc.Field(i).Type) {
			return false
		}
	}
	return true
}

// fileSchema is the schema of a data file whose batch is rec: sc, with
// the columns rec holds as dictionary arrays of their type, and the
// footer's ARROW:schema naming them as sc does. It returns sc itself when
// rec has no dictionary column.
func fileSchema(sc *arrow.Schema, rec arrow.RecordBatch) (*arrow.Schema, bool, error) {
	fields := slices.Clone(sc.Fields())
	dict := false
	for i, c := range rec.Columns() {
		if dt, ok := c.DataType().(*arrow.DictionaryType); ok {
			if !arrow.TypeEqual(dt.ValueType, fields[i].Type) {
				return nil, false, fmt.Errorf("internal: column %s is a dictionary of %s, expected %s", fields[i].Name, dt.ValueType, fields[i].Type)
			}
			fields[i].Type = dt
			dict = true
		}
	}
	if !dict {
		return sc, false, nil
	}
	// What pqarrow's WithStoreSchema stores for sc (the schema's metadata,
	// then ARROW:schema of sc with the element of every list named
	// "element", as pqarrow names it): readers see string columns.
	md := sc.Metadata()
	stored := make([]arrow.Field, sc.NumFields())
	for i, f := range sc.Fields() {
		var err error
		if stored[i], err = parquetField(f); err != nil {
			return nil, false, err
		}
	}
	keys := append(slices.Clone(md.Keys()), "ARROW:schema")
	vals := append(slices.Clone(md.Values()), base64.StdEncoding.EncodeToString(
		flight.SerializeSchema(arrow.NewSchema(stored, &md), memory.DefaultAllocator)))
	meta := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(fields, &meta), true, nil
}

// parquetField is f as pqarrow stores it in ARROW:schema
// (normalizeFieldForParquet): the element of every list, at any depth,
// named "element", the columns Parquet Arrow cannot write refused.
func parquetField(f arrow.Field) (arrow.Field, error) {
	elem := func(e arrow.Field) (arrow.Field, error) {
		e, err := parquetField(e)
		e.Name = "element"
		return e, err
	}
	switch dt := f.Type.(type) {
	case *arrow.ListType:
		e, err := elem(dt.ElemField())
		return arrow.Field{Name: f.Name, Type: arrow.ListOfField(e), Nullable: f.Nullable, Metadata: f.Metadata}, err
	case *arrow.LargeListType:
		e, err := elem(dt.ElemField())
		return arrow.Field{Name: f.Name, Type: arrow.LargeListOfField(e), Nullable: f.Nullable, Metadata: f.Metadata}, err
	case *arrow.FixedSizeListType:
		e, err := elem(dt.ElemField())
		return arrow.Field{Name: f.Name, Type: arrow.FixedSizeListOfField(dt.Len(), e), Nullable: f.Nullable, Metadata: f.Metadata}, err
	case *arrow.StructType:
		fields := make([]arrow.Field, dt.NumFields())
		for i := range fields {
			var err error
			if fields[i], err = parquetField(dt.Field(i)); err != nil {
				return arrow.Field{}, err
			}
		}
		return arrow.Field{Name: f.Name, Type: arrow.StructOf(fields...), Nullable: f.Nullable, Metadata: f.Metadata}, nil
	case *arrow.MapType:
		key, err := parquetField(dt.KeyField())
		if err != nil {
			return arrow.Field{}, err
		}
		item, err := parquetField(dt.ItemField())
		return arrow.Field{Name: f.Name, Type: arrow.MapOfFields(key, item), Nullable: f.Nullable, Metadata: f.Metadata}, err
	case *arrow.RunEndEncodedType, *arrow.ListViewType, *arrow.LargeListViewType:
		return arrow.Field{}, fmt.Errorf("column %s: %s cannot be written to Parquet", f.Name, dt)
	}
	return f, nil
}
