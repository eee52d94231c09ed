package envcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
)

// unsafeCommitFix is the fix of a store without conditional create.
const unsafeCommitFix = "use a store that honours If-None-Match: * on PutObject (AWS S3, Tigris, MinIO, versitygw), " +
	"or upgrade the server; do not run ingest against this store"

// lake checks the warehouse: list, put/delete of a probe, and the
// conditional create that the catalog-free commit relies on.
func (c *checker) lake(ctx context.Context) {
	switch {
	case !c.warehouseOK:
		c.skip(CheckLakeBucket, "warehouse setting invalid")
		c.skip(CheckLakeCommit, "warehouse setting invalid")
		return
	case c.warehouse.IsS3() && c.s3Blocked != "":
		c.skip(CheckLakeBucket, c.s3Blocked)
		c.skip(CheckLakeCommit, c.s3Blocked)
		return
	}
	// With a REST catalog the warehouse may be a table bucket, which takes
	// objects only inside a table's folder: the probe goes to the folder
	// of timelake's own files of the table (docs/catalogs.md).
	probeDir := ""
	if c.opts.Settings.Catalog != nil {
		if !c.tableOK {
			c.skip(CheckLakeBucket, "table name invalid (with a REST catalog the probe goes to the table's folder)")
			c.skip(CheckLakeCommit, "table name invalid")
			return
		}
		probeDir = c.tableName.Namespace + "/" + c.tableName.Name + "/_timelake/"
	}
	setting := c.opts.Settings.Warehouse.Describe()
	st, f, err := c.openLocation(c.warehouse, true)
	if err != nil {
		c.fail(CheckLakeBucket, fmt.Sprintf("%s: cannot create the folder: %v", c.warehouse, err), "create it, or fix "+setting)
		c.skip(CheckLakeCommit, "warehouse not usable")
		return
	}
	if f != nil {
		defer f.undo()
	}
	uri := st.URI()

	lctx, cancel := c.withTimeout(ctx)
	n, more, err := countObjects(lctx, st, 1000, ProbePrefix)
	cancel()
	if err != nil {
		if isNotFound(err) {
			c.fail(CheckLakeBucket, fmt.Sprintf("%s: bucket %s does not exist", uri, c.warehouse.Bucket), storage.MissingBucketFix(c.warehouse, setting))
		} else {
			c.fail(CheckLakeBucket, fmt.Sprintf("%s: list: %v", uri, err), "the key needs s3:ListBucket on the lake bucket")
		}
		c.skip(CheckLakeCommit, "lake bucket not usable")
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
	pctx, pcancel := c.withTimeout(ctx)
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
			c.fail(CheckLakeBucket, fmt.Sprintf("%s: %s; put %s: %v", uri, listed, key, err),
				"the key needs s3:PutObject on the lake bucket")
			c.skip(CheckLakeCommit, "lake bucket not writable")
			return
		}
	} else {
		_, second = st.Put(pctx, key, bytes.NewReader(body), storage.PutOptions{IfAbsent: true, ContentType: "text/plain"})
	}
	delErr := c.deleteProbe(ctx, st, key)
	cleaned = delErr == nil
	if delErr != nil {
		c.warn(CheckLakeBucket, fmt.Sprintf("%s: %s; put %s ok, delete failed: %v", uri, listed, key, delErr),
			"grant s3:DeleteObject on the lake bucket (iceberg clean-up of failed writes needs it); delete the probe by hand")
	} else {
		c.ok(CheckLakeBucket, fmt.Sprintf("%s: %s; put/delete of %s ok", uri, listed, key))
	}

	switch {
	case firstErr != nil:
		c.fail(CheckLakeCommit, fmt.Sprintf("a conditional create (If-None-Match: *) was rejected while a plain put works: %v", firstErr),
			unsafeCommitFix)
	case second == nil:
		c.fail(CheckLakeCommit, "the store accepted a second If-None-Match: * create of the same key: it ignores conditional writes, "+
			"so two commits could both write the same vN.metadata.json and one would silently replace the other; committing is unsafe",
			unsafeCommitFix)
	case errors.Is(second, storage.ErrPreconditionFailed) && c.opts.Settings.Catalog != nil:
		c.ok(CheckLakeCommit, "conditional create refused a second writer (412 Precondition Failed): load history segments are safe; "+
			"versions are committed through the catalog (catalog-commit)")
	case errors.Is(second, storage.ErrPreconditionFailed):
		c.ok(CheckLakeCommit, "conditional create refused a second writer (412 Precondition Failed): commits are safe")
	default:
		c.fail(CheckLakeCommit, fmt.Sprintf("second conditional create of %s: %v (expected 412 Precondition Failed)", key, second),
			unsafeCommitFix)
	}
}

// table loads the table: it exists (or the first ingest creates it), its
// metadata and current manifest list are readable, and its
// timelake.format-version is one this binary writes.
func (c *checker) table(ctx context.Context) {
	switch {
	case !c.tableOK:
		c.skip(CheckTable, "table name invalid")
		return
	case !c.warehouseOK:
		c.skip(CheckTable, "warehouse setting invalid")
		return
	case c.warehouse.IsS3() && c.s3Blocked != "":
		c.skip(CheckTable, c.s3Blocked)
		return
	case !c.lakeListed:
		c.skip(CheckTable, "lake bucket not usable")
		return
	case c.opts.Settings.Catalog != nil && !c.catalogReady:
		c.skip(CheckTable, "catalog not usable")
		return
	}
	if !c.warehouse.IsS3() {
		// lake.Open would create a missing folder: do not leave one behind.
		if _, err := os.Stat(c.warehouse.Dir); errors.Is(err, os.ErrNotExist) {
			c.ok(CheckTable, fmt.Sprintf("%s does not exist yet (the warehouse folder does not either): the first ingest creates it from the first file's schema", c.tableName))
			c.tableMissing = true
			return
		}
	}
	l, err := lake.Open(ctx, c.opts.Settings.Warehouse.Value, lake.Options{S3: c.client, Tigris: c.tigris, Logger: c.opts.Logger,
		Catalog: c.opts.Settings.Catalog})
	if err != nil {
		c.fail(CheckTable, err.Error(), "fix "+c.opts.Settings.Warehouse.Describe())
		return
	}
	tctx, cancel := c.withTimeout(ctx)
	defer cancel()
	t, err := l.LoadTable(tctx, c.tableName)
	switch {
	case errors.Is(err, lake.ErrTableNotFound):
		where := l.URI()
		if c.opts.Settings.Catalog != nil {
			where = "the " + l.Catalog()
		}
		c.ok(CheckTable, fmt.Sprintf("%s does not exist yet in %s: the first ingest creates it from the first file's schema (if it should exist, check %s for a typo)",
			c.tableName, where, c.opts.Settings.Table.Describe()))
		c.tableMissing = true
		return
	case errors.Is(err, lake.ErrUnsupportedFormat):
		c.fail(CheckTable, fmt.Sprintf("%v (this binary writes format %d.x)", err, lake.SupportedFormatMajor),
			"install a newer timelake (docs/install.md); do not run this one against the table")
		return
	case err != nil:
		c.fail(CheckTable, fmt.Sprintf("%s: %v", c.tableName, err), "the key needs s3:GetObject and s3:ListBucket on the lake bucket")
		return
	}
	format := t.Metadata().Properties()[lake.PropFormatVersion]
	if format == "" {
		format = "1 (unset)"
	}
	c.loaded = t
	detail := fmt.Sprintf("%s: metadata v%d, timelake.format-version %s", c.tableName, t.Version(), format)
	snap := t.Metadata().CurrentSnapshot()
	if snap == nil {
		c.ok(CheckTable, detail+", no snapshot yet (0 rows)")
		return
	}
	detail += fmt.Sprintf(", snapshot %d of %s", snap.SnapshotID, time.UnixMilli(snap.TimestampMs).UTC().Format(time.RFC3339))
	if snap.Summary != nil {
		if v, err := strconv.ParseInt(snap.Summary.Properties["total-records"], 10, 64); err == nil {
			detail += fmt.Sprintf(", %d rows", v)
		}
		if v, err := strconv.ParseInt(snap.Summary.Properties["total-data-files"], 10, 64); err == nil {
			detail += fmt.Sprintf(" in %d data files", v)
		}
	}
	// Read the manifest list through iceberg-go's file IO, the path data
	// files and manifests take (metadata above went through the store).
	fio, err := t.Iceberg().FS(tctx)
	if err == nil {
		_, err = snap.Manifests(fio)
	}
	if err != nil {
		c.fail(CheckTable, fmt.Sprintf("%s; manifest list %s not readable: %v", detail, snap.ManifestList, err),
			"the key needs s3:GetObject on the lake bucket; a missing manifest list means files were deleted by hand")
		return
	}
	c.ok(CheckTable, detail)
}
