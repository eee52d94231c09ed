package lake

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/timelake/timelake/internal/storage"
)

// mergeAbsorbLimit is the size from which a manifest is no longer merged
// into the next one, whatever commit.manifest.target-size-bytes says
// (8 MiB by default). A merge rewrites every entry it absorbs, every few
// commits (commit.manifest.min-count-to-merge): in a long run of small
// files, before compaction, absorbing a manifest of every file loaded so
// far made each commit's cost grow with them. At about 60 bytes an entry a
// manifest stops growing at some 17,000 data files; the next one starts
// beside it.
const mergeAbsorbLimit = 1 << 20

// stageConcurrency bounds the manifest and manifest-list PUTs one commit
// attempt runs at once.
const stageConcurrency = 16

// Snapshot summary keys written for every appended snapshot (Iceberg spec,
// "Snapshots": optional summary fields, as Java and iceberg-go write them).
const (
	summaryAddedDataFiles = "added-data-files"
	summaryAddedRecords   = "added-records"
	summaryAddedFilesSize = "added-files-size"
	summaryChangedParts   = "changed-partition-count"
	summaryTotalDataFiles = "total-data-files"
	summaryTotalRecords   = "total-records"
	summaryTotalFilesSize = "total-files-size"
	summaryTotalDeletes   = "total-delete-files"
	summaryTotalPosDels   = "total-position-deletes"
	summaryTotalEqDels    = "total-equality-deletes"
)

// canStage reports whether Commit can write the snapshots of ps itself
// (stage) instead of through iceberg-go's transaction, which writes one
// snapshot at a time: a format-version 2 table at the location this lake
// gives it, whose data files were all written with the current partition
// spec. Other tables take the transaction path.
func (t *Table) canStage(h *head, ps []*Prepared) bool {
	meta := h.write
	if meta.Version() != 2 || meta.Location() != t.lake.tableLocation(t.name) {
		return false
	}
	spec := int32(meta.DefaultPartitionSpec())
	for _, p := range ps {
		for _, df := range p.files {
			if df.SpecID() != spec || df.ContentType() != iceberg.EntryContentData {
				return false
			}
		}
	}
	return true
}

// stage writes the snapshots of the pending batches (in order, each the
// parent of the next, on top of the main branch of meta) and returns the
// snapshots to commit in one metadata write (head.withSnapshots).
//
// Per batch it writes one manifest of its data files (ADDED entries; once
// per Commit, reused by later attempts, since snapshot ids stay fixed for
// the whole Commit) and one manifest list naming that manifest, those of the
// batches before it and the parent's manifests: every snapshot is a complete,
// readable table state (Iceberg spec, "Snapshots" and "Manifest Lists"). All
// these writes are independent and run concurrently. When the table enables
// manifest merging (commit.manifest-merge.enabled), the last snapshot names
// one merged manifest instead: the commit's entries (the earlier batches'
// as EXISTING with their snapshot ids and sequence numbers), plus the
// parent's small manifests once there are commit.manifest.min-count-to-merge
// of them (entries below commit.manifest.target-size-bytes), so the newest
// snapshot names few manifests however many commits came before.
//
// Errors: I/O errors writing or reading manifests; nothing is committed.
func (t *Table) stage(ctx context.Context, c *appendMutation, a *appendAttempt, h *head, pending []*Prepared, attempt int) ([]table.Snapshot, error) {
	meta := h.write
	spec := meta.PartitionSpec()
	schema := meta.CurrentSchema()
	props := meta.Properties()
	merge := props.GetBool(table.ManifestMergeEnabledKey, table.ManifestMergeEnabledDefault)

	parent, err := h.currentSnapshot()
	if err != nil {
		return nil, err
	}
	var parentID *int64
	var baseManifests []iceberg.ManifestFile
	var prevSummary iceberg.Properties
	if parent != nil {
		id := parent.SnapshotID
		parentID = &id
		if baseManifests, err = t.parentManifests(ctx, parent); err != nil {
			return nil, err
		}
		if parent.Summary != nil {
			prevSummary = parent.Summary.Properties
		}
	}

	if c.snapIDs == nil {
		c.snapIDs = map[string]int64{}
		c.own = map[string]iceberg.ManifestFile{}
		c.commitID = uuid.New()
	}
	for _, p := range pending {
		if _, ok := c.snapIDs[p.BatchID]; !ok {
			c.snapIDs[p.BatchID] = newSnapshotID(h, c.snapIDs)
			c.ours[c.snapIDs[p.BatchID]] = true
		}
	}
	seq0 := h.lastSeq
	last := len(pending) - 1

	// The batches' own manifests (all but the last one's when merging).
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(stageConcurrency)
	var own []*Prepared
	for i, p := range pending {
		if _, ok := c.own[p.BatchID]; ok || (merge && i == last) || len(p.files) == 0 {
			continue
		}
		own = append(own, p)
	}
	written := make([]iceberg.ManifestFile, len(own))
	for i, p := range own {
		g.Go(func() error {
			id := c.snapIDs[p.BatchID]
			mf, err := t.writeManifest(gctx, c, spec, schema, id, func(w *iceberg.ManifestWriter) error {
				for _, df := range p.files {
					if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &id, nil, nil, df)); err != nil {
						return err
					}
				}
				return nil
			})
			written[i] = mf
			return err
		})
	}
	// The last snapshot's merged manifest, and the parent's manifests it
	// replaces.
	var merged iceberg.ManifestFile
	kept := baseManifests
	if merge {
		var absorbed []iceberg.ManifestFile
		if len(baseManifests)+1 >= props.GetInt(table.ManifestMinMergeCountKey, table.ManifestMinMergeCountDefault) {
			target := min(int64(props.GetInt(table.ManifestTargetSizeBytesKey, table.ManifestTargetSizeBytesDefault)), mergeAbsorbLimit)
			kept = nil
			for _, m := range baseManifests {
				if m.ManifestContent() == iceberg.ManifestContentData && m.PartitionSpecID() == int32(spec.ID()) && m.Length() < target {
					absorbed = append(absorbed, m)
				} else {
					kept = append(kept, m)
				}
			}
		}
		entries := len(absorbed)
		for _, p := range pending {
			entries += len(p.files)
		}
		if entries > 0 { // a commit of batches without rows adds no manifest
			g.Go(func() (err error) {
				merged, err = t.writeMergedManifest(gctx, c, spec, schema, pending, seq0, absorbed)
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, p := range own {
		c.own[p.BatchID] = written[i]
	}

	// One manifest list per snapshot, newest manifests first.
	now := t.lake.now().UnixMilli()
	schemaID := schema.ID
	snaps := make([]table.Snapshot, len(pending))
	var lastFiles []iceberg.ManifestFile
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(stageConcurrency)
	for i, p := range pending {
		id := c.snapIDs[p.BatchID]
		seq := seq0 + int64(i) + 1
		var pid *int64
		if i == 0 {
			pid = parentID
		} else {
			prev := c.snapIDs[pending[i-1].BatchID]
			pid = &prev
		}
		var files []iceberg.ManifestFile
		if merge && i == last {
			if merged != nil {
				files = append(files, sequenced(merged, seq))
			}
		} else {
			for j := i; j >= 0; j-- {
				if mf := c.own[pending[j].BatchID]; mf != nil {
					files = append(files, sequenced(mf, seq0+int64(j)+1))
				}
			}
		}
		if i == last {
			files = append(files, kept...)
			lastFiles = files
		} else {
			files = append(files, baseManifests...)
		}
		summary := snapshotSummary(p, prevSummary)
		prevSummary = summary.Properties
		name := fmt.Sprintf("snap-%d-%d-%s.avro", id, attempt, c.commitID)
		snaps[i] = table.Snapshot{
			SnapshotID: id, ParentSnapshotID: pid, SequenceNumber: seq, TimestampMs: now,
			ManifestList: t.lake.tableLocation(t.name) + "/metadata/" + name,
			Summary:      summary, SchemaID: &schemaID,
		}
		refs := make([]string, 0, len(files))
		for _, f := range files {
			refs = append(refs, f.FilePath())
		}
		a.refs = append(a.refs, snaps[i].ManifestList)
		a.refs = append(a.refs, refs...)
		g.Go(func() error {
			var buf bytes.Buffer
			if err := iceberg.WriteManifestList(2, &buf, id, pid, &seq, 0, files); err != nil {
				return fmt.Errorf("manifest list of %s: %w", p.BatchID, err)
			}
			return t.putMetadataFile(gctx, c, name, buf.Bytes())
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	a.lastList = snaps[last].ManifestList
	a.lastManifests = lastFiles
	return snaps, nil
}

// sequenced returns mf with its sequence numbers assigned: seq, and seq as
// the minimum unless its entries carry an older one. A manifest list
// assigns them only to the manifests its own snapshot added; in the lists
// of later snapshots they must be explicit (Iceberg spec, "Sequence Number
// Inheritance").
func sequenced(mf iceberg.ManifestFile, seq int64) iceberg.ManifestFile {
	minSeq := mf.MinSequenceNum()
	if minSeq < 0 || minSeq > seq {
		minSeq = seq
	}
	return iceberg.NewManifestFile(mf.Version(), mf.FilePath(), mf.Length(), mf.PartitionSpecID(), mf.SnapshotID()).
		SequenceNum(seq, minSeq).
		Content(mf.ManifestContent()).
		AddedFiles(mf.AddedDataFiles()).ExistingFiles(mf.ExistingDataFiles()).DeletedFiles(mf.DeletedDataFiles()).
		AddedRows(mf.AddedRows()).ExistingRows(mf.ExistingRows()).DeletedRows(mf.DeletedRows()).
		Partitions(mf.Partitions()).
		KeyMetadata(mf.KeyMetadata()).
		Build()
}

// parentManifests returns the manifests of parent's manifest list: from
// memory when parent is the snapshot this Table committed last, else read
// from the store.
func (t *Table) parentManifests(ctx context.Context, parent *table.Snapshot) ([]iceberg.ManifestFile, error) {
	if t.lastList != "" && t.lastList == parent.ManifestList {
		return t.lastManifests, nil
	}
	fs, err := t.fsF(ctx)
	if err != nil {
		return nil, err
	}
	mfs, err := parent.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("read manifest list of snapshot %d: %w", parent.SnapshotID, err)
	}
	return mfs, nil
}

// writeMergedManifest writes the last snapshot's manifest: the commit's data
// files (the last batch's ADDED, the others EXISTING with their snapshot ids
// and sequence numbers seq0+1...) and the live entries of absorbed.
func (t *Table) writeMergedManifest(ctx context.Context, c *appendMutation, spec iceberg.PartitionSpec, schema *iceberg.Schema,
	pending []*Prepared, seq0 int64, absorbed []iceberg.ManifestFile,
) (iceberg.ManifestFile, error) {
	old := make([][]iceberg.ManifestEntry, len(absorbed))
	if len(absorbed) > 0 {
		fs, err := t.fsF(ctx)
		if err != nil {
			return nil, err
		}
		g, _ := errgroup.WithContext(ctx)
		g.SetLimit(stageConcurrency)
		for i, m := range absorbed {
			g.Go(func() (err error) {
				if old[i], err = manifestEntries(fs, m, true); err != nil {
					return fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
	}
	last := len(pending) - 1
	lastID := c.snapIDs[pending[last].BatchID]
	return t.writeManifest(ctx, c, spec, schema, lastID, func(w *iceberg.ManifestWriter) error {
		for _, df := range pending[last].files {
			if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &lastID, nil, nil, df)); err != nil {
				return err
			}
		}
		for i := last - 1; i >= 0; i-- {
			id, seq := c.snapIDs[pending[i].BatchID], seq0+int64(i)+1
			for _, df := range pending[i].files {
				if err := w.Existing(iceberg.NewManifestEntry(iceberg.EntryStatusEXISTING, &id, &seq, &seq, df)); err != nil {
					return err
				}
			}
		}
		for _, entries := range old {
			for _, e := range entries {
				if err := w.Existing(e); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// writeManifest encodes one data manifest (format v2) with the entries add
// writes and stores it under the table's metadata folder.
func (t *Table) writeManifest(ctx context.Context, c *appendMutation, spec iceberg.PartitionSpec, schema *iceberg.Schema,
	snapshotID int64, add func(*iceberg.ManifestWriter) error,
) (iceberg.ManifestFile, error) {
	name := fmt.Sprintf("%s-m%d.avro", c.commitID, c.manifestSeq.Add(1))
	mf, body, err := encodeManifest(spec, schema, snapshotID, t.lake.tableLocation(t.name)+"/metadata/"+name, add)
	if err != nil {
		return nil, err
	}
	if err := t.putMetadataFile(ctx, c, name, body); err != nil {
		return nil, err
	}
	return mf, nil
}

// encodeManifest encodes one data manifest (format v2) of snapshotID with
// the entries add writes, to be stored at location.
func encodeManifest(spec iceberg.PartitionSpec, schema *iceberg.Schema, snapshotID int64, location string,
	add func(*iceberg.ManifestWriter) error,
) (iceberg.ManifestFile, []byte, error) {
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(2, &buf, spec, schema, snapshotID)
	if err != nil {
		return nil, nil, fmt.Errorf("manifest: %w", err)
	}
	if err := add(w); err != nil {
		return nil, nil, fmt.Errorf("manifest: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, nil, fmt.Errorf("manifest: %w", err)
	}
	mf, err := w.ToManifestFile(location, int64(buf.Len()))
	if err != nil {
		return nil, nil, fmt.Errorf("manifest: %w", err)
	}
	return mf, buf.Bytes(), nil
}

// putMetadataFile stores body as metadata/<name> of the table and records
// it for cleanup if the commit does not use it.
func (t *Table) putMetadataFile(ctx context.Context, c *appendMutation, name string, body []byte) error {
	c.mu.Lock()
	c.written = append(c.written, t.lake.tableLocation(t.name)+"/metadata/"+name)
	c.mu.Unlock()
	return t.putFile(ctx, name, body)
}

// putFile stores body as metadata/<name> of the table.
func (t *Table) putFile(ctx context.Context, name string, body []byte) error {
	if _, err := t.lake.store.Put(ctx, metadataPrefix(t.name)+name, bytes.NewReader(body),
		storage.PutOptions{ContentType: "application/octet-stream"}); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// snapshotSummary is the summary of p's append snapshot: its properties
// (batch id, source facts), the added counts and the running totals carried
// from the parent's summary, and iceberg-go's environment context.
func snapshotSummary(p *Prepared, prev iceberg.Properties) *table.Summary {
	out := iceberg.Properties{}
	maps.Copy(out, p.summary)
	var records, size int64
	parts := map[string]bool{}
	for _, df := range p.files {
		records += df.Count()
		size += df.FileSizeBytes()
		parts[partitionKey(df.Partition())] = true
	}
	setPositive(out, summaryAddedFilesSize, size)
	setPositive(out, summaryAddedDataFiles, int64(len(p.files)))
	setPositive(out, summaryAddedRecords, records)
	if len(p.files) == 0 {
		// A batch without rows still carries the counters every append
		// snapshot has (docs/table-format.md, "Snapshots and batch ids").
		for _, k := range []string{summaryAddedFilesSize, summaryAddedDataFiles, summaryAddedRecords} {
			out[k] = "0"
		}
	}
	if len(parts) > 1 || (len(parts) == 1 && !parts[""]) {
		setPositive(out, summaryChangedParts, int64(len(parts)))
	}
	total := func(key string, added int64) {
		out[key] = strconv.FormatInt(prev.GetInt64(key, 0)+added, 10)
	}
	total(summaryTotalDataFiles, int64(len(p.files)))
	total(summaryTotalDeletes, 0)
	total(summaryTotalRecords, records)
	total(summaryTotalFilesSize, size)
	total(summaryTotalPosDels, 0)
	total(summaryTotalEqDels, 0)
	maps.Copy(out, iceberg.EnvironmentContext())
	return &table.Summary{Operation: table.OpAppend, Properties: out}
}

func setPositive(p iceberg.Properties, key string, v int64) {
	if v > 0 {
		p[key] = strconv.FormatInt(v, 10)
	}
}

// partitionKey is a stable text form of a data file's partition tuple.
func partitionKey(p map[int]any) string {
	if len(p) == 0 {
		return ""
	}
	ids := slices.Sorted(maps.Keys(p))
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%d=%v;", id, p[id])
	}
	return b.String()
}

// newSnapshotID returns a random positive snapshot id used by no snapshot of
// h and by none in taken (collisions are 1 in 2^63 per id: retried).
func newSnapshotID(h *head, taken map[string]int64) int64 {
	for {
		id := rand.Int64()
		if id == 0 || h.snapshotIDTaken(id) {
			continue
		}
		used := false
		for _, t := range taken {
			used = used || t == id
		}
		if !used {
			return id
		}
	}
}
