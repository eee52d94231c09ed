package pqlite

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"github.com/parquet-go/parquet-go/format"
)

// maxFooter is the largest footer read (a longer one is damage).
const maxFooter = 256 << 20

// maxSchemaDepth is the deepest schema read: a deeper one (a few bytes a
// level in a footer) would take a stack of its depth; it is nested
// columns, which are refused anyway.
const maxSchemaDepth = 1000

// footer is a Parquet file's footer and its schema as a tree.
type footer struct {
	meta   format.FileMetaData
	root   *node
	leaves []*node // the leaf columns in the order of the column chunks
	size   int64   // the file's size
}

// node is an element of the schema.
type node struct {
	el       *format.SchemaElement
	children []*node
	parent   *node
	leaf     int   // the leaf column's index; -1 for a group
	maxDef   int16 // definition and repetition levels of a leaf
	maxRep   int16
	physical format.Type
}

func (n *node) name() string { return n.el.Name }

func (n *node) repetition() format.FieldRepetitionType {
	r, _ := n.el.RepetitionType.Get()
	return r
}

// readFooter reads and parses the footer of the size bytes of r.
func readFooter(ctx context.Context, r io.ReaderAt, size int64) (*footer, error) {
	if size < 12 {
		return nil, fmt.Errorf("parquet: file too small (size=%d)", size)
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, fmt.Errorf("parquet: could not read footer: %w", err)
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-8 || n > maxFooter {
		return nil, errors.New("parquet: file is smaller than indicated metadata size")
	}
	if string(tail[4:]) != "PAR1" {
		return nil, errors.New("parquet: magic bytes not found in footer. Either the file is corrupted or this isn't a parquet file")
	}
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, size-8-n); err != nil {
		return nil, fmt.Errorf("parquet: could not read footer: %w", err)
	}
	f := &footer{size: size}
	if err := readFileMetaData(ctx, buf, &f.meta); err != nil {
		return nil, fmt.Errorf("parquet: could not read footer: %w", err)
	}
	if err := f.buildSchema(); err != nil {
		return nil, err
	}
	return f, nil
}

// buildSchema builds the tree of the footer's depth-first schema list.
func (f *footer) buildSchema() error {
	els := f.meta.Schema
	if len(els) == 0 {
		return errors.New("parquet: empty schema")
	}
	pos := 0
	var build func(parent *node, def, rep int16, depth int) (*node, error)
	build = func(parent *node, def, rep int16, depth int) (*node, error) {
		if depth > maxSchemaDepth {
			return nil, fmt.Errorf("parquet: malformed schema: nested more than %d levels deep", maxSchemaDepth)
		}
		if pos >= len(els) {
			return nil, errors.New("parquet: malformed schema: not enough elements")
		}
		el := &els[pos]
		pos++
		n := &node{el: el, parent: parent, leaf: -1}
		if parent != nil {
			// Without a repetition type, or with an unknown one, an
			// element is required, as arrow-go reads it.
			switch r, _ := el.RepetitionType.Get(); r {
			case format.Optional:
				def++
			case format.Repeated:
				def++
				rep++
			}
		}
		children, group := el.NumChildren.Get()
		if parent == nil && !group {
			return nil, errors.New("parquet: the schema's root is not a group")
		}
		if group && children > 0 || parent == nil {
			if children < 0 || int(children) > len(els)-pos {
				return nil, errors.New("parquet: malformed schema: not enough elements")
			}
			for range children {
				c, err := build(n, def, rep, depth+1)
				if err != nil {
					return nil, err
				}
				n.children = append(n.children, c)
			}
			return n, nil
		}
		t, _ := el.Type.Get() // none: BOOLEAN, as arrow-go reads it
		if t < format.Boolean || t > format.FixedLenByteArray {
			return nil, fmt.Errorf("parquet: schema element %s has an invalid type %d", el.Name, t)
		}
		if t == format.FixedLenByteArray {
			if l, _ := el.TypeLength.Get(); l <= 0 {
				return nil, fmt.Errorf("parquet: fixed length byte array column %s has length %d", el.Name, l)
			}
		}
		n.physical, n.maxDef, n.maxRep = t, def, rep
		n.leaf = len(f.leaves)
		f.leaves = append(f.leaves, n)
		return n, nil
	}
	root, err := build(nil, 0, 0, 0)
	if err != nil {
		return err
	}
	if pos != len(els) {
		return fmt.Errorf("parquet: schema has %d elements, its tree %d", len(els), pos)
	}
	f.root = root
	return nil
}

// chunk is column chunk c of row group g, or an error when its metadata is
// not there.
func (f *footer) chunk(g, c int) (*format.ColumnChunk, error) {
	rg := &f.meta.RowGroups[g]
	if c >= len(rg.Columns) {
		return nil, fmt.Errorf("parquet: trying to read column index %d but row group metadata only has %d columns", c, len(rg.Columns))
	}
	return &rg.Columns[c], nil
}

// footerCounts checks the counts of a Parquet footer that readers trust:
// every row group's rows at least 0 and adding up to the file's, every
// column chunk's values at least 0. "" when they hold.
func (f *footer) footerCounts() string {
	var rows int64
	for g := range f.meta.RowGroups {
		rg := &f.meta.RowGroups[g]
		if rg.NumRows < 0 {
			return fmt.Sprintf("row group %d has %d rows by its metadata", g, rg.NumRows)
		}
		rows += rg.NumRows
		for c := range rg.Columns {
			if v := rg.Columns[c].MetaData.NumValues; v < 0 {
				return fmt.Sprintf("row group %d: column chunk %d has %d values by its metadata", g, c, v)
			}
		}
	}
	if rows != f.meta.NumRows {
		return fmt.Sprintf("its footer says %d rows, its row groups %d", f.meta.NumRows, rows)
	}
	return ""
}

// createdBy parses a writer's created_by: application and version.
var createdBy = regexp.MustCompile(`^(.*?)\s+version\s+(\d+)(?:\.(\d+))?(?:\.(\d+))?`)

// before816 reports whether the file's writer is parquet-mr 1.2.8 or
// earlier, which left the dictionary page header out of
// total_compressed_size (PARQUET-816).
func (f *footer) before816() bool {
	m := createdBy.FindStringSubmatch(f.meta.CreatedBy)
	if m == nil || m[1] != "parquet-mr" {
		return false
	}
	v := [3]int{}
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+2])
	}
	switch {
	case v[0] != 1:
		return v[0] < 1
	case v[1] != 2:
		return v[1] < 2
	}
	return v[2] < 9
}

// valueBytes is decode.ParquetValueBytes of the footer.
func (f *footer) valueBytes() (n int64, ok bool) {
	for g := range f.meta.RowGroups {
		rg := &f.meta.RowGroups[g]
		for c := range rg.Columns {
			if c >= len(f.leaves) {
				return 0, false
			}
			cm := &rg.Columns[c].MetaData
			values := cm.NumValues
			n += values / 8 // validity
			switch cm.Type {
			case format.Boolean:
				n += values / 8
			case format.Int32, format.Float:
				n += 4 * values
			case format.Int64, format.Double, format.Int96:
				n += 8 * values // INT96 reads as a timestamp
			case format.FixedLenByteArray:
				l, _ := f.leaves[c].el.TypeLength.Get()
				n += int64(l) * values
			default:
				data := cm.TotalUncompressedSize
				st := &cm.Statistics
				lo, hi := st.MinValue, st.MaxValue
				if lo == nil && hi == nil {
					lo, hi = st.Min, st.Max
				}
				if lo != nil || hi != nil {
					data = max(data, values*int64(len(lo)+len(hi))/2)
				}
				n += 4*values + data
			}
		}
	}
	return n, true
}

// keyValue is the footer's value of key; ok is false without one.
func (f *footer) keyValue(key string) (string, bool) {
	for _, kv := range f.meta.KeyValueMetadata {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return "", false
}
