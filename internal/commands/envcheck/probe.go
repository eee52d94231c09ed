package envcheck

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

// ProbePrefix is where env check writes its probe objects, in the landing
// bucket and under the warehouse. It lies in the landing bucket's reserved
// prefix, which ingest never loads, and is not a <ns>/<table>/metadata path
// in the warehouse.
const ProbePrefix = landing.ReservedPrefix + "probe/"

var unsafeHostChars = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// newProbeID returns host-pid-random, unique per run.
func newProbeID() string {
	host, _ := os.Hostname()
	host = strings.Trim(unsafeHostChars.ReplaceAllString(host, "-"), "-.")
	if host == "" {
		host = "host"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}

func (c *Checker) probeKey(suffix string) string {
	return ProbePrefix + c.opts.ProbeID + suffix
}

func (c *Checker) probeBody(what string) []byte {
	return fmt.Appendf(nil, "timelake env check probe (%s), %s; safe to delete\n", what, c.now().UTC().Format("2006-01-02T15:04:05Z"))
}

// deleteProbe removes a probe with a context that survives ctx's
// cancellation and the check's timeout.
func (c *Checker) deleteProbe(ctx context.Context, st storage.Store, key string) error {
	dctx, cancel := c.cleanupContext(ctx)
	defer cancel()
	return st.Delete(dctx, key)
}

// folder is a local store opened for a check; undo removes the folders the
// check created, so a check leaves no trace.
type folder struct {
	store   *storage.LocalStore
	created bool // the folder did not exist before the check
	undo    func()
}

// openFolder opens dir as a LocalStore, creating it (and missing parents)
// if needed.
func openFolder(dir string) (*folder, error) {
	top := "" // topmost folder that does not exist yet
	for d := dir; ; d = filepath.Dir(d) {
		_, err := os.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		top = d
		if filepath.Dir(d) == d {
			break
		}
	}
	undo := func() {
		if top == "" {
			return
		}
		for d := dir; ; d = filepath.Dir(d) {
			if os.Remove(d) != nil || d == top || filepath.Dir(d) == d {
				return
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		undo()
		return nil, err
	}
	st, err := storage.NewLocalStore(dir)
	if err != nil {
		undo()
		return nil, err
	}
	return &folder{store: st, created: top != "", undo: undo}, nil
}

// openLocation opens a store on loc for a check. S3 stores use the checked
// client with the same options as ingest and the lake.
func (c *Checker) openLocation(loc storage.Location, lakeStore bool) (storage.Store, *folder, error) {
	if loc.IsS3() {
		return storage.NewS3Store(c.client, loc.Bucket, loc.Prefix,
			storage.S3StoreOptions{Tigris: c.tigris, ConsistentReads: lakeStore}), nil, nil
	}
	f, err := openFolder(loc.Dir)
	if err != nil {
		return nil, nil, err
	}
	return f.store, f, nil
}

// errStopList ends a listing early.
var errStopList = errors.New("stop listing")

// countObjects lists up to limit objects below prefix, skipping timelake's
// own prefixes; more is true when there were more.
func countObjects(ctx context.Context, st storage.Store, limit int, skip ...string) (n int, more bool, err error) {
	err = st.List(ctx, "", func(o storage.ObjectInfo) error {
		for _, p := range skip {
			if strings.HasPrefix(o.Key, p) {
				return nil
			}
		}
		if n == limit {
			more = true
			return errStopList
		}
		n++
		return nil
	})
	if errors.Is(err, errStopList) {
		err = nil
	}
	return n, more, err
}

func plural(n int, more bool, one, many string) string {
	s := strconv.Itoa(n)
	if more {
		s += "+"
	}
	if n == 1 && !more {
		return s + " " + one
	}
	return s + " " + many
}

// landingBucket lists the landing bucket, writes, reads back and deletes a
// probe, then checks conditional create (the ingest lease relies on it).
func (c *Checker) landingBucket(ctx context.Context) {
	switch {
	case !c.landingOK:
		c.Skip(CheckLandingBucket, "landing setting invalid")
		c.Skip(CheckLandingLease, "landing setting invalid")
		return
	case c.landing.IsS3() && c.s3Blocked != "":
		c.Skip(CheckLandingBucket, c.s3Blocked)
		c.Skip(CheckLandingLease, c.s3Blocked)
		return
	}
	setting := c.opts.Settings.Landing.Describe()
	st, f, err := c.openLocation(c.landing, false)
	if err != nil {
		c.Fail(CheckLandingBucket, fmt.Sprintf("%s: cannot create the folder: %v", c.landing, err),
			"create it, or fix "+setting)
		c.Skip(CheckLandingLease, "landing not usable")
		return
	}
	if f != nil {
		defer f.undo()
	}
	if !c.probeLanding(ctx, st, f, setting) {
		c.Skip(CheckLandingLease, "landing not usable")
		return
	}
	c.landingListed = true
	c.leaseProbe(ctx, st)
}

// probeLanding runs list, put, get and delete; true when a probe could be
// written.
func (c *Checker) probeLanding(ctx context.Context, st storage.Store, f *folder, setting string) bool {
	uri := st.URI()
	lctx, cancel := c.WithTimeout(ctx)
	n, more, err := countObjects(lctx, st, 1000, landing.ReservedPrefix, landing.DefaultQuarantinePrefix)
	cancel()
	if err != nil {
		if isNotFound(err) {
			c.Fail(CheckLandingBucket, fmt.Sprintf("%s: bucket %s does not exist", uri, c.landing.Bucket), storage.MissingBucketFix(c.landing, setting))
		} else {
			c.Fail(CheckLandingBucket, fmt.Sprintf("%s: list: %v", uri, err),
				"the key needs s3:ListBucket on the landing bucket")
		}
		return false
	}
	listed := "listed: " + plural(n, more, "file waits", "files wait")
	if f != nil && f.created {
		listed = "folder does not exist yet; it can be created"
	}

	key := c.probeKey("")
	body := c.probeBody("landing")
	pctx, cancel := c.WithTimeout(ctx)
	defer cancel()
	if _, err := st.Put(pctx, key, bytes.NewReader(body), storage.PutOptions{ContentType: "text/plain"}); err != nil {
		c.Fail(CheckLandingBucket, fmt.Sprintf("%s: %s; put %s: %v", uri, listed, key, err),
			"the key needs s3:PutObject on the landing bucket: ingest writes its lease and moves rejected files to _rejected/")
		return false
	}
	deleted := false
	defer func() {
		if !deleted {
			_ = c.deleteProbe(ctx, st, key) // best effort: the row already says what failed
		}
	}()
	got, _, err := storage.ReadAll(pctx, st, key)
	switch {
	case err != nil:
		c.Fail(CheckLandingBucket, fmt.Sprintf("%s: %s; wrote %s but cannot read it: %v", uri, listed, key, err),
			"the key needs s3:GetObject on the landing bucket")
		return true
	case !bytes.Equal(got, body):
		c.Fail(CheckLandingBucket, fmt.Sprintf("%s: %s; read back %d bytes of %s, wrote %d", uri, listed, len(got), key, len(body)),
			"the store returned other content than written: check the endpoint and any proxy in between")
		return true
	}
	if err := c.deleteProbe(ctx, st, key); err != nil {
		c.Fail(CheckLandingBucket, fmt.Sprintf("%s: %s; cannot delete %s: %v", uri, listed, key, err),
			"the key needs s3:DeleteObject on the landing bucket: ingest deletes each file once loaded; delete the probe by hand")
		return true
	}
	deleted = true
	c.OK(CheckLandingBucket, fmt.Sprintf("%s: %s; put/get/delete of %s ok", uri, listed, key))
	return true
}

// leaseProbe checks that a second conditional create of one key is refused
// in the landing bucket, where ingest keeps its lease. Without it two
// overlapping runs can both hold the lease: commits stay safe (lake-commit)
// but work is done twice, so this is a warning only.
func (c *Checker) leaseProbe(ctx context.Context, st storage.Store) {
	key := c.probeKey("-lease")
	second, err := c.conditionalProbe(ctx, st, key, "lease")
	switch {
	case err != nil:
		c.Warn(CheckLandingLease, fmt.Sprintf("conditional create (If-None-Match: *) of %s failed: %v", key, err),
			"overlapping ingest runs are not kept apart; run ingest from one host only")
	case second == nil:
		c.Warn(CheckLandingLease, "the store accepted a second If-None-Match: * create of "+key+
			": it ignores conditional writes, so overlapping ingest runs can both take the lease (commits stay safe, work is duplicated)",
			"run ingest from one host only, or use a store with conditional writes")
	case errors.Is(second, storage.ErrPreconditionFailed):
		c.OK(CheckLandingLease, "conditional create refused a second writer (412): the ingest lease works")
	default:
		c.Warn(CheckLandingLease, fmt.Sprintf("second conditional create of %s: %v (expected 412 Precondition Failed)", key, second),
			"overlapping ingest runs may not be kept apart; run ingest from one host only")
	}
}

// conditionalProbe creates key with IfAbsent, then tries again and returns
// the second attempt's error (nil means the store ignored the condition).
// err is the first attempt's error. The probe is always deleted.
func (c *Checker) conditionalProbe(ctx context.Context, st storage.Store, key, what string) (second, err error) {
	body := c.probeBody(what)
	pctx, cancel := c.WithTimeout(ctx)
	defer cancel()
	defer func() { _ = c.deleteProbe(ctx, st, key) }() // also after a failed first put: it may have landed
	if _, err := st.Put(pctx, key, bytes.NewReader(body), storage.PutOptions{IfAbsent: true, ContentType: "text/plain"}); err != nil {
		return nil, err
	}
	_, second = st.Put(pctx, key, bytes.NewReader(body), storage.PutOptions{IfAbsent: true, ContentType: "text/plain"})
	return second, nil
}
