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
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/storage"
)

// The snapshots this lake writes itself (appends staged by Commit,
// compaction's replace, retention's delete) are written here: their
// manifests (ADDED, EXISTING and DELETED entries, in the table's format
// version, 1 or 2, encoded by iceberg-go), their manifest lists, their
// sequence numbers (none in format v1) and summaries.
// The operations plan what a snapshot adds and removes (snapshots.go,
// compact.go, retention.go) and check their conflicts; the snapshots are
// then spliced into the metadata (tablemeta.Indexed.WithSnapshots).

// Snapshot summary keys (Iceberg spec, "Snapshots": optional summary
// fields, as Java and iceberg-go write them).
const (
	summaryAddedDataFiles   = "added-data-files"
	summaryAddedRecords     = "added-records"
	summaryAddedFilesSize   = "added-files-size"
	summaryDeletedDataFiles = "deleted-data-files"
	summaryDeletedRecords   = "deleted-records"
	summaryRemovedFilesSize = "removed-files-size"
	summaryChangedParts     = "changed-partition-count"
	summaryTotalDataFiles   = "total-data-files"
	summaryTotalRecords     = "total-records"
	summaryTotalFilesSize   = "total-files-size"
	summaryTotalDeletes     = "total-delete-files"
	summaryTotalPosDels     = "total-position-deletes"
	summaryTotalEqDels      = "total-equality-deletes"
)

// snapshotProducer writes the snapshots of one commit of operation op, at
// every attempt of the commit protocol: manifests and manifest lists are
// named by the commit's id, and every file written is recorded (written)
// so that the mutation can delete those of the attempts that lost.
type snapshotProducer struct {
	t           *Table
	op          table.Operation
	commitID    uuid.UUID
	manifestSeq atomic.Int64
	mu          sync.Mutex // guards written
	written     []string   // every manifest and manifest list written, as URIs
}

// newAppendProducer is the producer of a Commit's append snapshots, one
// per batch (Table.stage).
func newAppendProducer(t *Table) *snapshotProducer { return newSnapshotProducer(t, table.OpAppend) }

// newReplaceProducer is the producer of a compaction's snapshot: data
// files added, the files they replace removed (snapshotProducer.rewrite).
func newReplaceProducer(t *Table) *snapshotProducer { return newSnapshotProducer(t, table.OpReplace) }

// newDeleteProducer is the producer of a snapshot that removes whole data
// files (retention; snapshotProducer.rewrite).
func newDeleteProducer(t *Table) *snapshotProducer { return newSnapshotProducer(t, table.OpDelete) }

func newSnapshotProducer(t *Table, op table.Operation) *snapshotProducer {
	return &snapshotProducer{t: t, op: op, commitID: uuid.New()}
}

// writtenFiles is every manifest and manifest list p wrote, at every
// attempt; none for a nil p.
func (p *snapshotProducer) writtenFiles() []string {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.written)
}

// addedFiles are data files a snapshot adds (ADDED entries) with one data
// sequence number: nil is the snapshot's own, inherited from the manifest
// list.
type addedFiles struct {
	files   []iceberg.DataFile
	dataSeq *int64
}

// existingFiles are data files an earlier snapshot snapshotID of the same
// commit added at sequence number seq, named again in a merged manifest
// (EXISTING entries).
type existingFiles struct {
	files      []iceberg.DataFile
	snapshotID int64
	seq        int64
}

// writeAddedManifest writes a manifest of snapshot snapshotID whose
// entries add the data files of added (all of partition spec spec), in
// order, with meta's format version and schema.
func (p *snapshotProducer) writeAddedManifest(ctx context.Context, meta table.Metadata, spec iceberg.PartitionSpec,
	snapshotID int64, added ...addedFiles,
) (iceberg.ManifestFile, error) {
	return p.writeManifest(ctx, meta, spec, snapshotID, func(w *iceberg.ManifestWriter) error {
		for _, a := range added {
			for _, df := range a.files {
				if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &snapshotID, a.dataSeq, nil, df)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// writeMergedManifest writes the manifest of snapshot snapshotID that
// merges: the data files it adds, those of existing (EXISTING with their
// snapshot ids and sequence numbers, in order), and the live entries of the
// manifests absorbed.
func (p *snapshotProducer) writeMergedManifest(ctx context.Context, meta table.Metadata,
	snapshotID int64, added []iceberg.DataFile, existing []existingFiles, absorbed []iceberg.ManifestFile,
) (iceberg.ManifestFile, error) {
	old := make([][]iceberg.ManifestEntry, len(absorbed))
	if len(absorbed) > 0 {
		fs, err := p.t.fsF(ctx)
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
	return p.writeManifest(ctx, meta, meta.PartitionSpec(), snapshotID, func(w *iceberg.ManifestWriter) error {
		for _, df := range added {
			if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &snapshotID, nil, nil, df)); err != nil {
				return err
			}
		}
		for _, e := range existing {
			for _, df := range e.files {
				if err := w.Existing(iceberg.NewManifestEntry(iceberg.EntryStatusEXISTING, &e.snapshotID, &e.seq, &e.seq, df)); err != nil {
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

// removedFiles counts the data files a snapshot marks deleted.
type removedFiles struct{ files, rows, bytes int64 }

// manifestsWithout returns mfs (of base's current snapshot) for a snapshot
// snapshotID at sequence number seq that removes the data files named in
// deleted: each data manifest naming one of them is written again with
// that entry DELETED and the others EXISTING, the other manifests are
// kept as they are. refs are the manifests it wrote.
func (p *snapshotProducer) manifestsWithout(ctx context.Context, fs icebergio.IO, base *tablemeta.Indexed, mfs []iceberg.ManifestFile, deleted map[string]bool,
	snapshotID, seq int64,
) (out []iceberg.ManifestFile, refs []string, rm removedFiles, err error) {
	for _, mf := range mfs {
		if mf.ManifestContent() != iceberg.ManifestContentData {
			out = append(out, mf)
			continue
		}
		entries, err := manifestEntries(fs, mf, true)
		if err != nil {
			return nil, nil, rm, fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
		}
		touched := false
		for _, e := range entries {
			touched = touched || deleted[e.DataFile().FilePath()]
		}
		if !touched {
			out = append(out, mf)
			continue
		}
		spec := base.Write().PartitionSpecByID(int(mf.PartitionSpecID()))
		if spec == nil {
			return nil, nil, rm, fmt.Errorf("manifest %s: the table has no partition spec %d", mf.FilePath(), mf.PartitionSpecID())
		}
		rewritten, err := p.writeManifest(ctx, base.Write(), *spec, snapshotID, func(w *iceberg.ManifestWriter) error {
			for _, e := range entries {
				if deleted[e.DataFile().FilePath()] {
					rm.files++
					rm.rows += e.DataFile().Count()
					rm.bytes += e.DataFile().FileSizeBytes()
					if err := w.Delete(e); err != nil {
						return err
					}
				} else if err := w.Existing(e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, rm, err
		}
		out = append(out, sequenced(rewritten, seq))
		refs = append(refs, rewritten.FilePath())
	}
	return out, refs, rm, nil
}

// fileChange is what a replace or delete snapshot does to the data files
// of its parent.
type fileChange struct {
	// op is the snapshot's operation; empty: the producer's.
	op      table.Operation
	added   []addedFiles
	deleted map[string]bool // paths of the data files removed
	// changedParts is the number of partitions changed
	// (changed-partition-count; 0 leaves it out).
	changedParts int64
	// props are the operation's own summary properties.
	props iceberg.Properties
}

// rewrite writes snapshot snapshotID of attempt, the child of base's
// current snapshot parent (whose manifests are mfs) at the next sequence
// number, that makes change: one manifest of the data files it adds,
// first, then mfs with the files it removes marked DELETED
// (manifestsWithout). It returns the snapshot and the files it wrote
// that the snapshot names (its manifests and manifest list).
func (p *snapshotProducer) rewrite(ctx context.Context, base *tablemeta.Indexed, parent *table.Snapshot, mfs []iceberg.ManifestFile,
	snapshotID int64, attempt int, change fileChange,
) (table.Snapshot, []string, error) {
	seq := base.SequenceAfter(1)
	fs, err := p.t.fsF(ctx)
	if err != nil {
		return table.Snapshot{}, nil, err
	}
	var refs []string
	manifests := make([]iceberg.ManifestFile, 0, len(mfs)+1)
	var added []iceberg.DataFile
	for _, a := range change.added {
		added = append(added, a.files...)
	}
	if len(change.added) > 0 {
		mf, err := p.writeAddedManifest(ctx, base.Write(), base.Write().PartitionSpec(), snapshotID, change.added...)
		if err != nil {
			return table.Snapshot{}, nil, err
		}
		manifests = append(manifests, sequenced(mf, seq))
		refs = append(refs, mf.FilePath())
	}
	kept, written, rm, err := p.manifestsWithout(ctx, fs, base, mfs, change.deleted, snapshotID, seq)
	if err != nil {
		return table.Snapshot{}, nil, err
	}
	manifests = append(manifests, kept...)
	refs = append(refs, written...)
	op := change.op
	if op == "" {
		op = p.op
	}
	summary := changeSummary(op, parent, added, rm, change.changedParts, change.props)
	name, list := p.listLocation(base.Write(), snapshotID, attempt)
	if err := p.writeList(ctx, base.Write(), name, snapshotID, &parent.SnapshotID, seq, manifests); err != nil {
		return table.Snapshot{}, nil, err
	}
	refs = append(refs, list)
	schemaID := base.Write().CurrentSchema().ID
	return table.Snapshot{SnapshotID: snapshotID, ParentSnapshotID: &parent.SnapshotID, SequenceNumber: seq,
		TimestampMs: p.t.lake.now().UnixMilli(), ManifestList: list, Summary: summary, SchemaID: &schemaID}, refs, nil
}

// listLocation is the name (under the table's metadata folder) and
// location (metadataFolder of meta) of the manifest list of snapshot
// snapshotID at attempt.
func (p *snapshotProducer) listLocation(meta table.Metadata, snapshotID int64, attempt int) (name, location string) {
	name = fmt.Sprintf("snap-%d-%d-%s.avro", snapshotID, attempt, p.commitID)
	folder, _ := p.t.metadataFolder(meta)
	return name, folder + "/" + name
}

// writeList writes the manifest list (meta's format version) of snapshot
// snapshotID (child of parent, nil for the first, at sequence number seq)
// naming manifests, as metadata/<name>.
func (p *snapshotProducer) writeList(ctx context.Context, meta table.Metadata, name string, snapshotID int64, parent *int64, seq int64,
	manifests []iceberg.ManifestFile,
) error {
	var buf bytes.Buffer
	if err := iceberg.WriteManifestList(meta.Version(), &buf, snapshotID, parent, &seq, 0, manifests); err != nil {
		return fmt.Errorf("manifest list of snapshot %d: %w", snapshotID, err)
	}
	return p.putMetadataFile(ctx, meta, name, buf.Bytes())
}

// metadataFolder is the URI of the table's metadata folder the snapshots'
// files are named under: <location>/metadata with meta's location when that
// is the table's folder (spelled as the lake does, or otherwise: a path for
// a file URI, s3a:// for s3://), else the lake's; ok reports the former.
func (t *Table) metadataFolder(meta table.Metadata) (folder string, ok bool) {
	own := t.lake.tableLocation(t.name)
	loc := strings.TrimSuffix(meta.Location(), "/")
	if loc == own {
		return own + "/metadata", true
	}
	if rel, err := t.lake.tableRel(t.name, loc+"/metadata/m"); err == nil && rel == "metadata/m" {
		return loc + "/metadata", true
	}
	return own + "/metadata", false
}

// writeManifest encodes one data manifest of snapshot snapshotID (meta's
// format version and schema, partition spec spec) with the entries add
// writes and stores it under the table's metadata folder.
func (p *snapshotProducer) writeManifest(ctx context.Context, meta table.Metadata, spec iceberg.PartitionSpec,
	snapshotID int64, add func(*iceberg.ManifestWriter) error,
) (iceberg.ManifestFile, error) {
	name := fmt.Sprintf("%s-m%d.avro", p.commitID, p.manifestSeq.Add(1))
	folder, _ := p.t.metadataFolder(meta)
	mf, body, err := encodeManifest(meta.Version(), spec, meta.CurrentSchema(), snapshotID, folder+"/"+name, add)
	if err != nil {
		return nil, err
	}
	if err := p.putMetadataFile(ctx, meta, name, body); err != nil {
		return nil, err
	}
	return mf, nil
}

// encodeManifest encodes one data manifest (format version version) of
// snapshotID with the entries add writes, to be stored at location.
func encodeManifest(version int, spec iceberg.PartitionSpec, schema *iceberg.Schema, snapshotID int64, location string,
	add func(*iceberg.ManifestWriter) error,
) (iceberg.ManifestFile, []byte, error) {
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(version, &buf, spec, schema, snapshotID)
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
// it (named under metadataFolder of meta) for cleanup if the commit does
// not use it.
func (p *snapshotProducer) putMetadataFile(ctx context.Context, meta table.Metadata, name string, body []byte) error {
	folder, _ := p.t.metadataFolder(meta)
	p.mu.Lock()
	p.written = append(p.written, folder+"/"+name)
	p.mu.Unlock()
	return p.t.putFile(ctx, name, body)
}

// putFile stores body as metadata/<name> of the table.
func (t *Table) putFile(ctx context.Context, name string, body []byte) error {
	if _, err := t.lake.store.Put(ctx, catalog.MetadataPrefix(t.name)+name, bytes.NewReader(body),
		storage.PutOptions{ContentType: "application/octet-stream"}); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
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

// appendSummary is the summary of an append snapshot of data files files:
// the batch's properties, the added counts and the running totals carried
// from the parent's summary prev, and iceberg-go's environment context.
func appendSummary(files []iceberg.DataFile, props map[string]string, prev iceberg.Properties) *table.Summary {
	out := iceberg.Properties{}
	maps.Copy(out, props)
	var records, size int64
	for _, df := range files {
		records += df.Count()
		size += df.FileSizeBytes()
	}
	setPositive(out, summaryAddedFilesSize, size)
	setPositive(out, summaryAddedDataFiles, int64(len(files)))
	setPositive(out, summaryAddedRecords, records)
	if len(files) == 0 {
		// A batch without rows still carries the counters every append
		// snapshot has (docs/table-format.md, "Snapshots and batch ids").
		for _, k := range []string{summaryAddedFilesSize, summaryAddedDataFiles, summaryAddedRecords} {
			out[k] = "0"
		}
	}
	setPositive(out, summaryChangedParts, changedPartitions(files))
	setTotals(out, prev, int64(len(files)), records, size)
	maps.Copy(out, iceberg.EnvironmentContext())
	return &table.Summary{Operation: table.OpAppend, Properties: out}
}

// changeSummary is the summary of a snapshot of operation op, the child of
// parent, that adds the data files added and removes rm's from
// changedParts partitions, with the operation's own properties props
// (Iceberg spec, "Snapshots": the operation and its counters).
func changeSummary(op table.Operation, parent *table.Snapshot, added []iceberg.DataFile, rm removedFiles, changedParts int64,
	props iceberg.Properties,
) *table.Summary {
	out := iceberg.Properties{}
	var records, size int64
	for _, df := range added {
		records += df.Count()
		size += df.FileSizeBytes()
	}
	setPositive(out, summaryAddedDataFiles, int64(len(added)))
	setPositive(out, summaryAddedRecords, records)
	setPositive(out, summaryAddedFilesSize, size)
	setPositive(out, summaryDeletedDataFiles, rm.files)
	setPositive(out, summaryDeletedRecords, rm.rows)
	setPositive(out, summaryRemovedFilesSize, rm.bytes)
	setPositive(out, summaryChangedParts, changedParts)
	var prev iceberg.Properties
	if parent.Summary != nil {
		prev = parent.Summary.Properties
	}
	setTotals(out, prev, int64(len(added))-rm.files, records-rm.rows, size-rm.bytes)
	maps.Copy(out, props)
	maps.Copy(out, iceberg.EnvironmentContext())
	return &table.Summary{Operation: op, Properties: out}
}

// changedPartitions is the number of partitions of files, 0 when they are
// all unpartitioned.
func changedPartitions(files []iceberg.DataFile) int64 {
	parts := map[string]bool{}
	for _, df := range files {
		parts[partitionKey(df.Partition())] = true
	}
	if len(parts) > 1 || (len(parts) == 1 && !parts[""]) {
		return int64(len(parts))
	}
	return 0
}

// setTotals sets the total counters of a snapshot's summary out: those of
// its parent's summary prev changed by the data files, records and bytes
// it added (less those it removed); no delete files.
func setTotals(out, prev iceberg.Properties, files, records, size int64) {
	total := func(key string, delta int64) {
		out[key] = strconv.FormatInt(prev.GetInt64(key, 0)+delta, 10)
	}
	total(summaryTotalDataFiles, files)
	total(summaryTotalDeletes, 0)
	total(summaryTotalRecords, records)
	total(summaryTotalFilesSize, size)
	total(summaryTotalPosDels, 0)
	total(summaryTotalEqDels, 0)
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
func newSnapshotID(h *tablemeta.Indexed, taken map[string]int64) int64 {
	for {
		id := rand.Int64()
		if id == 0 || h.SnapshotIDTaken(id) {
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
