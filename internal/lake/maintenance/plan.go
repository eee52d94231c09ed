package maintenance

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/timelake/timelake/internal/settings/quantity"
)

// Group is one set of files of a partition rewritten together.
type Group struct {
	Partition string // e.g. time_day=2026-01-05
	Reason    string // "tiered" or "cold"
	Tier      int    // the size tier merged (tiered groups)
	FilesIn   int
	BytesIn   int64
	Rows      int64
	FilesOut  int // 0 in a dry run
	BytesOut  int64
	// Replaced counts the rows left out under timelake.read-dedup: rows
	// whose series key and time a newer batch's row has (internal/lake/dedupe.go).
	Replaced int64
	// Inputs are the files rewritten, Outputs the files written (lake's
	// rewrite sets them).
	Inputs  []iceberg.DataFile `json:"-"`
	Outputs []iceberg.DataFile `json:"-"`
	// Dedupe: the group is merged keeping the newest row of each key, its
	// new files taking DataSeq, the highest data sequence number of its
	// inputs (Seqs, by path).
	Dedupe  bool             `json:"-"`
	DataSeq int64            `json:"-"`
	Seqs    map[string]int64 `json:"-"`
}

// File is a live data file of the current snapshot and its commit time.
type File struct {
	Entry     iceberg.ManifestEntry
	Partition string // as in its folder name, e.g. time_day=2026-01-05
	Committed time.Time
}

// CompactableByPartition returns the files compaction may rewrite (Parquet
// data files of the partition spec spec) by partition.
func CompactableByPartition(files []File, spec int32) map[string][]File {
	byPart := map[string][]File{}
	for _, f := range files {
		df := f.Entry.DataFile()
		if df.SpecID() != spec || df.ContentType() != iceberg.EntryContentData || df.FileFormat() != iceberg.ParquetFile {
			continue
		}
		byPart[f.Partition] = append(byPart[f.Partition], f)
	}
	return byPart
}

// PlanCompaction groups the live files of compactable partitions, newest
// partition first, within maxBytes of input (0: no bound). fits, when set,
// says whether a group's rewrite fits the time left (and takes its share
// of it); a group that does not is cut to its longest run of oldest files
// that fits (FittingPart), so that a backlog whose groups are each larger
// than a round can rewrite still shrinks every round, and the rest of it is
// counted in deferred (the whole group when not even two of its files fit).
func PlanCompaction(files []File, spec int32, s CompactSettings, now time.Time, maxBytes int64,
	fits func(Group) bool) (out []Group, deferred int) {
	byPart := CompactableByPartition(files, spec)
	parts := slices.Sorted(maps.Keys(byPart))
	budget := maxBytes
	bytesSpent := false
	// take adds g unless it does not fit the time left; false when the
	// bytes of the round are used up.
	take := func(g Group) bool {
		if maxBytes > 0 && g.BytesIn > budget && len(out) > 0 {
			return false
		}
		if fits != nil && !fits(g) {
			deferred++
			if part, ok := FittingPart(g, fits); ok {
				budget -= part.BytesIn
				out = append(out, part)
			}
			return true
		}
		budget -= g.BytesIn
		out = append(out, g)
		return true
	}
	// Newest partitions first: the one being written is the one queried.
	for i := len(parts) - 1; i >= 0; i-- {
		fs := byPart[parts[i]]
		slices.SortFunc(fs, func(a, b File) int {
			if c := a.Committed.Compare(b.Committed); c != 0 {
				return c
			}
			return cmp.Compare(a.Entry.DataFile().FilePath(), b.Entry.DataFile().FilePath())
		})
		cold := true
		for _, f := range fs {
			cold = cold && f.Committed.Before(now.Add(ColdSlack(s.ColdAfter)-s.ColdAfter))
		}
		var small []File
		for _, f := range fs {
			if f.Entry.DataFile().FileSizeBytes() < s.Target {
				small = append(small, f)
			}
		}
		var groups []Group
		if cold {
			if len(small) >= 2 {
				groups = PackGroups(parts[i], "cold", 0, small, s.Target)
			}
		} else {
			tiers := map[int][]File{}
			for _, f := range small {
				tr := SizeTier(f.Entry.DataFile().FileSizeBytes(), s.MinFiles)
				tiers[tr] = append(tiers[tr], f)
			}
			for _, tr := range slices.Sorted(maps.Keys(tiers)) {
				if len(tiers[tr]) >= s.MinFiles {
					groups = append(groups, PackGroups(parts[i], "tiered", tr, tiers[tr], s.Target)...)
				}
			}
		}
		for _, g := range groups {
			switch {
			case len(g.Inputs) < 2:
			case bytesSpent || !take(g):
				bytesSpent = true
				deferred++ // the first group over the bytes ends the round's plan
			}
		}
	}
	return out, deferred
}

// FittingPart returns the longest run of g's first files (its oldest, as
// PackGroups ordered them), at least two, whose rewrite fits (fits takes
// its share of the time left); ok is false when not even two do. A run of
// a group's first files is a group PackGroups could have made: within the
// target size and the merge's streams.
func FittingPart(g Group, fits func(Group) bool) (part Group, ok bool) {
	part = g
	for k := len(g.Inputs) - 1; k >= 2; k-- {
		df := g.Inputs[k]
		part.Inputs = g.Inputs[:k]
		part.FilesIn--
		part.BytesIn -= df.FileSizeBytes()
		part.Rows -= df.Count()
		if fits(part) {
			part.Inputs = slices.Clip(part.Inputs)
			return part, true
		}
	}
	return Group{}, false
}

// IdleReason says why PlanCompaction planned nothing for files: no data
// file, none smaller than the target, or too few small ones in each
// partition.
func IdleReason(files []File, spec int32, s CompactSettings) string {
	var small int
	parts := map[string]bool{}
	for _, f := range files {
		df := f.Entry.DataFile()
		if df.SpecID() == spec && df.ContentType() == iceberg.EntryContentData && df.FileSizeBytes() < s.Target {
			small++
			parts[f.Partition] = true
		}
	}
	switch {
	case len(files) == 0:
		return "the table has no data files"
	case small == 0:
		return fmt.Sprintf("every data file is at least %s (%s)", quantity.FormatSize(s.Target), PropTargetFileSize)
	}
	in := fmt.Sprintf("%d partitions", len(parts))
	if len(parts) == 1 {
		in = "1 partition"
	}
	return fmt.Sprintf("%d files below %s in %s, but no partition has %d of one size tier (%s), or 2 of any size once its files are cold (older than %s, %s)",
		small, quantity.FormatSize(s.Target), in, s.MinFiles, PropCompactMinFiles, s.ColdAfter, PropCompactColdAfter)
}

// PackGroups cuts files (oldest first) into groups of at most target bytes
// of input, each with at most MergeMaxStreams files the merge streams
// (SplitMergeInputs): a streamed file holds its reader's buffers for the
// whole rewrite, so a partition of many mid-sized files is merged in
// several groups, and their outputs (new files) once the partition is cold
// again.
func PackGroups(partition, reason string, tier int, files []File, target int64) []Group {
	var out []Group
	cur := Group{Partition: partition, Reason: reason, Tier: tier}
	var pool MergePool
	streams := 0
	for _, f := range files {
		df := f.Entry.DataFile()
		streamed := !pool.Fits(df.Count())
		if cur.FilesIn > 0 && (cur.BytesIn+df.FileSizeBytes() > target || streamed && streams == MergeMaxStreams) {
			out = append(out, cur)
			cur = Group{Partition: partition, Reason: reason, Tier: tier}
			pool, streams = MergePool{}, 0
			streamed = !pool.Fits(df.Count())
		}
		if streamed {
			streams++
		} else {
			pool.Rows += df.Count()
		}
		cur.Inputs = append(cur.Inputs, df)
		cur.FilesIn++
		cur.BytesIn += df.FileSizeBytes()
		cur.Rows += df.Count()
	}
	if cur.FilesIn > 0 {
		out = append(out, cur)
	}
	return out
}

// The merge of a group's files (internal/lake/merge.go) reads small files
// whole into a pool, up to MergePoolRows rows of files of at most
// MergePoolFileRows rows, sorted in memory as one run, and streams the
// others, at most MergeMaxStreams of them: PackGroups cuts groups to it.
const (
	MergePoolFileRows = 16 * 1024  // a file this small is read whole into the pool
	MergePoolRows     = 256 * 1024 // the pool's rows at most
	// MergeMaxStreams bounds the files a merge streams at once: each
	// holds its reader's buffers, about the file's compressed size plus a
	// page per column, doubled by the Go heap's headroom.
	MergeMaxStreams = 8
)

// MergePool counts the rows of the files a merge reads whole into its
// pool; the others it streams.
type MergePool struct{ Rows int64 }

// Fits reports whether a file of n rows joins the pool.
func (p *MergePool) Fits(n int64) bool { return n <= MergePoolFileRows && p.Rows+n <= MergePoolRows }

// SplitMergeInputs picks the files a merge reads whole into its pool (the
// small ones, up to MergePoolRows rows) and those it streams, each with
// its position in inputs (ties keep input order).
func SplitMergeInputs(inputs []iceberg.DataFile) (pooled []iceberg.DataFile, streamed []int) {
	var pool MergePool
	for i, df := range inputs {
		if pool.Fits(df.Count()) {
			pooled = append(pooled, df)
			pool.Rows += df.Count()
			continue
		}
		streamed = append(streamed, i)
	}
	return pooled, streamed
}
