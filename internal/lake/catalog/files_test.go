package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/storage"
)

// TestProbeLatestVersion: on a local folder the newest version is found by
// probing from the one found before, and is the one a listing finds:
// after another writer's commits, after old versions were deleted under
// the version found before, and across a gap, where it lists again.
func TestProbeLatestVersion(t *testing.T) {
	ctx := context.Background()
	wh := localWarehouse(t)
	st := wh.Store
	n := Name{Namespace: "ns", Name: "probed"}
	put := func(v int) {
		t.Helper()
		if _, err := st.Put(ctx, MetadataKey(n, v), bytes.NewReader([]byte("{}")), storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mine := NewFiles(wh)
	listed := func() int {
		t.Helper()
		v, err := NewFiles(wh).latestVersion(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	check := func(what string, wantProbe bool) {
		t.Helper()
		before := 0
		if p := mine.probes[n]; p != nil {
			before = p.probes
		}
		got, err := mine.latestVersion(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if want := listed(); got != want {
			t.Fatalf("%s: newest version %d, a listing finds %d", what, got, want)
		}
		probed := mine.probes[n] != nil && mine.probes[n].probes > before
		if probed != wantProbe {
			t.Errorf("%s: probed %v, want %v", what, probed, wantProbe)
		}
	}
	// My commits: the first look lists, the next ones probe.
	for v := 1; v <= 3; v++ {
		put(v)
	}
	check("the first look", false)
	check("after my commits", true)

	// Another writer commits three versions.
	for v := 4; v <= 6; v++ {
		put(v)
	}
	check("after another writer's commits", true)

	// The version found before deleted (another writer went far ahead):
	// listed again.
	newest := listed()
	if err := st.Delete(ctx, MetadataKey(n, newest)); err != nil {
		t.Fatal(err)
	}
	put(newest + 1)
	check("the version found before deleted", false)
	// A gap above the version found: listed again.
	put(newest + 3)
	check("a gap", false)
	check("after the listing", true)
}

// TestFilesCommit: the metadata-file catalog creates a table's first
// version once, commits a change built on the newest version as the next
// one, refuses one built on an older version (ErrRaceLost), recognises a
// write that landed, writes the version hint and deletes the versions the
// metadata-log no longer names; no table handle involved.
func TestFilesCommit(t *testing.T) {
	ctx := context.Background()
	ft := newFilesTable(t)
	wh, f, n, v1 := ft.wh, ft.f, ft.n, ft.v1
	if v1.Ref.N != 1 || v1.Ref.Location != wh.MetadataLocation(n, 1) {
		t.Fatalf("created %+v, want v1 at %s", v1.Ref, wh.MetadataLocation(n, 1))
	}
	if _, err := f.Create(ctx, n, ft.meta, ft.body); !errors.Is(err, ErrTableExists) {
		t.Fatalf("second create: %v, want ErrTableExists", err)
	}

	commit := func(base Version, value string) (*Write, Version, error) {
		t.Helper()
		w := &Write{BaseRef: base.Ref, Base: base.Meta,
			Change: tablemeta.ChangeProperties(base.Meta.Props(), map[string]string{"k": value}, nil, time.Now().UnixMilli())}
		got, applied, err := f.Commit(ctx, n, w)
		if err == nil && applied != base.Ref.Location {
			t.Errorf("applied to %s, want the base %s", applied, base.Ref.Location)
		}
		return w, got, err
	}
	w2, v2, err := commit(v1, "2")
	if err != nil {
		t.Fatal(err)
	}
	if v2.Ref.N != 2 || v2.Meta.Props()["k"] != "2" || w2.Next == nil || w2.Body == nil {
		t.Fatalf("committed %+v (k=%q), write recorded %v", v2.Ref, v2.Meta.Props()["k"], w2.Next != nil)
	}
	f.Committed(ctx, n, v2.Meta, v2.Ref)
	if b, _, err := storage.ReadAll(ctx, wh.Store, MetadataPrefix(n)+VersionHintName); err != nil || string(b) != "2" {
		t.Errorf("version hint %q, %v; want 2", b, err)
	}
	if _, _, err := commit(v1, "stale"); !errors.Is(err, ErrRaceLost) {
		t.Fatalf("commit on v1 after v2: %v, want ErrRaceLost", err)
	}
	if hold, final, err := f.Landed(ctx, n, v2.Meta, v2.Ref, *w2); err != nil || hold == nil || hold.Ref.N != 2 || !final {
		t.Fatalf("landed: %v, %v, %v; want v2", hold, final, err)
	}
	newest, ref, err := f.Latest(ctx, n, tablemeta.Parse)
	if err != nil || ref.N != 2 || newest.Props()["k"] != "2" {
		t.Fatalf("latest %+v, %v", ref, err)
	}

	// v3's metadata-log names v2 only: v1 goes.
	_, v3, err := commit(v2, "3")
	if err != nil {
		t.Fatal(err)
	}
	f.Committed(ctx, n, v3.Meta, v3.Ref)
	if _, err := wh.Store.Stat(ctx, MetadataKey(n, 1)); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("v1 after v3 was committed: %v, want it deleted", err)
	}
	if _, err := wh.Store.Stat(ctx, MetadataKey(n, 2)); err != nil {
		t.Errorf("v2 after v3 was committed: %v, want it kept", err)
	}
	names, err := f.Tables(ctx)
	if err != nil || len(names) != 1 || names[0] != n {
		t.Errorf("tables %v, %v; want [%s]", names, err, n)
	}
}

// TestFilesLandedAfterVersionDeleted: a commit whose response was lost
// is recognised as landed when other writers have since committed enough
// versions that its vN.metadata.json was deleted as an old version: its
// snapshot is in the newest version. A create that never landed is still
// known not to have, and an edit of the metadata whose version was
// deleted stays unknown (it may have landed: its files must be kept).
func TestFilesLandedAfterVersionDeleted(t *testing.T) {
	ctx := context.Background()
	ft := newFilesTable(t)
	wh, f, n, v1 := ft.wh, ft.f, ft.n, ft.v1
	appendOn := func(base Version, id int64) *Write {
		snap := table.Snapshot{SnapshotID: id, SequenceNumber: base.Meta.SequenceAfter(1), TimestampMs: time.Now().UnixMilli(),
			ManifestList: wh.TableLocation(n) + "/metadata/snap-" + strconv.FormatInt(id, 10) + ".avro",
			Summary:      &table.Summary{Operation: table.OpAppend}}
		return &Write{BaseRef: base.Ref, Base: base.Meta, Change: tablemeta.AddSnapshots(nil, snap)}
	}
	setOn := func(base Version, value string) *Write {
		return &Write{BaseRef: base.Ref, Base: base.Meta,
			Change: tablemeta.ChangeProperties(base.Meta.Props(), map[string]string{"k": value}, nil, time.Now().UnixMilli())}
	}
	commit := func(w *Write) Version {
		t.Helper()
		v, _, err := f.Commit(ctx, n, w)
		if err != nil {
			t.Fatal(err)
		}
		f.Committed(ctx, n, v.Meta, v.Ref)
		return v
	}
	gone := func(v int) {
		t.Helper()
		if _, err := wh.Store.Stat(ctx, MetadataKey(n, v)); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("v%d: %v, want it deleted as an old version", v, err)
		}
	}
	landed := func(w *Write) (*Version, bool, VersionRef) {
		t.Helper()
		newest, ref, err := f.Latest(ctx, n, tablemeta.Parse)
		if err != nil {
			t.Fatal(err)
		}
		hold, final, err := f.Landed(ctx, n, newest, ref, *w)
		if err != nil {
			t.Fatal(err)
		}
		return hold, final, ref
	}

	// An append whose create of v2 landed (its response lost), then two
	// commits of other writers: the second deletes v2.
	w2 := appendOn(v1, 101)
	v2 := commit(w2)
	commit(setOn(commit(setOn(v2, "3")), "4"))
	gone(2)
	if hold, final, ref := landed(w2); hold == nil || !final || hold.Ref != ref || !hold.Meta.SnapshotIDTaken(101) {
		t.Fatalf("the append of v2 after v2 was deleted: landed %v, final %v; want it landed, the newest version v%d held", hold, final, ref.N)
	}

	// An append built on v1 whose create never landed (v2 was taken).
	lost := appendOn(v1, 202)
	var err error
	if lost.Next, lost.Body, err = v1.Meta.Apply(lost.Change, v1.Ref.Location); err != nil {
		t.Fatal(err)
	}
	if hold, final, _ := landed(lost); hold != nil || !final {
		t.Fatalf("an append that never landed: landed %v, final %v; want it not landed, finally", hold, final)
	}

	// A property change whose version was deleted: not known.
	newest, ref, err := f.Latest(ctx, n, tablemeta.Parse)
	if err != nil {
		t.Fatal(err)
	}
	we := setOn(Version{Meta: newest, Ref: ref}, "5")
	commit(setOn(commit(setOn(commit(we), "6")), "7"))
	gone(we.BaseRef.N + 1)
	if hold, final, _ := landed(we); hold != nil || final {
		t.Fatalf("a property change whose version was deleted: landed %v, final %v; want it unknown", hold, final)
	}
}

// TestVersionOfLocation: the numbers of metadata files as catalogs name
// them.
func TestVersionOfLocation(t *testing.T) {
	for uri, want := range map[string]int{
		"s3://b/ns/t/metadata/v3.metadata.json":                                         3,
		"s3://b/ns/t/metadata/v4-0b1c7a34-8d7e-4c55-b0f5-a8a0f1d3e7c1.metadata.json":    4,
		"s3://b/ns/t/metadata/00012-0b1c7a34-8d7e-4c55-b0f5-a8a0f1d3e7c1.metadata.json": 12,
		"s3://b/ns/t/metadata/snap-1.avro":                                              0,
		"s3://b/ns/t/metadata/current.metadata.json":                                    0,
	} {
		if got := VersionOfLocation(uri); got != want {
			t.Errorf("VersionOfLocation(%s) = %d, want %d", uri, got, want)
		}
	}
}

func localWarehouse(t *testing.T) Warehouse {
	t.Helper()
	loc, err := storage.ParseLocation(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := storage.NewLocalStore(loc.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return Warehouse{Store: st, Loc: loc, Log: slog.Default()}
}

// filesTable is the table newFilesTable made: its warehouse, file
// catalog, name, first version, and the metadata it was created from.
type filesTable struct {
	wh   Warehouse
	f    *Files
	n    Name
	v1   Version
	meta table.Metadata
	body []byte
}

// newFilesTable creates the table ns.t (one long column, unpartitioned,
// keeping one previous version and deleting older ones) in a new local
// warehouse's file catalog.
func newFilesTable(t *testing.T) filesTable {
	t.Helper()
	wh := localWarehouse(t)
	f := NewFiles(wh)
	n := Name{Namespace: "ns", Name: "t"}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	meta, err := table.NewMetadata(sc, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, wh.TableLocation(n), iceberg.Properties{
		table.MetadataDeleteAfterCommitEnabledKey: "true",
		table.MetadataPreviousVersionsMaxKey:      "1",
	})
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	v1, err := f.Create(context.Background(), n, meta, body)
	if err != nil {
		t.Fatal(err)
	}
	return filesTable{wh: wh, f: f, n: n, v1: v1, meta: meta, body: body}
}
