package lake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/storage"
)

// Tests commit what another engine would (a row-level delete, say) through
// an iceberg-go transaction: captureCatalog runs the transaction's commit
// on the table's newest version, and commitTransaction writes the result
// as the next version of a table of the file catalog.

// captureCatalog is the table.CatalogIO of a transaction whose commit the
// commit protocol performs: CommitTable checks the requirements against
// base, applies the updates (the metadata-log gains baseLoc, as a catalog's
// commit would) and records the result instead of writing it.
type captureCatalog struct {
	base    table.Metadata
	baseLoc string
	next    table.Metadata
}

// errCaptured ends a transaction's own commit once captureCatalog has the
// metadata; it does not wrap table.ErrCommitFailed, so iceberg-go does not
// retry.
var errCaptured = errors.New("metadata captured")

func (c *captureCatalog) LoadTable(context.Context, table.Identifier) (*table.Table, error) {
	return nil, errors.New("internal: the commit protocol loads tables itself")
}

func (c *captureCatalog) CommitTable(_ context.Context, _ table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	for _, r := range reqs {
		if err := r.Validate(c.base); err != nil {
			return nil, "", err
		}
	}
	next, err := table.UpdateTableMetadata(c.base, updates, c.baseLoc)
	if err != nil {
		return nil, "", fmt.Errorf("apply updates: %w", err)
	}
	c.next = next
	return nil, "", errCaptured
}

// commitTransaction commits what stage stages on an iceberg-go transaction
// over t's newest version as the next version (t's lake has the file
// catalog), as another engine's commit would.
func (t *Table) commitTransaction(ctx context.Context, stage func(*table.Transaction) error) error {
	files, ok := t.lake.cat.(*catalog.Files)
	if !ok {
		return errors.New("commitTransaction needs the file catalog")
	}
	base, bv, err := files.Latest(ctx, t.name, tablemeta.Parse)
	if err != nil {
		return err
	}
	_, body, err := t.stageTransaction(ctx, base, bv.Location, stage)
	if err != nil {
		return err
	}
	if _, err := t.lake.store.Put(ctx, catalog.MetadataKey(t.name, bv.N+1), bytes.NewReader(body),
		storage.PutOptions{IfAbsent: true, ContentType: "application/json"}); err != nil {
		return err
	}
	return t.Refresh(ctx)
}

// stageTransaction runs stage on an iceberg-go transaction over base
// (whose metadata is at baseLoc) and returns the next version as the
// commit protocol writes it.
func (t *Table) stageTransaction(ctx context.Context, base *tablemeta.Indexed, baseLoc string, stage func(*table.Transaction) error) (*tablemeta.Indexed, []byte, error) {
	meta, err := base.Metadata()
	if err != nil {
		return nil, nil, err
	}
	cc := &captureCatalog{base: meta, baseLoc: baseLoc}
	txn := table.New(t.ident(), meta, baseLoc, t.fsF, cc).NewTransaction()
	if err := stage(txn); err != nil {
		return nil, nil, err
	}
	return cc.capture(ctx, txn)
}

// capture runs txn's commit against c and returns the next version.
func (c *captureCatalog) capture(ctx context.Context, txn *table.Transaction) (*tablemeta.Indexed, []byte, error) {
	if _, err := txn.Commit(ctx); !errors.Is(err, errCaptured) {
		if err == nil {
			return nil, nil, errNothingToCommit
		}
		return nil, nil, err
	}
	body, err := json.Marshal(c.next)
	if err != nil {
		return nil, nil, fmt.Errorf("encode metadata: %w", err)
	}
	// Keep the metadata as read back from what is written: the builder's
	// result holds on to internal state that grows with every commit.
	h, err := tablemeta.Parse(body)
	if err != nil {
		return nil, nil, fmt.Errorf("metadata after the update: %w", err)
	}
	return h, body, nil
}
