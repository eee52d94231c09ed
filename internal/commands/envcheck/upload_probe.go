package envcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/upload"
)

// The gateway binary's probes: one fixed name per gateway and check, below
// the gateway's keys, so that a key that may not delete leaves at most
// these two objects, which the next check writes again. The names are
// hidden (a leading ".") and partial (".tmp"): ingest never loads them
// (landing.Bucket.Skipped).
const (
	UploadProbeName            = ".timelake-env-check.tmp"
	UploadConditionalProbeName = ".timelake-env-check-conditional.tmp"
)

// uploadKeys checks the settings that place upload's keys, the landing
// location's [prefix/]gateway/, and remembers that folder for the probes.
func (c *Checker) uploadKeys() {
	s := c.opts.Settings
	if !c.landingOK {
		c.Skip(CheckUploadKeys, "landing setting invalid")
		return
	}
	prefix, err := upload.NormalizePrefix(s.UploadPrefix.Value)
	if err != nil {
		c.Fail(CheckUploadKeys, fmt.Sprintf("%v%s", err, From(s.UploadPrefix)),
			"use a key prefix such as site-3, or remove it")
		return
	}
	if s.Gateway.Value == "" {
		c.Warn(CheckUploadKeys, "gateway name "+c.notSet(&settings.Gateway.Spec)+
			": upload needs it for the keys it makes (gateway/<time>-<hash>.csv), so where it writes is unknown and the upload checks are skipped",
			MissingFix(settings.Gateway.Flag, settings.Gateway.Env[0], "gateway-7")+" (upload with --key names each object itself)")
		return
	}
	if err := upload.ValidateGateway(s.Gateway.Value); err != nil {
		c.Fail(CheckUploadKeys, fmt.Sprintf("%v%s", err, From(s.Gateway)),
			"use a single key segment such as gateway-7")
		return
	}
	folder, err := upload.JoinKey(prefix, s.Gateway.Value)
	if err != nil {
		c.Fail(CheckUploadKeys, fmt.Sprintf("prefix %q and gateway %q make no valid key: %v", prefix, s.Gateway.Value, err),
			"shorten "+s.UploadPrefix.Describe()+" or "+s.Gateway.Describe())
		return
	}
	c.uploadFolder = folder + "/"
	detail := fmt.Sprintf("%s/%s (gateway %s%s", c.landingURI(), c.uploadFolder, s.Gateway.Value, From(s.Gateway))
	if prefix != "" {
		detail += fmt.Sprintf(", prefix %s%s", prefix, From(s.UploadPrefix))
	}
	c.OK(CheckUploadKeys, detail+")")
}

// landingURI names the landing location without a trailing slash.
func (c *Checker) landingURI() string {
	if c.landing.IsS3() {
		return strings.TrimRight(c.landing.String(), "/")
	}
	return strings.TrimRight(c.landing.Dir, string(filepath.Separator))
}

// uploadTarget runs the gateway binary's checks of what upload does in the
// landing location: below the gateway's keys only, no list, nothing under
// the reserved prefix.
func (c *Checker) uploadTarget(ctx context.Context) {
	skip := func(reason string) {
		c.Skip(CheckUploadPut, reason)
		c.Skip(CheckUploadConditional, reason)
	}
	switch {
	case !c.landingOK:
		skip("landing setting invalid")
		return
	case c.uploadFolder == "":
		skip("where upload writes is unknown (" + CheckUploadKeys + ")")
		return
	case c.landing.IsS3() && c.s3Blocked != "":
		skip(c.s3Blocked)
		return
	}
	st, f, err := c.openLocation(c.landing, false)
	if err != nil {
		c.Fail(CheckUploadPut, fmt.Sprintf("%s: cannot create the folder: %v", c.landing, err),
			"create it, or fix "+c.opts.Settings.Landing.Describe())
		c.Skip(CheckUploadConditional, "landing not usable")
		return
	}
	if f != nil {
		defer f.undo()
	}
	if !c.uploadProbe(ctx, st) {
		c.Skip(CheckUploadConditional, "no probe could be written below "+c.uploadFolder)
		return
	}
	c.uploadConditionalProbe(ctx, st)
}

// refusedDelete reports a delete the credentials may not do (a write-only
// key, or a folder without write permission).
func refusedDelete(err error) bool {
	return storage.IsAccessDenied(err) || errors.Is(err, fs.ErrPermission)
}

// uploadProbe puts a probe below the gateway's keys, HEADs it, and tries
// to delete it; true when it could be written. A refused delete is fine:
// upload never deletes.
func (c *Checker) uploadProbe(ctx context.Context, st storage.Store) bool {
	uri := st.URI()
	key := c.uploadFolder + UploadProbeName
	body := c.probeBody("upload")
	pctx, cancel := c.WithTimeout(ctx)
	defer cancel()
	if _, err := st.Put(pctx, key, bytes.NewReader(body), storage.PutOptions{ContentType: "text/plain"}); err != nil {
		if isNotFound(err) {
			c.Fail(CheckUploadPut, fmt.Sprintf("%s: bucket %s does not exist", uri, c.landing.Bucket),
				storage.MissingBucketFix(c.landing, c.opts.Settings.Landing.Describe()))
			return false
		}
		c.Fail(CheckUploadPut, fmt.Sprintf("%s: put %s: %v", uri, key, err),
			"the key needs s3:PutObject on "+c.uploadResource())
		return false
	}
	info, err := st.Stat(pctx, key)
	switch {
	case err != nil:
		c.Fail(CheckUploadPut, fmt.Sprintf("%s: wrote %s but cannot HEAD it: %v%s", uri, key, err, c.deleteUploadProbe(ctx, st, key)),
			"the key needs s3:GetObject on "+c.uploadResource()+": upload compares a key that exists (a retry) with the file")
		return true
	case info.Size != int64(len(body)):
		c.Fail(CheckUploadPut, fmt.Sprintf("%s: HEAD of %s says %d bytes, wrote %d%s", uri, key, info.Size, len(body), c.deleteUploadProbe(ctx, st, key)),
			"the store reports other content than written: check the endpoint and any proxy in between")
		return true
	}
	dctx, dcancel := c.cleanupContext(ctx)
	defer dcancel()
	switch err := st.Delete(dctx, key); {
	case err == nil:
		c.OK(CheckUploadPut, fmt.Sprintf("%s: put/HEAD/delete of %s ok", uri, key))
	case refusedDelete(err):
		c.OK(CheckUploadPut, fmt.Sprintf("%s: put/HEAD of %s ok; delete refused (access denied), as for a write-only key: upload never deletes; the probe stays and the next check writes it again", uri, key))
	default:
		c.Warn(CheckUploadPut, fmt.Sprintf("%s: put/HEAD of %s ok; delete: %v", uri, key, err),
			"upload never deletes, so this does not stop it; delete the probe by hand, or leave it: the next check writes it again")
	}
	return true
}

// deleteUploadProbe deletes a probe after a failed step, best effort, and
// says so when the probe stays.
func (c *Checker) deleteUploadProbe(ctx context.Context, st storage.Store, key string) string {
	if err := c.deleteProbe(ctx, st, key); err != nil {
		return "; the probe stays (delete: " + err.Error() + ")"
	}
	return ""
}

// uploadResource names what the key must be allowed on, for fixes.
func (c *Checker) uploadResource() string {
	if !c.landing.IsS3() {
		return "the landing folder (for a folder: write permission to " + c.landing.Dir + ")"
	}
	res := c.landing.Bucket + "/"
	if c.landing.Prefix != "" {
		res += c.landing.Prefix + "/"
	}
	return res + c.uploadFolder + "*"
}

// uploadConditionalProbe checks the If-None-Match: * create that upload
// sends for every file: a second create of one key must be refused (412),
// which keeps a retry or a conflicting file from overwriting an object.
// A probe an earlier check could not delete is refused at once, which
// proves the same.
func (c *Checker) uploadConditionalProbe(ctx context.Context, st storage.Store) {
	key := c.uploadFolder + UploadConditionalProbeName
	body := c.probeBody("upload conditional create")
	pctx, cancel := c.WithTimeout(ctx)
	defer cancel()
	put := func() error {
		_, err := st.Put(pctx, key, bytes.NewReader(body), storage.PutOptions{IfAbsent: true, ContentType: "text/plain"})
		return err
	}
	first := put()
	if errors.Is(first, storage.ErrPreconditionFailed) {
		c.OK(CheckUploadConditional, fmt.Sprintf("conditional create (If-None-Match: *) of %s refused (412): the probe of an earlier check exists; upload never overwrites a key", key))
		return
	}
	if first != nil {
		// It may have landed all the same.
		c.Fail(CheckUploadConditional, fmt.Sprintf("conditional create (If-None-Match: *) of %s: %v%s", key, first, c.deleteUploadProbe(ctx, st, key)),
			"upload puts every file with If-None-Match: *: the key needs s3:PutObject on "+c.uploadResource()+
				", and the store must accept conditional writes")
		return
	}
	second := put()
	kept := ""
	dctx, dcancel := c.cleanupContext(ctx)
	defer dcancel()
	if err := st.Delete(dctx, key); refusedDelete(err) {
		kept = "; delete refused (access denied): the probe stays, and the next check's create of it is refused the same way"
	} else if err != nil {
		kept = "; the probe stays (delete: " + err.Error() + ")"
	}
	switch {
	case second == nil:
		c.Warn(CheckUploadConditional, "the store accepted a second If-None-Match: * create of "+key+
			": it ignores conditional writes, so upload cannot refuse a key that exists: a different file under the same key overwrites it"+kept,
			"use a store with conditional writes; keep the generated keys (they hold the file's hash) rather than --key")
	case errors.Is(second, storage.ErrPreconditionFailed):
		c.OK(CheckUploadConditional, "conditional create refused a second create of "+key+" (412): upload never overwrites a key"+kept)
	default:
		c.Warn(CheckUploadConditional, fmt.Sprintf("second conditional create of %s: %v (expected 412 Precondition Failed)%s", key, second, kept),
			"upload may not refuse a key that exists; use a store with conditional writes")
	}
}
