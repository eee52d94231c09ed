package maintenance

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/apache/iceberg-go"
)

// BoundColumn is a sort key column (time, series key) whose bounds the
// manifests carry: its field id and how its bound bytes compare (Iceberg
// spec, "Binary single-value serialization").
type BoundColumn struct {
	ID      int
	Compare func(a, b []byte) int // nil: not comparable, any bounds may overlap
}

// BoundComparator compares two single-value serialized bounds of type t.
func BoundComparator(t iceberg.Type) func(a, b []byte) int {
	le := binary.LittleEndian
	switch t.(type) {
	case iceberg.StringType, iceberg.BinaryType, iceberg.FixedType, iceberg.UUIDType:
		return bytes.Compare
	case iceberg.Int32Type, iceberg.DateType:
		return func(a, b []byte) int {
			if len(a) < 4 || len(b) < 4 {
				return 0
			}
			return cmp.Compare(int32(le.Uint32(a)), int32(le.Uint32(b)))
		}
	case iceberg.Int64Type, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimeType:
		return func(a, b []byte) int {
			if len(a) < 8 || len(b) < 8 {
				return 0
			}
			return cmp.Compare(int64(le.Uint64(a)), int64(le.Uint64(b)))
		}
	case iceberg.Float32Type:
		return func(a, b []byte) int {
			if len(a) < 4 || len(b) < 4 {
				return 0
			}
			return cmp.Compare(math.Float32frombits(le.Uint32(a)), math.Float32frombits(le.Uint32(b)))
		}
	case iceberg.Float64Type:
		return func(a, b []byte) int {
			if len(a) < 8 || len(b) < 8 {
				return 0
			}
			return cmp.Compare(math.Float64frombits(le.Uint64(a)), math.Float64frombits(le.Uint64(b)))
		}
	case iceberg.BooleanType:
		return bytes.Compare
	}
	return nil
}

// MayShareKeys reports whether two data files may hold rows of one series
// key and time: their data sequence numbers differ and their bounds overlap
// on every sort key column (a missing bound may overlap anything).
func MayShareKeys(a, b File, cols []BoundColumn) bool {
	if a.Entry.SequenceNum() == b.Entry.SequenceNum() {
		return false
	}
	da, db := a.Entry.DataFile(), b.Entry.DataFile()
	la, ua, lb, ub := da.LowerBoundValues(), da.UpperBoundValues(), db.LowerBoundValues(), db.UpperBoundValues()
	for _, c := range cols {
		if c.Compare == nil {
			continue
		}
		x, y, z, w := la[c.ID], ua[c.ID], lb[c.ID], ub[c.ID]
		if x == nil || y == nil || z == nil || w == nil {
			continue
		}
		if c.Compare(x, w) > 0 || c.Compare(z, y) > 0 {
			return false
		}
	}
	return true
}

// SharingComponents cuts files (one partition's) into the sets whose
// members may share keys, directly or through others (MayShareKeys), and
// returns those of two files or more, each in data sequence order.
func SharingComponents(files []File, cols []BoundColumn) [][]File {
	parent := make([]int, len(files))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	for i := range files {
		for j := i + 1; j < len(files); j++ {
			if find(i) != find(j) && MayShareKeys(files[i], files[j], cols) {
				parent[find(i)] = find(j)
			}
		}
	}
	byRoot := map[int][]File{}
	for i, f := range files {
		byRoot[find(i)] = append(byRoot[find(i)], f)
	}
	var out [][]File
	for _, root := range slices.Sorted(maps.Keys(byRoot)) {
		if c := byRoot[root]; len(c) > 1 {
			slices.SortFunc(c, BySequence)
			out = append(out, c)
		}
	}
	return out
}

func BySequence(a, b File) int {
	if c := cmp.Compare(a.Entry.SequenceNum(), b.Entry.SequenceNum()); c != 0 {
		return c
	}
	return cmp.Compare(a.Entry.DataFile().FilePath(), b.Entry.DataFile().FilePath())
}

// DedupePlan turns PlanCompaction's groups into those of a table under
// timelake.read-dedup: a live partition's groups that are closed (no file
// of the partition outside the group whose data sequence number lies
// within the group's may share a key with a member), and for each cold
// partition its files that may share keys (SharingComponents, whatever
// their sizes) and its other small files, each set in data sequence order
// (closed by construction). Groups are taken within maxBytes and the time left (fits) as
// PlanCompaction takes them; deferred counts those left.
func DedupePlan(cols []BoundColumn, files []File, groups []Group, deferred int, spec int32, s CompactSettings, now time.Time, maxBytes int64,
	fits func(Group) bool) ([]Group, int) {
	byPart := CompactableByPartition(files, spec)
	cold := func(fs []File) bool {
		for _, f := range fs {
			if !f.Committed.Before(now.Add(ColdSlack(s.ColdAfter) - s.ColdAfter)) {
				return false
			}
		}
		return true
	}
	var planned []Group
	for _, g := range groups {
		if !cold(byPart[g.Partition]) && ClosedGroup(g, byPart[g.Partition], cols) {
			planned = append(planned, g)
		}
	}
	parts := slices.Sorted(maps.Keys(byPart))
	for i := len(parts) - 1; i >= 0; i-- { // newest partitions first, as PlanCompaction
		fs := byPart[parts[i]]
		if !cold(fs) {
			continue
		}
		inComponent := map[string]bool{}
		for _, c := range SharingComponents(fs, cols) {
			g := Group{Partition: parts[i], Reason: "cold"}
			for _, f := range c {
				inComponent[f.Entry.DataFile().FilePath()] = true
				g.Inputs = append(g.Inputs, f.Entry.DataFile())
				g.FilesIn++
				g.BytesIn += f.Entry.DataFile().FileSizeBytes()
				g.Rows += f.Entry.DataFile().Count()
			}
			planned = append(planned, g)
		}
		var small []File
		for _, f := range fs {
			if !inComponent[f.Entry.DataFile().FilePath()] && f.Entry.DataFile().FileSizeBytes() < s.Target {
				small = append(small, f)
			}
		}
		if len(small) >= 2 {
			slices.SortFunc(small, BySequence)
			planned = append(planned, PackGroups(parts[i], "cold", 0, small, s.Target)...)
		}
	}
	seqOf := make(map[string]int64, len(files))
	for _, f := range files {
		seqOf[f.Entry.DataFile().FilePath()] = f.Entry.SequenceNum()
	}
	var out []Group
	budget := maxBytes
	deferred = 0
	for _, g := range planned {
		if len(g.Inputs) < 2 {
			continue
		}
		if deferred > 0 || maxBytes > 0 && g.BytesIn > budget && len(out) > 0 {
			deferred++ // the first group that does not fit ends the round's plan
			continue
		}
		if fits != nil && !fits(g) {
			deferred++ // its rewrite does not fit the time left
			continue
		}
		budget -= g.BytesIn
		g.Dedupe = true
		g.Seqs = map[string]int64{}
		for _, df := range g.Inputs {
			g.Seqs[df.FilePath()] = seqOf[df.FilePath()]
			g.DataSeq = max(g.DataSeq, seqOf[df.FilePath()])
		}
		out = append(out, g)
	}
	return out, deferred
}

// ClosedGroup reports whether no file of the partition (part) outside g
// whose data sequence number lies within g's lowest and highest may share
// a key with one of g's files: the new files, taking g's highest, would
// otherwise rank a row of an older batch above that file's.
func ClosedGroup(g Group, part []File, cols []BoundColumn) bool {
	member := map[string]bool{}
	for _, df := range g.Inputs {
		member[df.FilePath()] = true
	}
	var members, others []File
	for _, f := range part {
		if member[f.Entry.DataFile().FilePath()] {
			members = append(members, f)
		} else {
			others = append(others, f)
		}
	}
	if len(members) == 0 {
		return false
	}
	lo, hi := members[0].Entry.SequenceNum(), members[0].Entry.SequenceNum()
	for _, f := range members {
		lo, hi = min(lo, f.Entry.SequenceNum()), max(hi, f.Entry.SequenceNum())
	}
	for _, o := range others {
		if o.Entry.SequenceNum() < lo || o.Entry.SequenceNum() > hi {
			continue
		}
		for _, m := range members {
			if MayShareKeys(o, m, cols) || o.Entry.SequenceNum() == m.Entry.SequenceNum() {
				return false
			}
		}
	}
	return true
}
