package lake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/storage"
)

// catalog is where a table's versions live and how the next one is
// committed: what the commit protocol (commit.go) needs, and nothing of
// the mutations (append, expire, rollback, rewrite, alter), which build
// the next version's metadata the same way for every catalog.
//
// There are two (docs/catalogs.md):
//   - metadataFiles, the catalog-free one: each version is
//     metadata/vN.metadata.json on the lake's store, created with a
//     conditional create (docs/table-format.md, "Commit protocol");
//   - restCatalog (catalog_rest.go), an Iceberg REST catalog: the newest
//     version is what loadTable returns, and the next one is committed with
//     updateTable, as the requirements and updates that turn base into
//     next (Iceberg REST spec, "CommitTableRequest").
type catalog interface {
	// latest returns the newest version of table n, parsed by parse
	// (tablemeta.Parse validates it whole; tablemeta.Index only indexes it), and
	// where it is. ErrTableNotFound when the table has no version.
	latest(ctx context.Context, n TableName, parse func([]byte) (*tablemeta.Indexed, error)) (*tablemeta.Indexed, versionRef, error)
	// commit makes the version w.change makes of w.base (at w.bv) the
	// newest version of n, on the condition that nothing the mutation
	// checked on the base changed meanwhile: the file catalog applies the
	// change to the base (tablemeta.Indexed.Apply; it records the version it wrote in
	// w.next and w.body), a REST catalog sends its updates and
	// requirements. It returns the committed version as the catalog holds
	// it, and the location of the version the change was applied to: the
	// base's, or with a REST catalog a newer one whose changes the
	// requirements let through.
	//
	// Errors: errRaceLost when another writer committed first and this
	// commit did not land; errOutcomeUnknown when it landed but cannot be
	// confirmed (the commit ends); a permanent error (isPermanent: nothing
	// was written); any other error leaves the outcome unknown (the
	// commit may have landed: the next attempt asks landed).
	commit(ctx context.Context, n TableName, w *attemptWrite) (committedVersion, string, error)
	// landed tells whether w, a commit of an earlier attempt whose outcome
	// was not learnt, is part of the history of newest (at nv): the
	// version the Table then holds, or nil. final reports that a w that
	// did not land never will (its files may go).
	landed(ctx context.Context, n TableName, newest *tablemeta.Indexed, nv versionRef, w attemptWrite) (hold *committedVersion, final bool, err error)
	// create makes meta (body: its encoding) the first version of table
	// n. ErrTableExists when the table exists.
	create(ctx context.Context, n TableName, meta table.Metadata, body []byte) (committedVersion, error)
	// tables lists the tables of the warehouse, sorted by name.
	tables(ctx context.Context) ([]TableName, error)
	// committed does the catalog's chores after a commit of version v of
	// t (best effort: the version hint, old versions).
	committed(ctx context.Context, t *Table, v versionRef)
	// hinted reports whether the catalog keeps metadata/version-hint.text
	// (for readers that find tables by path).
	hinted() bool
	// ownFolder is the folder of a table, relative to its location,
	// where timelake keeps its own files (the load history segments and
	// the maintenance state), with a trailing slash.
	ownFolder() string
}

// versionRef names one version of a table's metadata: N of
// vN.metadata.json (0 when the catalog names its files otherwise) and the
// URI of its metadata file.
type versionRef struct {
	n        int
	location string
}

// committedVersion is a version of a table and where it is.
type committedVersion struct {
	meta *tablemeta.Indexed
	ref  versionRef
}

// errVersionTaken is returned by the metadata-file catalog's conditional
// create when the version exists (S3 412 PreconditionFailed or 409
// ConditionalRequestConflict on If-None-Match: *; an existing file on
// disk): another writer's, or ours when the SDK retried a create that
// landed.
var errVersionTaken = errors.New("version already exists")

// errRaceLost is returned by catalog.commit when another writer committed
// first and this commit is known not to have landed (a REST catalog's 409
// CommitFailedException).
var errRaceLost = errors.New("another writer committed first")

// metadataFiles is the catalog-free catalog: the versions of a table are
// the files <table>/metadata/vN.metadata.json of the lake's store, the
// newest is found by listing (never by the version hint), and a version is
// created with a conditional create.
type metadataFiles struct{ l *Lake }

var _ catalog = metadataFiles{}

// tablePrefix is the store prefix of table n's folder.
func tablePrefix(n TableName) string { return n.Namespace + "/" + n.Name + "/" }

func metadataPrefix(n TableName) string { return tablePrefix(n) + "metadata/" }

// metadataKey is the store key of vN.metadata.json.
func metadataKey(n TableName, version int) string {
	return metadataPrefix(n) + "v" + strconv.Itoa(version) + ".metadata.json"
}

// parseVersion returns N for "vN.metadata.json", or false.
func parseVersion(base string) (int, bool) {
	if !strings.HasPrefix(base, "v") || !strings.HasSuffix(base, ".metadata.json") {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(base, "v"), ".metadata.json"))
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// versionOfLocation returns N of a metadata file URI as catalogs name
// them: vN.metadata.json, vN-<uuid>.metadata.json (SeaweedFS after a name
// collision) or 0000N-<uuid>.metadata.json (Iceberg Java); 0 for another
// name.
func versionOfLocation(uri string) int {
	base := path.Base(uri)
	if v, ok := parseVersion(base); ok {
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
func (l *Lake) latestVersion(ctx context.Context, n TableName) (int, error) {
	if v, ok, err := l.probeLatest(ctx, n); err != nil || ok {
		return v, err
	}
	latest := 0
	canonical := true // every version named as metadataKey names it
	var seen []int
	err := l.store.List(ctx, metadataPrefix(n)+"v", func(o storage.ObjectInfo) error {
		if v, ok := parseVersion(strings.TrimPrefix(o.Key, metadataPrefix(n))); ok {
			latest = max(latest, v)
			seen = append(seen, v)
			canonical = canonical && o.Key == metadataKey(n, v)
		}
		return nil
	})
	if errors.Is(err, storage.ErrNotExist) {
		return 0, nil // a warehouse folder not created yet: no table
	}
	if err != nil {
		return 0, fmt.Errorf("list metadata of %s: %w", n, err)
	}
	l.mu.Lock()
	if l.listed == nil {
		l.listed = map[TableName][]int{}
	}
	l.listed[n] = seen
	if _, local := l.store.(*storage.LocalStore); local && canonical && latest > 0 {
		if l.probes == nil {
			l.probes = map[TableName]*versionProbe{}
		}
		l.probes[n] = &versionProbe{newest: latest}
	} else {
		delete(l.probes, n)
	}
	l.mu.Unlock()
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
// the table's versions named as metadataKey names them, when the version
// found before is gone (deleted as old: another writer went far ahead),
// and every probeResync probes.
func (l *Lake) probeLatest(ctx context.Context, n TableName) (newest int, ok bool, err error) {
	l.mu.Lock()
	p := l.probes[n]
	if p == nil || p.probes >= probeResync {
		l.mu.Unlock()
		return 0, false, nil
	}
	p.probes++
	k := p.newest
	l.mu.Unlock()
	exists := func(v int) (bool, error) {
		_, err := l.store.Stat(ctx, metadataKey(n, v))
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
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.probes[n] == p {
		p.newest = max(p.newest, k)
	}
	if l.listed == nil {
		l.listed = map[TableName][]int{}
	}
	l.listed[n] = append(l.listed[n], found...)
	return k, true, nil
}

// listedBelow returns the versions of n the newest listing found below v
// and forgets them.
func (l *Lake) listedBelow(n TableName, v int) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var below, rest []int
	for _, x := range l.listed[n] {
		if x < v {
			below = append(below, x)
		} else {
			rest = append(rest, x)
		}
	}
	l.listed[n] = rest
	return below
}

// readVersion reads vN.metadata.json and parses it with parse.
func (l *Lake) readVersion(ctx context.Context, n TableName, version int, parse func([]byte) (*tablemeta.Indexed, error)) (*tablemeta.Indexed, error) {
	return l.readMetadataFile(ctx, n, l.metadataLocation(n, version), parse)
}

// readMetadataFile reads the metadata file at uri, a file of table n's
// metadata folder (a version the metadata-log names, one a catalog
// committed), and parses it with parse. A URI outside that folder is
// refused: it comes from a table's metadata, which is not trusted.
func (l *Lake) readMetadataFile(ctx context.Context, n TableName, uri string, parse func([]byte) (*tablemeta.Indexed, error)) (*tablemeta.Indexed, error) {
	name, ok := strings.CutPrefix(uri, l.tableLocation(n)+"/metadata/")
	if !ok || name == "" || strings.Contains(name, "/") || !strings.HasSuffix(name, ".metadata.json") {
		return nil, fmt.Errorf("read metadata of %s: %s is not a metadata file of the table's folder %s/metadata/", n, uri, l.tableLocation(n))
	}
	key := metadataPrefix(n) + name
	b, _, err := storage.ReadAll(ctx, l.store, key)
	if err != nil {
		return nil, fmt.Errorf("read metadata of %s: %w", n, err)
	}
	h, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", key, err)
	}
	return h, nil
}

func (c metadataFiles) latest(ctx context.Context, n TableName, parse func([]byte) (*tablemeta.Indexed, error)) (*tablemeta.Indexed, versionRef, error) {
	l := c.l
	for range 5 {
		v, err := l.latestVersion(ctx, n)
		if err != nil {
			return nil, versionRef{}, err
		}
		if v == 0 {
			return nil, versionRef{}, fmt.Errorf("%s in %s: %w", n, l.URI(), ErrTableNotFound)
		}
		ref := versionRef{n: v, location: l.metadataLocation(n, v)}
		if h := l.cached(n, ref); h != nil {
			return h, ref, nil
		}
		h, err := l.readVersion(ctx, n, v, parse)
		if err == nil {
			l.remember(n, ref, h)
		}
		if errors.Is(err, storage.ErrNotExist) {
			continue // removed between list and read (metadata cleanup): list again
		}
		return h, ref, err
	}
	return nil, versionRef{}, fmt.Errorf("load %s: metadata kept changing while reading", n)
}

// commit creates version bv.n+1 with the metadata the change makes of the
// base, after checking that bv is still the newest: old versions are
// deleted after commits, and a create into the slot of one would succeed
// (verifyNewest).
func (c metadataFiles) commit(ctx context.Context, n TableName, w *attemptWrite) (committedVersion, string, error) {
	l, bv := c.l, w.bv
	next, body, err := w.base.Apply(w.change, bv.location)
	if err != nil {
		return committedVersion{}, "", fmt.Errorf("%s: %w: %w", n, tablemeta.ErrInvalidChange, err)
	}
	w.next, w.body = next, body
	if newest, err := l.latestVersion(ctx, n); err != nil {
		return committedVersion{}, "", err
	} else if newest != bv.n {
		return committedVersion{}, "", fmt.Errorf("v%d was created by another writer: %w", bv.n+1, errRaceLost)
	}
	v := bv.n + 1
	if err := c.put(ctx, n, v, body); err != nil {
		return committedVersion{}, "", err
	}
	switch verdict, err := c.verifyNewest(ctx, n, v, next, body); verdict {
	case verdictCommitted:
		ref := versionRef{n: v, location: l.metadataLocation(n, v)}
		l.remember(n, ref, next)
		return committedVersion{meta: next, ref: ref}, bv.location, nil
	case verdictUnknown:
		return committedVersion{}, "", fmt.Errorf("%w: %w", errOutcomeUnknown, err)
	}
	// A slot of a deleted old version: nobody builds on it.
	return committedVersion{}, "", fmt.Errorf("v%d was written after newer versions: %w", v, errRaceLost)
}

// put is the conditional create of version v.
func (c metadataFiles) put(ctx context.Context, n TableName, v int, body []byte) error {
	_, err := c.l.store.Put(ctx, metadataKey(n, v), bytes.NewReader(body),
		storage.PutOptions{IfAbsent: true, ContentType: "application/json"})
	if errors.Is(err, storage.ErrPreconditionFailed) {
		return fmt.Errorf("v%d.metadata.json of %s: %w", v, n, errVersionTaken)
	}
	return err
}

// landed: a write at a version up to the newest one landed if that
// version holds exactly its body (the SDK's retry of a conditional PUT
// that succeeded reads 412), and is part of the history (verifyNewest); a
// write above the newest version may still land (a delayed request).
func (c metadataFiles) landed(ctx context.Context, n TableName, _ *tablemeta.Indexed, nv versionRef, w attemptWrite) (*committedVersion, bool, error) {
	v := w.bv.n + 1
	if v > nv.n {
		return nil, false, nil
	}
	ok, err := c.holds(ctx, n, v, w.body)
	if err != nil {
		return nil, false, fmt.Errorf("read v%d of %s to learn a commit's outcome: %w", v, n, err)
	}
	if !ok {
		return nil, true, nil
	}
	switch verdict, err := c.verifyNewest(ctx, n, v, w.next, w.body); verdict {
	case verdictCommitted:
		return &committedVersion{meta: w.next, ref: versionRef{n: v, location: c.l.metadataLocation(n, v)}}, true, nil
	case verdictUnknown:
		return nil, false, fmt.Errorf("%w: %w", errOutcomeUnknown, err)
	}
	return nil, true, nil
}

// holds reports whether version v of table n exists with exactly body;
// false, nil when v does not exist or holds another body.
func (c metadataFiles) holds(ctx context.Context, n TableName, v int, body []byte) (bool, error) {
	return holdsBody(ctx, c.l.store, metadataKey(n, v), body)
}

// holdsBody reports whether key holds exactly body: how a write recognises
// its own object after a lost response (the SDK's retry of a conditional
// create that succeeded reads 412); false, nil when key does not exist or
// holds another object.
func holdsBody(ctx context.Context, store storage.Store, key string, body []byte) (bool, error) {
	got, _, err := storage.ReadAll(ctx, store, key)
	if errors.Is(err, storage.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return bytes.Equal(got, body), nil
}

// createOwn is a conditional create of key holding body that recognises its
// own write: a 412 whose key holds exactly body is the request's own
// object, written before its response was lost. Only another object under
// key is storage.ErrPreconditionFailed.
func createOwn(ctx context.Context, store storage.Store, key string, body []byte, opts storage.PutOptions) error {
	opts.IfAbsent = true
	_, err := store.Put(ctx, key, bytes.NewReader(body), opts)
	if !errors.Is(err, storage.ErrPreconditionFailed) {
		return err
	}
	own, rerr := holdsBody(ctx, store, key, body)
	if rerr != nil {
		return fmt.Errorf("%w; read it back: %w", err, rerr)
	}
	if own {
		return nil
	}
	return err
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
func (c metadataFiles) verifyNewest(ctx context.Context, n TableName, v int, next *tablemeta.Indexed, body []byte) (verdict, error) {
	l := c.l
	newest, err := l.latestVersion(ctx, n)
	if err != nil {
		return verdictUnknown, err
	}
	if newest <= v {
		return verdictCommitted, nil
	}
	succ, err := l.readVersion(ctx, n, v+1, tablemeta.Index)
	if err != nil {
		return verdictUnknown, fmt.Errorf("read v%d to confirm v%d: %w", v+1, v, err)
	}
	var log []table.MetadataLogEntry
	if err := unmarshalOptional(succ.Get("metadata-log"), &log); err != nil {
		return verdictUnknown, err
	}
	builtOn := len(log) > 0 && log[len(log)-1].MetadataFile == l.metadataLocation(n, v) &&
		log[len(log)-1].TimestampMs == next.LastUpdated()
	if builtOn && next.Current() >= 0 {
		builtOn = succ.SnapshotIDTaken(next.Snaps()[next.Current()].ID)
	}
	if builtOn {
		return verdictCommitted, nil
	}
	if ok, err := c.holds(ctx, n, v, body); err == nil && ok {
		if err := l.store.Delete(ctx, metadataKey(n, v)); err != nil {
			l.log.Warn("a metadata version written after newer ones was not deleted", "table", n.String(), "version", v, "err", err)
		}
	}
	return verdictZombie, nil
}

// create writes v1.metadata.json with a conditional create.
func (c metadataFiles) create(ctx context.Context, n TableName, _ table.Metadata, body []byte) (committedVersion, error) {
	l := c.l
	if v, err := l.latestVersion(ctx, n); err != nil {
		return committedVersion{}, err
	} else if v > 0 {
		return committedVersion{}, fmt.Errorf("create %s: %w", n, ErrTableExists)
	}
	if err := c.put(ctx, n, 1, body); err != nil {
		if errors.Is(err, errVersionTaken) {
			return committedVersion{}, fmt.Errorf("create %s: %w", n, ErrTableExists)
		}
		return committedVersion{}, fmt.Errorf("create %s: %w", n, err)
	}
	l.writeVersionHint(ctx, n, 1)
	h, ref, err := c.latest(ctx, n, tablemeta.Parse)
	return committedVersion{meta: h, ref: ref}, err
}

// tables lists <ns>/<table> folders that hold a metadata/v*.metadata.json.
func (c metadataFiles) tables(ctx context.Context) ([]TableName, error) {
	seen := map[TableName]bool{}
	err := c.l.store.List(ctx, "", func(o storage.ObjectInfo) error {
		parts := strings.Split(o.Key, "/")
		if len(parts) == 4 && parts[2] == "metadata" {
			if _, ok := parseVersion(parts[3]); ok {
				if n, err := ParseTableName(parts[0] + "." + parts[1]); err == nil {
					seen[n] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sortedTableNames(seen), nil
}

// committed writes the version hint and deletes the versions older than
// every one the metadata-log names (dropOldVersions).
func (c metadataFiles) committed(ctx context.Context, t *Table, v versionRef) {
	c.l.writeVersionHint(ctx, t.name, v.n)
	t.dropOldVersions(ctx)
	t.dropHeadCache(ctx)
}

func (metadataFiles) hinted() bool { return true }

// ownFolder: the catalog-free tables keep timelake's files next to their
// metadata (docs/table-format.md, "Layout").
func (metadataFiles) ownFolder() string { return "metadata/" }
