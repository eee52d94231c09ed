package lake

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"
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
		c.producer = newAppendProducer(t)
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
			mf, err := c.producer.writeAddedManifest(gctx, spec, schema, c.snapIDs[p.BatchID], addedFiles{files: p.files})
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
		for _, p := range pending {
			entries += len(p.files)
		}
		if entries > 0 { // a commit of batches without rows adds no manifest
			lastID := c.snapIDs[pending[last].BatchID]
			var existing []existingFiles
			for i := last - 1; i >= 0; i-- {
				existing = append(existing, existingFiles{files: pending[i].files,
					snapshotID: c.snapIDs[pending[i].BatchID], seq: seq0 + int64(i) + 1})
			}
			g.Go(func() (err error) {
				merged, err = c.producer.writeMergedManifest(gctx, spec, schema, lastID, pending[last].files, existing, absorbed)
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
		summary := appendSummary(p.files, p.summary, prevSummary)
		prevSummary = summary.Properties
		name, list := c.producer.listLocation(id, attempt)
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
			return c.producer.writeList(gctx, name, id, pid, seq, files)
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
