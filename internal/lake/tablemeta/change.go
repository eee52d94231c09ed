package tablemeta

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Change is the next version of a table as a mutation states it: the
// Iceberg table updates that turn the version it was built on (its base)
// into the next one (Iceberg REST spec, "TableUpdate"), in the shapes this
// lake makes. A Change either adds snapshots (after a schema, when the
// snapshots' data brings one) or edits the metadata (removes snapshots,
// rolls the main branch back, sets and removes properties).
//
// Every mutation's build in internal/lake returns one (the snapshot
// producer writes the manifests and manifest lists of the snapshots it
// adds: internal/lake/producer.go), and the lake's catalog commits it
// (internal/lake/catalog): a REST catalog sends Updates on Requirements
// as they are; the file catalog writes the metadata Apply gives on the
// base (spliced into the base's JSON: Indexed.WithSnapshots and
// Indexed.edit, so that a commit does not re-encode the table's history).
type Change struct {
	// schema, when set, is added and made current before the snapshots
	// (add-schema, set-current-schema).
	schema *iceberg.Schema
	// snapshots are added in order, each the parent of the next, the first
	// a child of the main branch's snapshot (add-snapshot); the main branch
	// moves to the last (set-snapshot-ref).
	snapshots []table.Snapshot
	// removed are snapshots that leave the table (remove-snapshots).
	removed []int64
	// rollBackTo, when set, moves the main branch back to this ancestor of
	// its snapshot (set-snapshot-ref).
	rollBackTo *int64
	// setProps and removeProps are the table properties set and removed
	// (set-properties, remove-properties); a key is in one at most.
	setProps    map[string]string
	removeProps []string
	// at is when an edit is made, in milliseconds: its last-updated-ms,
	// and the time of a rollback's snapshot-log entry. Snapshots bring
	// their own timestamps.
	at int64
}

// The constructors, one per operation. The snapshots they add are written
// by the snapshot producer (internal/lake/producer.go).

// AddSnapshots is the change of an append, a compaction (replace) or a
// retention drop (delete): snaps added, a schema first when schema is not
// nil.
func AddSnapshots(schema *iceberg.Schema, snaps ...table.Snapshot) *Change {
	return &Change{schema: schema, snapshots: snaps}
}

// RemoveSnapshots is the change of an expiry, made at at (milliseconds):
// snapshots ids removed (and, with setProperties, the load history's
// segment list changed).
func RemoveSnapshots(ids []int64, at int64) *Change { return &Change{removed: ids, at: at} }

// RollBack is the change of a rollback, made at at: the main branch back
// to its ancestor id.
func RollBack(id, at int64) *Change { return &Change{rollBackTo: &id, at: at} }

// ChangeProperties is the change of a property change (of the load
// history's and the outcome log's segment lists among them), made at at:
// set and unset on base's properties, only what changes (empty when
// nothing does).
func ChangeProperties(base iceberg.Properties, set map[string]string, unset []string, at int64) *Change {
	c := &Change{at: at}
	c.SetProperties(base, set, unset)
	return c
}

// SetProperties adds to c the properties of set that base does not hold
// with those values and the keys of unset that base holds (and set does
// not name): only what changes, so that a change of nothing is seen
// (empty).
func (c *Change) SetProperties(base iceberg.Properties, set map[string]string, unset []string) {
	for _, k := range unset {
		if _, inSet := set[k]; inSet {
			continue
		}
		if _, ok := base[k]; ok && !slices.Contains(c.removeProps, k) {
			c.removeProps = append(c.removeProps, k)
			delete(c.setProps, k)
		}
	}
	for k, v := range set {
		if cur, ok := base[k]; ok && cur == v {
			continue
		}
		if c.setProps == nil {
			c.setProps = map[string]string{}
		}
		c.setProps[k] = v
		c.removeProps = slices.DeleteFunc(c.removeProps, func(r string) bool { return r == k })
	}
}

// Schema is the schema c adds before its snapshots; nil when none.
func (c *Change) Schema() *iceberg.Schema { return c.schema }

// AddsSnapshots reports whether c adds snapshots.
func (c *Change) AddsSnapshots() bool { return len(c.snapshots) > 0 }

// edits reports whether c changes anything besides adding snapshots.
func (c *Change) edits() bool {
	return len(c.removed) > 0 || c.rollBackTo != nil || len(c.setProps) > 0 || len(c.removeProps) > 0
}

// Empty reports whether c changes nothing.
func (c *Change) Empty() bool { return len(c.snapshots) == 0 && c.schema == nil && !c.edits() }

// mainTo is where c moves the main branch; nil when it does not.
func (c *Change) mainTo() *int64 {
	if n := len(c.snapshots); n > 0 {
		return &c.snapshots[n-1].SnapshotID
	}
	return c.rollBackTo
}

// ErrInvalidChange refuses a change no mutation makes, or one that does
// not apply to its base: nothing is written.
var ErrInvalidChange = errors.New("invalid table change")

// Apply returns the version c makes of h, and its encoding: h's JSON with
// the snapshots spliced in (Indexed.WithSnapshots, after Indexed.WithSchema), or
// edited (Indexed.edit), baseLocation (h's own file) added to the
// metadata-log. h is unchanged.
func (h *Indexed) Apply(c *Change, baseLocation string) (*Indexed, []byte, error) {
	switch {
	case c.Empty():
		return nil, nil, fmt.Errorf("%w: it changes nothing", ErrInvalidChange)
	case len(c.snapshots) > 0 && c.edits():
		return nil, nil, fmt.Errorf("%w: it adds snapshots and edits the metadata", ErrInvalidChange)
	case len(c.snapshots) > 0:
		staged := h
		if c.schema != nil {
			var err error
			if staged, err = h.WithSchema(c.schema); err != nil {
				return nil, nil, fmt.Errorf("schema change: %w", err)
			}
		}
		return staged.WithSnapshots(c.snapshots, baseLocation)
	case c.schema != nil:
		return nil, nil, fmt.Errorf("%w: a schema change without snapshots", ErrInvalidChange)
	}
	e := h.edit()
	if len(c.removed) > 0 {
		if err := e.removeSnapshots(idSet(c.removed)); err != nil {
			return nil, nil, err
		}
	}
	if c.rollBackTo != nil {
		if err := e.rollBack(*c.rollBackTo, c.at); err != nil {
			return nil, nil, err
		}
	}
	if len(c.setProps) > 0 || len(c.removeProps) > 0 {
		if err := e.setProperties(c.setProps, c.removeProps); err != nil {
			return nil, nil, err
		}
	}
	return e.done(baseLocation, c.at)
}

// idSet is ids as a set.
func idSet(ids []int64) map[int64]bool {
	set := make(map[int64]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

// Updates are c's Iceberg table updates (iceberg-go's table.Update, as a
// REST catalog's updateTable takes them), on base: add-schema and
// set-current-schema (-1: the schema just added, whatever id the catalog
// gives it), add-snapshot for each snapshot, remove-snapshots,
// set-snapshot-ref for the main branch (its other settings as base has
// them), set-properties and remove-properties. The metadata-log, the
// snapshot-log and the timestamps are the catalog's to write.
func (c *Change) Updates(base *Indexed) ([]table.Update, error) {
	var us []table.Update
	if c.schema != nil {
		us = append(us, table.NewAddSchemaUpdate(c.schema), table.NewSetCurrentSchemaUpdate(-1))
	}
	for i := range c.snapshots {
		us = append(us, table.NewAddSnapshotUpdate(&c.snapshots[i]))
	}
	if len(c.removed) > 0 {
		us = append(us, table.NewRemoveSnapshotsUpdate(slices.Clone(c.removed), false))
	}
	if to := c.mainTo(); to != nil {
		refs, err := base.Refs()
		if err != nil {
			return nil, err
		}
		r := refs[table.MainBranch]
		us = append(us, table.NewSetSnapshotRefUpdate(table.MainBranch, *to, table.BranchRef,
			deref(r.MaxRefAgeMs), deref(r.MaxSnapshotAgeMs), int(deref(r.MinSnapshotsToKeep))))
	}
	if len(c.setProps) > 0 {
		us = append(us, table.NewSetPropertiesUpdate(maps.Clone(c.setProps)))
	}
	if len(c.removeProps) > 0 {
		us = append(us, table.NewRemovePropertiesUpdate(slices.Sorted(slices.Values(c.removeProps))))
	}
	return us, nil
}

// Requirements are what c needs of the version it is applied to (Iceberg
// REST spec, "TableRequirement"), checked by the catalog at commit: the
// table is base's (assert-table-uuid), its main branch is where it was
// (assert-ref-snapshot-id), and so are its current schema, its last column
// id and its default partition spec (what data files were written with).
// A change that removes snapshots also asserts every other ref of base (a
// snapshot a ref moved to meanwhile must not go).
func (c *Change) Requirements(base *Indexed) ([]table.Requirement, error) {
	m := base.write
	var main *int64
	if id := base.MainSnapshot(); id >= 0 {
		main = &id
	}
	reqs := []table.Requirement{
		table.AssertTableUUID(m.TableUUID()),
		table.AssertRefSnapshotID(table.MainBranch, main),
		table.AssertCurrentSchemaID(m.CurrentSchema().ID),
		table.AssertLastAssignedFieldID(m.LastColumnID()),
		table.AssertDefaultSpecID(m.DefaultPartitionSpec()),
	}
	if len(c.removed) > 0 {
		refs, err := base.Refs()
		if err != nil {
			return nil, err
		}
		for _, name := range slices.Sorted(maps.Keys(refs)) {
			if name == table.MainBranch {
				continue
			}
			id := refs[name].SnapshotID
			reqs = append(reqs, table.AssertRefSnapshotID(name, &id))
		}
	}
	return reqs, nil
}

// HeldBy reports whether newest holds c, built on base: every snapshot c
// added is there with its manifest list; when c added none, the snapshots
// it removed are gone, the main branch is where it put it, and the
// properties hold what it set and lack what it removed.
func (c *Change) HeldBy(newest, base *Indexed) bool {
	if len(c.snapshots) > 0 {
		for i := range c.snapshots {
			s := &c.snapshots[i]
			j, ok := newest.byID[s.SnapshotID]
			if !ok {
				return false
			}
			have, err := newest.Snapshot(j)
			if err != nil || have.ManifestList != s.ManifestList {
				return false
			}
		}
		return true
	}
	for _, id := range c.removed {
		if newest.SnapshotIDTaken(id) {
			return false
		}
	}
	if to := c.mainTo(); to != nil && *to != base.MainSnapshot() && newest.MainSnapshot() != *to {
		return false
	}
	have := newest.Props()
	for k, v := range c.setProps {
		if have[k] != v {
			return false
		}
	}
	for _, k := range c.removeProps {
		if _, ok := have[k]; ok {
			return false
		}
	}
	return true
}

// Refs are h's snapshot references by name.
func (h *Indexed) Refs() (map[string]table.SnapshotRef, error) {
	var refs map[string]table.SnapshotRef
	if err := unmarshalOptional(h.Get("refs"), &refs); err != nil {
		return nil, fmt.Errorf("refs: %w", err)
	}
	return refs, nil
}

func deref[T int | int64](p *T) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}
