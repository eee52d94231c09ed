package landing

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/timelake/timelake/internal/storage"
)

// eachRejectedReads bounds the reports EachRejected reads at once.
const eachRejectedReads = 16

// EachRejected calls fn with each quarantined file as Rejected lists it,
// without holding the quarantine in memory: the listing is streamed and
// each copy's report read as it comes (up to eachRejectedReads at once),
// so fn is called from several goroutines, one file at a time per call,
// in no particular order. For an audit of a quarantine of any size.
// Errors: listing or reading the store, fn's (which stops the listing).
func (b *Bucket) EachRejected(ctx context.Context, fn func(Rejected) error) error {
	prefix := b.quarantinePrefix()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(eachRejectedReads)
	err := b.Store.List(gctx, prefix, func(o storage.ObjectInfo) error {
		if strings.HasSuffix(o.Key, reportSuffix) {
			return nil
		}
		if err := gctx.Err(); err != nil {
			return err
		}
		g.Go(func() error {
			r, err := b.rejectedCopy(gctx, o, "", "no report (the quarantine was interrupted before it was written, or the report was removed)")
			if err != nil {
				return err
			}
			return fn(r)
		})
		return nil
	})
	if werr := g.Wait(); werr != nil {
		return werr
	}
	if err != nil {
		return fmt.Errorf("list %s of %s: %w", prefix, b.Store.URI(), err)
	}
	return nil
}

// OriginalKey is the landing key a quarantined copy's key came from (the
// copy's path below the quarantine prefix, without the time suffix of a
// second copy), as Rejected works it out when a copy has no report; ok is
// false for a key outside the quarantine prefix, and for a copy named by a
// hash of its key (HashedFolder), which only its report knows.
func (b *Bucket) OriginalKey(copyKey string) (string, bool) {
	rest, ok := strings.CutPrefix(copyKey, b.quarantinePrefix())
	if !ok || b.hashedCopy(copyKey) {
		return "", false
	}
	return copySuffix.ReplaceAllString(rest, ""), true
}

// IsReport reports whether a key below the quarantine prefix is a report
// (<copy>.error.json) rather than a quarantined copy.
func IsReport(key string) bool { return strings.HasSuffix(key, reportSuffix) }

// QuarantineKeyPrefix is where the bucket's quarantined files are,
// ending with "/" (_rejected/ unless QuarantinePrefix says otherwise).
func (b *Bucket) QuarantineKeyPrefix() string { return b.quarantinePrefix() }
