package lake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/lake/maintenance"
	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/settings/quantity"
	"github.com/timelake/timelake/internal/storage"
)

// OrphanOptions tune RemoveOrphans.
type OrphanOptions struct {
	// MinAge: only files last modified more than MinAge before now are
	// deleted; 0 uses timelake.orphan-min-age (DefaultOrphanMinAge).
	MinAge time.Duration
	// DryRun lists the orphans and deletes nothing.
	DryRun bool
}

// OrphanResult is what RemoveOrphans found (maintenance.OrphanResult).
type OrphanResult = maintenance.OrphanResult

// RemoveOrphans deletes the files in the table's data/ and metadata/
// folders that nothing references and that are older than MinAge (Iceberg's
// remove_orphan_files): data files and manifests of runs killed before
// their commit, files of commits whose outcome stayed unknown, half-written
// files of a full disk, load history segments merged away, metadata
// versions older than the metadata-log. Referenced are: the manifest lists,
// manifests and live data files of every snapshot of the current version,
// the current version and those its metadata-log names, the load history
// and outcome log segments they name, and the version hint. Files outside data/ and
// metadata/ are never touched.
//
// The orphans are deleted in batches (storage.DeleteKeys: S3 DeleteObjects
// of up to 1,000 keys). Errors: listing or reading metadata (nothing is
// deleted then), and the deletes that failed or that ctx cut: the result
// then lists the files deleted, and Left counts the orphans found and not
// deleted, which the next look finds again.
func (t *Table) RemoveOrphans(ctx context.Context, opts OrphanOptions) (OrphanResult, error) {
	if err := t.Refresh(ctx); err != nil {
		return OrphanResult{}, err
	}
	h, v := t.loaded()
	minAge := opts.MinAge
	if minAge <= 0 {
		minAge = DefaultOrphanMinAge
		if d, err := quantity.ParseAge(h.Props()[PropOrphanMinAge]); err == nil && d > 0 {
			minAge = d
		}
	}
	ref, err := t.referencedFiles(ctx, h, v)
	for tries := 0; isNotExist(err) && tries < 3; tries++ {
		// A file the version names is gone: another round of maintenance
		// expired its snapshot and deleted it since the version was read.
		// The newest version no longer names it; a version that still
		// does after a refresh is a real failure.
		if rerr := t.Refresh(ctx); rerr != nil {
			return OrphanResult{}, rerr
		}
		nh, nv := t.loaded()
		if nv == v {
			break
		}
		h, v = nh, nv
		ref, err = t.referencedFiles(ctx, h, v)
	}
	if err != nil {
		return OrphanResult{}, fmt.Errorf("remove orphan files of %s: %w", t.name, err)
	}
	cutoff := t.lake.now().Add(-minAge)
	prefix := catalog.TablePrefix(t.name)
	var res OrphanResult
	var keys []string
	var sizes []int64
	own := t.lake.cat.OwnFolder()
	for _, dir := range t.orphanFolders() {
		err := t.lake.store.List(ctx, prefix+dir, func(o storage.ObjectInfo) error {
			rel := strings.TrimPrefix(o.Key, prefix)
			if ref[rel] || protectedMetadata(rel, v, own) {
				return nil
			}
			if !o.LastModified.Before(cutoff) {
				res.Young++
				return nil
			}
			res.Files = append(res.Files, rel)
			res.Bytes += o.Size
			keys = append(keys, o.Key)
			sizes = append(sizes, o.Size)
			return nil
		})
		if err != nil && !isStoreNotExist(err) {
			return OrphanResult{}, fmt.Errorf("remove orphan files of %s: list %s: %w", t.name, dir, err)
		}
	}
	// A local warehouse also holds the temporary files of writes killed
	// midway (storage.LocalStore.StaleTemp), which no listing shows.
	if st, ok := t.lake.store.(interface {
		StaleTemp(ctx context.Context, prefix string, before time.Time, dryRun bool) ([]storage.ObjectInfo, error)
	}); ok {
		for _, dir := range t.orphanFolders() {
			tmp, err := st.StaleTemp(ctx, prefix+dir, cutoff, opts.DryRun)
			for _, o := range tmp {
				res.Files = append(res.Files, strings.TrimPrefix(o.Key, prefix))
				res.Bytes += o.Size
			}
			if err != nil {
				return res, fmt.Errorf("remove orphan files of %s: %w", t.name, err)
			}
		}
	}
	if opts.DryRun {
		return res, nil
	}
	done, err := storage.DeleteKeys(ctx, t.lake.store, keys)
	if err != nil {
		// Files[:len(keys)] are the listed orphans, in the order of keys;
		// those not deleted leave the result.
		kept := res.Files[:0]
		for i, f := range res.Files {
			if i >= len(keys) || done[i] {
				kept = append(kept, f)
				continue
			}
			res.Bytes -= sizes[i]
			res.Left++
		}
		res.Files = kept
		return res, fmt.Errorf("remove orphan files of %s: %w", t.name, err)
	}
	return res, nil
}

func isStoreNotExist(err error) bool { return errors.Is(err, storage.ErrNotExist) }

// orphanFolders are the folders of the table orphan file removal looks
// in: data/, metadata/ and the folder of timelake's own files.
func (t *Table) orphanFolders() []string {
	dirs := []string{"data/", "metadata/"}
	if own := t.lake.cat.OwnFolder(); !slices.Contains(dirs, own) {
		dirs = append(dirs, own)
	}
	return dirs
}

// protectedMetadata reports the metadata files never removed as orphans
// whatever their age: versions from the newest one v on (a commit may
// have just created one; every metadata file when v's name has no number),
// the version hint, Timelake's head cache (dropped by commits themselves)
// and the maintenance state (in own, the folder of timelake's files).
func protectedMetadata(rel string, v versionRef, own string) bool {
	if strings.HasPrefix(rel, "metadata/") && strings.HasSuffix(rel, ".metadata.json") {
		return v.N == 0 || catalog.VersionOfLocation(rel) == 0 || catalog.VersionOfLocation(rel) >= v.N
	}
	return rel == "metadata/"+versionHintName || rel == "metadata/timelake-head" || rel == own+maintenanceStateName
}

// referencedFiles returns the files of the table's folder that version v
// (h) references, relative to the table location.
func (t *Table) referencedFiles(ctx context.Context, h *tablemeta.Indexed, v versionRef) (map[string]bool, error) {
	loc := t.lake.tableLocation(t.name) + "/"
	rel := func(uri string) string { return strings.TrimPrefix(uri, loc) }
	own := t.lake.cat.OwnFolder()
	ref := map[string]bool{rel(v.Location): true}
	var mu sync.Mutex
	add := func(uri string) {
		mu.Lock()
		ref[rel(uri)] = true
		mu.Unlock()
	}
	// The versions the metadata-log names, and the load history segments
	// of each of them.
	var entries []table.MetadataLogEntry
	if err := unmarshalOptional(h.Get("metadata-log"), &entries); err != nil {
		return nil, fmt.Errorf("metadata-log: %w", err)
	}
	for _, s := range slices.Concat(historySegments(h.Props()), outcomeLog.segments(h.Props())) {
		ref[own+s.Name] = true
	}
	for _, e := range entries {
		ref[rel(e.MetadataFile)] = true
		if !strings.HasPrefix(e.MetadataFile, loc+"metadata/") {
			continue // not a file of this table's folder
		}
		old, err := t.lake.warehouse().ReadMetadataFile(ctx, t.name, e.MetadataFile, tablemeta.Index)
		if isStoreNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, s := range slices.Concat(historySegments(old.Props()), outcomeLog.segments(old.Props())) {
			ref[own+s.Name] = true
		}
	}
	// Every snapshot's manifest list, manifests and live data files.
	fs, err := t.fsF(ctx)
	if err != nil {
		return nil, err
	}
	var lists []string
	for i := range h.Snaps() {
		s, err := h.Snapshot(i)
		if err != nil {
			return nil, err
		}
		lists = append(lists, s.ManifestList)
		ref[rel(s.ManifestList)] = true
	}
	manifests := map[string]iceberg.ManifestFile{}
	lg, _ := errgroup.WithContext(ctx)
	lg.SetLimit(stageConcurrency)
	for _, list := range lists {
		lg.Go(func() error {
			s := table.Snapshot{ManifestList: list}
			mfs, err := s.Manifests(fs)
			if err != nil {
				return fmt.Errorf("read manifest list %s: %w", list, err)
			}
			mu.Lock()
			for _, mf := range mfs {
				manifests[mf.FilePath()] = mf
			}
			mu.Unlock()
			return nil
		})
	}
	if err := lg.Wait(); err != nil {
		return nil, err
	}
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(stageConcurrency)
	for _, p := range slices.Sorted(maps.Keys(manifests)) {
		mf := manifests[p]
		add(p)
		g.Go(func() error {
			err := eachManifestEntry(fs, mf, true, func(e iceberg.ManifestEntry) error {
				add(e.DataFile().FilePath())
				return nil
			})
			if err != nil {
				return fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
			}
			return nil
		})
	}
	return ref, g.Wait()
}
