package envcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/timelake/timelake/internal/storage"
)

// unsafeCommitFix is the fix of a store without conditional create.
const unsafeCommitFix = "use a store that honours If-None-Match: * on PutObject (AWS S3, Tigris, MinIO, versitygw), " +
	"or upgrade the server; do not run ingest against this store"

// lake checks the warehouse: list, put/delete of a probe, and the
// conditional create that the catalog-free commit relies on.
func (c *Checker) lake(ctx context.Context) {
	switch {
	case !c.warehouseOK:
		c.Skip(CheckLakeBucket, "warehouse setting invalid")
		c.Skip(CheckLakeCommit, "warehouse setting invalid")
		return
	case c.warehouse.IsS3() && c.s3Blocked != "":
		c.Skip(CheckLakeBucket, c.s3Blocked)
		c.Skip(CheckLakeCommit, c.s3Blocked)
		return
	}
	// With a REST catalog the warehouse may be a table bucket, which takes
	// objects only inside a table's folder: the probe goes to the folder
	// of timelake's own files of the table (docs/catalogs.md).
	probeDir := ""
	if c.restCatalog {
		if !c.tableOK {
			c.Skip(CheckLakeBucket, "table name invalid (with a REST catalog the probe goes to the table's folder)")
			c.Skip(CheckLakeCommit, "table name invalid")
			return
		}
		probeDir = c.tableName.Namespace + "/" + c.tableName.Name + "/_timelake/"
	}
	setting := c.opts.Settings.Warehouse.Describe()
	st, f, err := c.openLocation(c.warehouse, true)
	if err != nil {
		c.Fail(CheckLakeBucket, fmt.Sprintf("%s: cannot create the folder: %v", c.warehouse, err), "create it, or fix "+setting)
		c.Skip(CheckLakeCommit, "warehouse not usable")
		return
	}
	if f != nil {
		defer f.undo()
	}
	uri := st.URI()

	lctx, cancel := c.WithTimeout(ctx)
	n, more, err := countObjects(lctx, st, 1000, ProbePrefix)
	cancel()
	if err != nil {
		if isNotFound(err) {
			c.Fail(CheckLakeBucket, fmt.Sprintf("%s: bucket %s does not exist", uri, c.warehouse.Bucket), storage.MissingBucketFix(c.warehouse, setting))
		} else {
			c.Fail(CheckLakeBucket, fmt.Sprintf("%s: list: %v", uri, err), "the key needs s3:ListBucket on the lake bucket")
		}
		c.Skip(CheckLakeCommit, "lake bucket not usable")
		return
	}
	c.lakeListed = true
	listed := "listed: " + plural(n, more, "object", "objects")
	if f != nil && f.created {
		listed = "folder does not exist yet; it can be created"
	} else if n == 0 {
		listed = "listed: empty"
	}

	// The first put is a conditional create, as every commit is.
	key := probeDir + c.probeKey("")
	body := c.probeBody("lake")
	pctx, pcancel := c.WithTimeout(ctx)
	defer pcancel()
	cleaned := false
	defer func() {
		if !cleaned {
			_ = c.deleteProbe(ctx, st, key) // best effort: the rows already say what failed
		}
	}()
	_, firstErr := st.Put(pctx, key, bytes.NewReader(body), storage.PutOptions{IfAbsent: true, ContentType: "text/plain"})
	var second error
	if firstErr != nil {
		// Tell "cannot write at all" from "conditional writes rejected".
		if _, err := st.Put(pctx, key, bytes.NewReader(body), storage.PutOptions{ContentType: "text/plain"}); err != nil {
			c.Fail(CheckLakeBucket, fmt.Sprintf("%s: %s; put %s: %v", uri, listed, key, err),
				"the key needs s3:PutObject on the lake bucket")
			c.Skip(CheckLakeCommit, "lake bucket not writable")
			return
		}
	} else {
		_, second = st.Put(pctx, key, bytes.NewReader(body), storage.PutOptions{IfAbsent: true, ContentType: "text/plain"})
	}
	delErr := c.deleteProbe(ctx, st, key)
	cleaned = delErr == nil
	if delErr != nil {
		c.Warn(CheckLakeBucket, fmt.Sprintf("%s: %s; put %s ok, delete failed: %v", uri, listed, key, delErr),
			"grant s3:DeleteObject on the lake bucket (iceberg clean-up of failed writes needs it); delete the probe by hand")
	} else {
		c.OK(CheckLakeBucket, fmt.Sprintf("%s: %s; put/delete of %s ok", uri, listed, key))
	}

	switch {
	case firstErr != nil:
		c.Fail(CheckLakeCommit, fmt.Sprintf("a conditional create (If-None-Match: *) was rejected while a plain put works: %v", firstErr),
			unsafeCommitFix)
	case second == nil:
		c.Fail(CheckLakeCommit, "the store accepted a second If-None-Match: * create of the same key: it ignores conditional writes, "+
			"so two commits could both write the same vN.metadata.json and one would silently replace the other; committing is unsafe",
			unsafeCommitFix)
	case errors.Is(second, storage.ErrPreconditionFailed) && c.restCatalog:
		c.OK(CheckLakeCommit, "conditional create refused a second writer (412 Precondition Failed): load history segments are safe; "+
			"versions are committed through the catalog (catalog-commit)")
	case errors.Is(second, storage.ErrPreconditionFailed):
		c.OK(CheckLakeCommit, "conditional create refused a second writer (412 Precondition Failed): commits are safe")
	default:
		c.Fail(CheckLakeCommit, fmt.Sprintf("second conditional create of %s: %v (expected 412 Precondition Failed)", key, second),
			unsafeCommitFix)
	}
}
