package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/tablename"
)

// Files is the catalog-free catalog: the versions of a table are the
// files <table>/metadata/vN.metadata.json of the warehouse's store, the
// newest is found by listing (never by the version hint), and a version is
// created with a conditional create.
type Files struct {
	wh       Warehouse
	versions Versions

	mu sync.Mutex
	// listed holds the vN.metadata.json numbers the newest listing of each
	// table found, for dropOldVersions.
	listed map[Name][]int
	// probes holds, on a local folder, the newest version each table's
	// last listing or probe found (latestVersion).
	probes map[Name]*versionProbe
}

var _ Catalog = (*Files)(nil)

// NewFiles returns the metadata-file catalog of warehouse wh.
func NewFiles(wh Warehouse) *Files { return &Files{wh: wh} }

// TablePrefix is the store prefix of table n's folder.
func TablePrefix(n Name) string { return n.Namespace + "/" + n.Name + "/" }

// MetadataPrefix is the store prefix of table n's metadata folder.
func MetadataPrefix(n Name) string { return TablePrefix(n) + "metadata/" }

// MetadataKey is the store key of vN.metadata.json.
func MetadataKey(n Name, version int) string {
	return MetadataPrefix(n) + "v" + strconv.Itoa(version) + ".metadata.json"
}

// ParseVersion returns N for "vN.metadata.json", or false.
func ParseVersion(base string) (int, bool) {
	if !strings.HasPrefix(base, "v") || !strings.HasSuffix(base, ".metadata.json") {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(base, "v"), ".metadata.json"))
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// VersionOfLocation returns N of a metadata file URI as catalogs name
// them: vN.metadata.json, vN-<uuid>.metadata.json (SeaweedFS after a name
// collision) or 0000N-<uuid>.metadata.json (Iceberg Java); 0 for another
// name.
func VersionOfLocation(uri string) int {
	base := path.Base(uri)
	if v, ok := ParseVersion(base); ok {
		return v
	}
	stem, ok := strings.CutSuffix(base, ".metadata.json")
	if !ok {
		return 0
	}
	stem, _, _ = strings.Cut(stem, "-")
	n, err := strconv.Atoi(strings.TrimPrefix(stem, "v"))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// latestVersion lists metadata/ and returns the highest N (0 if none). The
// listing, not the version hint, is the truth (docs/table-format.md, "Layout").
// On a local folder it probes instead, most of the time (probeLatest).
func (c *Files) latestVersion(ctx context.Context, n Name) (int, error) {
	if v, ok, err := c.probeLatest(ctx, n); err != nil || ok {
		return v, err
	}
	latest := 0
	canonical := true // every version named as MetadataKey names it
	var seen []int
	err := c.wh.Store.List(ctx, MetadataPrefix(n)+"v", func(o storage.ObjectInfo) error {
		if v, ok := ParseVersion(strings.TrimPrefix(o.Key, MetadataPrefix(n))); ok {
			latest = max(latest, v)
			seen = append(seen, v)
			canonical = canonical && o.Key == MetadataKey(n, v)
		}
		return nil
	})
	if errors.Is(err, storage.ErrNotExist) {
		return 0, nil // a warehouse folder not created yet: no table
	}
	if err != nil {
		return 0, fmt.Errorf("list metadata of %s: %w", n, err)
	}
	c.mu.Lock()
	if c.listed == nil {
		c.listed = map[Name][]int{}
	}
	c.listed[n] = seen
	if _, local := c.wh.Store.(*storage.LocalStore); local && canonical && latest > 0 {
		if c.probes == nil {
			c.probes = map[Name]*versionProbe{}
		}
		c.probes[n] = &versionProbe{newest: latest}
	} else {
		delete(c.probes, n)
	}
	c.mu.Unlock()
	return latest, nil
}

// versionProbe is what probeLatest knows of a table's versions.
type versionProbe struct {
	newest int // the newest version found
	probes int // probes since the last listing
}

// probeResync is how many probes latestVersion makes before it lists the
// folder again.
const probeResync = 50

// probeLatest finds the newest version of a table in a local folder from
// the newest one found before, without listing metadata/: a folder can
// only be listed whole, and a long run keeps thousands of manifests in it
// (a listing per commit cost most of such a run's time,
// docs/performance.md "A long run"). A commit creates version N+1 of N
// with an exclusive create and old versions are deleted from the oldest
// up, so when version k exists and k+1 and k+2 do not, k is the newest.
// ok is false (list instead) on an object store, when no listing found
// the table's versions named as MetadataKey names them, when the version
// found before is gone (deleted as old: another writer went far ahead),
// and every probeResync probes.
func (c *Files) probeLatest(ctx context.Context, n Name) (newest int, ok bool, err error) {
	c.mu.Lock()
	p := c.probes[n]
	if p == nil || p.probes >= probeResync {
		c.mu.Unlock()
		return 0, false, nil
	}
	p.probes++
	k := p.newest
	c.mu.Unlock()
	exists := func(v int) (bool, error) {
		_, err := c.wh.Store.Stat(ctx, MetadataKey(n, v))
		if errors.Is(err, storage.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	}
	if ok, err := exists(k); err != nil || !ok {
		return 0, false, err
	}
	var found []int
	for {
		next, err := exists(k + 1)
		if err != nil {
			return 0, false, err
		}
		if !next {
			if beyond, err := exists(k + 2); err != nil || beyond {
				return 0, false, err // a gap: the listing judges
			}
			break
		}
		k++
		found = append(found, k)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.probes[n] == p {
		p.newest = max(p.newest, k)
	}
	if c.listed == nil {
		c.listed = map[Name][]int{}
	}
	c.listed[n] = append(c.listed[n], found...)
	return k, true, nil
}

// listedBelow returns the versions of n the newest listing found below v
// and forgets them.
func (c *Files) listedBelow(n Name, v int) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var below, rest []int
	for _, x := range c.listed[n] {
		if x < v {
			below = append(below, x)
		} else {
			rest = append(rest, x)
		}
	}
	c.listed[n] = rest
	return below
}

// readVersion reads vN.metadata.json and parses it with parse.
func (c *Files) readVersion(ctx context.Context, n Name, version int, parse func([]byte) (*tablemeta.Indexed, error)) (*tablemeta.Indexed, error) {
	return c.wh.ReadMetadataFile(ctx, n, c.wh.MetadataLocation(n, version), parse)
}

// ReadMetadataFile reads the metadata file at uri, a file of table n's
// metadata folder (a version the metadata-log names, one a catalog
// committed), and parses it with parse. A URI outside that folder is
// refused: it comes from a table's metadata, which is not trusted.
func (w Warehouse) ReadMetadataFile(ctx context.Context, n Name, uri string, parse func([]byte) (*tablemeta.Indexed, error)) (*tablemeta.Indexed, error) {
	name, ok := strings.CutPrefix(uri, w.TableLocation(n)+"/metadata/")
	if !ok || name == "" || strings.Contains(name, "/") || !strings.HasSuffix(name, ".metadata.json") {
		return nil, fmt.Errorf("read metadata of %s: %s is not a metadata file of the table's folder %s/metadata/", n, uri, w.TableLocation(n))
	}
	key := MetadataPrefix(n) + name
	b, _, err := storage.ReadAll(ctx, w.Store, key)
	if err != nil {
		return nil, fmt.Errorf("read metadata of %s: %w", n, err)
	}
	h, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", key, err)
	}
	return h, nil
}

func (c *Files) Latest(ctx context.Context, n Name, parse func([]byte) (*tablemeta.Indexed, error)) (*tablemeta.Indexed, VersionRef, error) {
	for range 5 {
		v, err := c.latestVersion(ctx, n)
		if err != nil {
			return nil, VersionRef{}, err
		}
		if v == 0 {
			return nil, VersionRef{}, fmt.Errorf("%s in %s: %w", n, c.wh.Loc, ErrTableNotFound)
		}
		ref := VersionRef{N: v, Location: c.wh.MetadataLocation(n, v)}
		if h := c.versions.Cached(n, ref); h != nil {
			return h, ref, nil
		}
		h, err := c.readVersion(ctx, n, v, parse)
		if err == nil {
			c.versions.Remember(n, ref, h)
		}
		if errors.Is(err, storage.ErrNotExist) {
			continue // removed between list and read (metadata cleanup): list again
		}
		return h, ref, err
	}
	return nil, VersionRef{}, fmt.Errorf("load %s: metadata kept changing while reading", n)
}

// Commit creates version N+1 of the base (at w.BaseRef, version N) with
// the metadata the change makes of it, after checking that N is still the
// newest: old versions are deleted after commits, and a create into the
// slot of one would succeed (verifyNewest).
func (c *Files) Commit(ctx context.Context, n Name, w *Write) (Version, string, error) {
	bv := w.BaseRef
	next, body, err := w.Base.Apply(w.Change, bv.Location)
	if err != nil {
		return Version{}, "", fmt.Errorf("%s: %w: %w", n, tablemeta.ErrInvalidChange, err)
	}
	w.Next, w.Body = next, body
	if newest, err := c.latestVersion(ctx, n); err != nil {
		return Version{}, "", err
	} else if newest != bv.N {
		return Version{}, "", fmt.Errorf("v%d was created by another writer: %w", bv.N+1, ErrRaceLost)
	}
	v := bv.N + 1
	if err := c.put(ctx, n, v, body); err != nil {
		return Version{}, "", err
	}
	switch verdict, err := c.verifyNewest(ctx, n, v, next, body); verdict {
	case verdictCommitted:
		ref := VersionRef{N: v, Location: c.wh.MetadataLocation(n, v)}
		c.versions.Remember(n, ref, next)
		return Version{Meta: next, Ref: ref}, bv.Location, nil
	case verdictUnknown:
		return Version{}, "", fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	// A slot of a deleted old version: nobody builds on it.
	return Version{}, "", fmt.Errorf("v%d was written after newer versions: %w", v, ErrRaceLost)
}

// put is the conditional create of version v.
func (c *Files) put(ctx context.Context, n Name, v int, body []byte) error {
	_, err := c.wh.Store.Put(ctx, MetadataKey(n, v), bytes.NewReader(body),
		storage.PutOptions{IfAbsent: true, ContentType: "application/json"})
	if errors.Is(err, storage.ErrPreconditionFailed) {
		return fmt.Errorf("v%d.metadata.json of %s: %w", v, n, ErrVersionTaken)
	}
	return err
}

// Landed: a write at a version up to the newest one landed if that
// version holds exactly its body (the SDK's retry of a conditional PUT
// that succeeded reads 412), and is part of the history (verifyNewest); a
// write above the newest version may still land (a delayed request). A
// version that no longer holds the body is judged by the newest version
// (landedGone): the write may have landed and its file been deleted since.
func (c *Files) Landed(ctx context.Context, n Name, newest *tablemeta.Indexed, nv VersionRef, w Write) (*Version, bool, error) {
	v := w.BaseRef.N + 1
	if v > nv.N {
		return nil, false, nil
	}
	ok, err := c.holds(ctx, n, v, w.Body)
	if err != nil {
		return nil, false, fmt.Errorf("read v%d of %s to learn a commit's outcome: %w", v, n, err)
	}
	if !ok {
		return c.landedGone(ctx, n, newest, nv, v, w)
	}
	switch verdict, err := c.verifyNewest(ctx, n, v, w.Next, w.Body); verdict {
	case verdictCommitted:
		return &Version{Meta: w.Next, Ref: VersionRef{N: v, Location: c.wh.MetadataLocation(n, v)}}, true, nil
	case verdictUnknown:
		return nil, false, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	return nil, true, nil
}

// landedGone tells whether w landed although version v, at or below the
// newest version (newest, at nv), does not hold its body. A missing v does
// not mean that w's create failed: once w's version landed, other writers
// may commit more than write.metadata.previous-versions-max versions
// before this writer looks again, and the one whose metadata-log no longer
// names v deletes it as an old version (dropOldVersions); v may also hold
// a version written into the slot after that. Whether w is part of the history is then read from
// the newest version: a change that adds snapshots landed if the newest
// version has them with their manifest lists (Change.HeldBy; their ids
// and lists are this attempt's own), and otherwise never will (a version
// that landed after newer ones, in the slot of a deleted old version, is
// never built on: verifyNewest). A change that only edits the metadata
// cannot be told from another writer's equal edit: with v missing its
// outcome stays unknown (not final, its files kept); a v holding another
// body is another writer's create, which made w's fail.
func (c *Files) landedGone(ctx context.Context, n Name, newest *tablemeta.Indexed, nv VersionRef, v int, w Write) (*Version, bool, error) {
	if w.Change.AddsSnapshots() {
		if newest != nil && w.Change.HeldBy(newest, w.Base) {
			return &Version{Meta: newest, Ref: nv}, true, nil
		}
		return nil, true, nil
	}
	_, err := c.wh.Store.Stat(ctx, MetadataKey(n, v))
	switch {
	case err == nil:
		return nil, true, nil
	case errors.Is(err, storage.ErrNotExist):
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("stat v%d of %s to learn a commit's outcome: %w", v, n, err)
}

// holds reports whether version v of table n exists with exactly body;
// false, nil when v does not exist or holds another body.
func (c *Files) holds(ctx context.Context, n Name, v int, body []byte) (bool, error) {
	return storage.HoldsBody(ctx, c.wh.Store, MetadataKey(n, v), body)
}

// verdict is what verifyNewest learnt of a version this commit wrote.
type verdict int

const (
	verdictCommitted verdict = iota // the newest version, or the base of the next one
	verdictZombie                   // written into the slot of a deleted old version: not in the history
	verdictUnknown
)

// verifyNewest checks that version v, which this commit wrote (next, body),
// is part of the table's history. Old versions are deleted after commits
// (write.metadata.delete-after-commit.enabled), so a writer that stalled
// between reading version v-1 and creating v can create v after v and
// newer ones existed and v was deleted: the conditional create succeeds,
// but readers take the highest version and never see it. v is in the
// history if it is the newest version listed, or if version v+1 was built
// on it (its metadata-log's last entry is v's file with v's
// last-updated-ms, and it still has v's current snapshot). A version that
// is neither is deleted again (verdictZombie): nobody builds on a version
// that is not the newest. verdictUnknown when v+1 cannot be read (error
// returned).
func (c *Files) verifyNewest(ctx context.Context, n Name, v int, next *tablemeta.Indexed, body []byte) (verdict, error) {
	newest, err := c.latestVersion(ctx, n)
	if err != nil {
		return verdictUnknown, err
	}
	if newest <= v {
		return verdictCommitted, nil
	}
	succ, err := c.readVersion(ctx, n, v+1, tablemeta.Index)
	if err != nil {
		return verdictUnknown, fmt.Errorf("read v%d to confirm v%d: %w", v+1, v, err)
	}
	var log []table.MetadataLogEntry
	if err := unmarshalOptional(succ.Get("metadata-log"), &log); err != nil {
		return verdictUnknown, err
	}
	builtOn := len(log) > 0 && log[len(log)-1].MetadataFile == c.wh.MetadataLocation(n, v) &&
		log[len(log)-1].TimestampMs == next.LastUpdated()
	if builtOn && next.Current() >= 0 {
		builtOn = succ.SnapshotIDTaken(next.Snaps()[next.Current()].ID)
	}
	if builtOn {
		return verdictCommitted, nil
	}
	if ok, err := c.holds(ctx, n, v, body); err == nil && ok {
		if err := c.wh.Store.Delete(ctx, MetadataKey(n, v)); err != nil {
			c.wh.Log.Warn("a metadata version written after newer ones was not deleted", "table", n.String(), "version", v, "err", err)
		}
	}
	return verdictZombie, nil
}

// Create writes v1.metadata.json with a conditional create.
func (c *Files) Create(ctx context.Context, n Name, _ table.Metadata, body []byte) (Version, error) {
	if v, err := c.latestVersion(ctx, n); err != nil {
		return Version{}, err
	} else if v > 0 {
		return Version{}, fmt.Errorf("create %s: %w", n, ErrTableExists)
	}
	if err := c.put(ctx, n, 1, body); err != nil {
		if errors.Is(err, ErrVersionTaken) {
			return Version{}, fmt.Errorf("create %s: %w", n, ErrTableExists)
		}
		return Version{}, fmt.Errorf("create %s: %w", n, err)
	}
	c.writeVersionHint(ctx, n, 1)
	h, ref, err := c.Latest(ctx, n, tablemeta.Parse)
	return Version{Meta: h, Ref: ref}, err
}

// Tables lists <ns>/<table> folders that hold a metadata/v*.metadata.json.
func (c *Files) Tables(ctx context.Context) ([]Name, error) {
	seen := map[Name]bool{}
	err := c.wh.Store.List(ctx, "", func(o storage.ObjectInfo) error {
		parts := strings.Split(o.Key, "/")
		if len(parts) == 4 && parts[2] == "metadata" {
			if _, ok := ParseVersion(parts[3]); ok {
				if n, err := tablename.Parse(parts[0] + "." + parts[1]); err == nil {
					seen[n] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sortedNames(seen), nil
}

// writeVersionHint writes metadata/version-hint.text holding N, the Iceberg
// convention that DuckDB, Spark's Hadoop tables and icebird read first. It
// only moves forward: the hint is replaced with a compare-and-swap on its
// ETag (a conditional create when there is none) and left alone when it
// names version N or a newer one, so two writers racing never leave it on
// an older version than one of them committed. Best effort: readers that
// list confirm it, and this writer never reads it for its own commits.
func (c *Files) writeVersionHint(ctx context.Context, n Name, version int) {
	key := MetadataPrefix(n) + VersionHintName
	for range 5 {
		b, info, err := storage.ReadAll(ctx, c.wh.Store, key)
		missing := errors.Is(err, storage.ErrNotExist)
		if err != nil && !missing {
			c.wh.Log.Warn("version hint not read (readers fall back to listing)", "table", n.String(), "version", version, "err", err)
			return
		}
		if cur, perr := strconv.Atoi(strings.TrimSpace(string(b))); !missing && perr == nil && cur >= version {
			return // a newer writer's hint, or ours already
		}
		opts := storage.PutOptions{ContentType: "text/plain", IfAbsent: missing}
		if !missing {
			opts.IfMatch = info.ETag
		}
		_, err = c.wh.Store.Put(ctx, key, strings.NewReader(strconv.Itoa(version)), opts)
		if errors.Is(err, storage.ErrPreconditionFailed) {
			continue // another writer moved it meanwhile: look again
		}
		if err != nil {
			c.wh.Log.Warn("version hint not written (readers fall back to listing)", "table", n.String(), "version", version, "err", err)
		}
		return
	}
	c.wh.Log.Warn("version hint not written: it kept changing (readers fall back to listing)", "table", n.String(), "version", version)
}

// Committed writes the version hint and deletes the versions older than
// every one the metadata-log names (dropOldVersions).
func (c *Files) Committed(ctx context.Context, n Name, meta *tablemeta.Indexed, v VersionRef) {
	c.writeVersionHint(ctx, n, v.N)
	c.dropOldVersions(ctx, n, meta)
}

// dropOldVersions deletes the vN.metadata.json files of n older than every
// one the metadata-log of meta, its newest version, names, when the table
// sets write.metadata.delete-after-commit.enabled (Iceberg's table
// property; timelake sets it on the tables it creates): each version holds
// the whole snapshot history, so keeping them all would store that history
// once per commit. The versions come from the listing of the commit's last
// attempt. Best effort: a failure is logged, and the next commit tries
// again.
func (c *Files) dropOldVersions(ctx context.Context, n Name, meta *tablemeta.Indexed) {
	if !meta.Props().GetBool(table.MetadataDeleteAfterCommitEnabledKey, table.MetadataDeleteAfterCommitEnabledDefault) {
		return
	}
	var entries []table.MetadataLogEntry
	if err := unmarshalOptional(meta.Get("metadata-log"), &entries); err != nil || len(entries) == 0 {
		return
	}
	oldest := 0
	for _, e := range entries {
		v, ok := ParseVersion(path.Base(e.MetadataFile))
		if !ok {
			return // a file name of another scheme: leave the files alone
		}
		if oldest == 0 || v < oldest {
			oldest = v
		}
	}
	var keys []string
	for _, v := range c.listedBelow(n, oldest) {
		keys = append(keys, MetadataKey(n, v))
	}
	if _, err := storage.DeleteKeys(ctx, c.wh.Store, keys); err != nil {
		c.wh.Log.Warn("old metadata versions not all deleted", "table", n.String(), "err", err)
	}
}

// VersionHintName is the version hint's file in a table's metadata folder.
const VersionHintName = "version-hint.text"

func (*Files) Hinted() bool { return true }

// OwnFolder: the catalog-free tables keep timelake's files next to their
// metadata (docs/table-format.md, "Layout").
func (*Files) OwnFolder() string { return "metadata/" }
