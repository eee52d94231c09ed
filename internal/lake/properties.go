package lake

import (
	"context"
	"fmt"
	"maps"

	"github.com/apache/iceberg-go"

	"github.com/timelake/timelake/internal/lake/tablemeta"
)

// Properties returns the loaded version's table properties (a copy).
func (t *Table) Properties() iceberg.Properties {
	h, _ := t.loaded()
	return maps.Clone(h.Props())
}

// SetProperties sets and removes table properties through the commit
// protocol (Iceberg's set-properties and remove-properties updates, applied
// to the newest version at every attempt, so they never undo another
// writer's commit). Properties not named are kept untouched. Keys in both
// set and unset are set. On success the Table holds the new version.
//
// Errors: I/O errors, ErrUnsupportedFormat, and table.ErrCommitFailed after
// the commit's attempts were all lost races.
func (t *Table) SetProperties(ctx context.Context, set map[string]string, unset []string) error {
	m := &propertiesMutation{t: t, set: set, unset: unset}
	if _, err := t.commit(ctx, m, CommitOptions{}); err != nil {
		return fmt.Errorf("set properties of %s: %w", t.name, err)
	}
	return nil
}

// propertiesMutation sets and removes table properties.
type propertiesMutation struct {
	t     *Table
	set   map[string]string
	unset []string
}

func (m *propertiesMutation) build(_ context.Context, base *tablemeta.Indexed, _ versionRef, _ int) (*tablemeta.Change, error) {
	return tablemeta.ChangeProperties(base.Props(), m.set, m.unset, m.t.lake.now().UnixMilli()), nil
}

// cleanUp: a property change writes nothing but its version.
func (m *propertiesMutation) cleanUp(context.Context, int, bool) {}
