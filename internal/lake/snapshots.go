package lake

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/timelake/timelake/internal/lake/tablemeta"
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

// canStage reports why Commit cannot write the snapshots of ps (stage):
// it writes them on format-version 1 and 2 tables whose location is the
// folder this lake gives them (metadataFolder), of data files only. Format
// v3 asks for row ids (row lineage: first-row-id of manifests and data
// files, next-row-id), which neither stage nor Prepare assign; a table
// stored elsewhere cannot be reached (ErrOutsideTable).
func (t *Table) canStage(h *tablemeta.Indexed, ps []*Prepared) error {
	meta := h.Write()
	if v := meta.Version(); v != 1 && v != 2 {
		return fmt.Errorf("table %s: appends to format-version %d tables are not supported (row lineage)", t.name, v)
	}
	if _, ok := t.metadataFolder(meta); !ok {
		return fmt.Errorf("table %s: %w: its location %s is not %s", t.name, ErrOutsideTable, meta.Location(), t.lake.tableLocation(t.name))
	}
	for _, p := range ps {
		for _, df := range p.files {
			if df.ContentType() != iceberg.EntryContentData {
				return fmt.Errorf("batch %s: %s is not a data file", p.BatchID, df.FilePath())
			}
		}
	}
	return nil
}

// currentSpecOnly reports whether every data file of ps was written with
// the default partition spec of h.
func currentSpecOnly(h *tablemeta.Indexed, ps []*Prepared) bool {
	spec := int32(h.Write().DefaultPartitionSpec())
	for _, p := range ps {
		for _, df := range p.files {
			if df.SpecID() != spec {
				return false
			}
		}
	}
	return true
}

// ownKey names the manifest of a batch's data files of one partition spec.
type ownKey struct {
	batch string
	spec  int32
}

// filesBySpec groups files by the partition spec they were written with;
// specs are the spec ids in ascending order.
func filesBySpec(files []iceberg.DataFile) (specs []int32, by map[int32][]iceberg.DataFile) {
	by = map[int32][]iceberg.DataFile{}
	for _, df := range files {
		if _, ok := by[df.SpecID()]; !ok {
			specs = append(specs, df.SpecID())
		}
		by[df.SpecID()] = append(by[df.SpecID()], df)
	}
	slices.Sort(specs)
	return specs, by
}

// stage writes the snapshots of the pending batches (in order, each the
// parent of the next, on top of the main branch of meta) and returns the
// snapshots to commit in one metadata write (tablemeta.Indexed.WithSnapshots).
//
// Per batch it writes one manifest of its data files per partition spec
// they were written with (ADDED entries; once per Commit, reused by later
// attempts, since snapshot ids stay fixed for the whole Commit) and one
// manifest list naming those manifests, those of the batches before it and
// the parent's manifests: every snapshot is a complete, readable table
// state (Iceberg spec, "Snapshots" and "Manifest Lists"). All these writes
// are independent and run concurrently. When the table enables manifest
// merging (commit.manifest-merge.enabled), the last snapshot names one
// merged manifest instead: the commit's entries of the default partition
// spec (the earlier batches' as EXISTING with their snapshot ids and
// sequence numbers; those of other specs keep their own manifests), plus
// the parent's small manifests once there are
// commit.manifest.min-count-to-merge of them (entries below
// commit.manifest.target-size-bytes), so the newest snapshot names few
// manifests however many commits came before.
//
// Errors: I/O errors writing or reading manifests; nothing is committed.
func (t *Table) stage(ctx context.Context, c *appendMutation, a *appendAttempt, h *tablemeta.Indexed, pending []*Prepared, attempt int) ([]table.Snapshot, error) {
	meta := h.Write()
	spec := meta.PartitionSpec()
	props := meta.Properties()
	merge := props.GetBool(table.ManifestMergeEnabledKey, table.ManifestMergeEnabledDefault)

	parent, err := h.CurrentSnapshot()
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
		c.own = map[ownKey]iceberg.ManifestFile{}
		c.producer = newAppendProducer(t)
	}
	for id, mf := range c.own {
		if mf.Version() != meta.Version() {
			delete(c.own, id) // the table's format was upgraded since
		}
	}
	for _, p := range pending {
		if _, ok := c.snapIDs[p.BatchID]; !ok {
			c.snapIDs[p.BatchID] = newSnapshotID(h, c.snapIDs)
			c.ours[c.snapIDs[p.BatchID]] = true
		}
	}
	last := len(pending) - 1

	// The batches' own manifests, one per partition spec (all but the
	// last one's of the default spec when merging).
	cur := int32(spec.ID())
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(stageConcurrency)
	type ownFiles struct {
		key   ownKey
		files []iceberg.DataFile
	}
	var own []ownFiles
	current := make([][]iceberg.DataFile, len(pending)) // each batch's files of the default spec
	for i, p := range pending {
		specs, by := filesBySpec(p.files)
		current[i] = by[cur]
		for _, sp := range specs {
			k := ownKey{p.BatchID, sp}
			if _, ok := c.own[k]; ok || (merge && i == last && sp == cur) {
				continue
			}
			own = append(own, ownFiles{k, by[sp]})
		}
	}
	written := make([]iceberg.ManifestFile, len(own))
	for i, o := range own {
		g.Go(func() error {
			ps := meta.PartitionSpecByID(int(o.key.spec))
			if ps == nil {
				return fmt.Errorf("batch %s: data files of partition spec %d, which the table does not have", o.key.batch, o.key.spec)
			}
			mf, err := c.producer.writeAddedManifest(gctx, meta, *ps, c.snapIDs[o.key.batch], addedFiles{files: o.files})
			written[i] = mf
			return err
		})
	}
	// The last snapshot's merged manifest, and the parent's manifests it
	// replaces.
	var merged iceberg.ManifestFile
	kept := baseManifests
	if merge {
		// The parent's small manifests are merged once there are
		// min-count-to-merge of them with the commit's: the large ones do
		// not count, or every commit would merge once there are enough of
		// them.
		var absorbed, large []iceberg.ManifestFile
		target := min(int64(props.GetInt(table.ManifestTargetSizeBytesKey, table.ManifestTargetSizeBytesDefault)), mergeAbsorbLimit)
		for _, m := range baseManifests {
			if m.ManifestContent() == iceberg.ManifestContentData && m.PartitionSpecID() == int32(spec.ID()) && m.Length() < target {
				absorbed = append(absorbed, m)
			} else {
				large = append(large, m)
			}
		}
		if len(absorbed)+1 >= props.GetInt(table.ManifestMinMergeCountKey, table.ManifestMinMergeCountDefault) {
			kept = large
		} else {
			absorbed = nil
		}
		entries := len(absorbed)
		for _, files := range current {
			entries += len(files)
		}
		if entries > 0 { // a commit of batches without rows adds no manifest
			lastID := c.snapIDs[pending[last].BatchID]
			var existing []existingFiles
			for i := last - 1; i >= 0; i-- {
				existing = append(existing, existingFiles{files: current[i],
					snapshotID: c.snapIDs[pending[i].BatchID], seq: h.SequenceAfter(i + 1)})
			}
			g.Go(func() (err error) {
				merged, err = c.producer.writeMergedManifest(gctx, meta, lastID, current[last], existing, absorbed)
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, o := range own {
		c.own[o.key] = written[i]
	}
	// ownOf is the own manifests of batch j, without the one of the default
	// spec when the merged manifest holds its files.
	ownOf := func(j int, merged bool) []iceberg.ManifestFile {
		var out []iceberg.ManifestFile
		specs, _ := filesBySpec(pending[j].files)
		for _, sp := range specs {
			if mf := c.own[ownKey{pending[j].BatchID, sp}]; mf != nil && !(merged && sp == cur) {
				out = append(out, sequenced(mf, h.SequenceAfter(j+1)))
			}
		}
		return out
	}

	// One manifest list per snapshot, newest manifests first.
	now := t.lake.now().UnixMilli()
	schemaID := meta.CurrentSchema().ID
	snaps := make([]table.Snapshot, len(pending))
	var lastFiles []iceberg.ManifestFile
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(stageConcurrency)
	for i, p := range pending {
		id := c.snapIDs[p.BatchID]
		seq := h.SequenceAfter(i + 1)
		var pid *int64
		if i == 0 {
			pid = parentID
		} else {
			prev := c.snapIDs[pending[i-1].BatchID]
			pid = &prev
		}
		var files []iceberg.ManifestFile
		mergedHere := merge && i == last
		if mergedHere && merged != nil {
			files = append(files, sequenced(merged, seq))
		}
		for j := i; j >= 0; j-- {
			files = append(files, ownOf(j, mergedHere)...)
		}
		if i == last {
			files = append(files, kept...)
			lastFiles = files
		} else {
			files = append(files, baseManifests...)
		}
		summary := appendSummary(p.files, p.summary, prevSummary)
		prevSummary = summary.Properties
		name, list := c.producer.listLocation(meta, id, attempt)
		snaps[i] = table.Snapshot{
			SnapshotID: id, ParentSnapshotID: pid, SequenceNumber: seq, TimestampMs: now,
			ManifestList: list, Summary: summary, SchemaID: &schemaID,
		}
		refs := make([]string, 0, len(files))
		for _, f := range files {
			refs = append(refs, f.FilePath())
		}
		a.refs = append(a.refs, snaps[i].ManifestList)
		a.refs = append(a.refs, refs...)
		g.Go(func() error {
			return c.producer.writeList(gctx, meta, name, id, pid, seq, files)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	a.lastList = snaps[last].ManifestList
	a.lastManifests = lastFiles
	return snaps, nil
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
