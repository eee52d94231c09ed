package lake

import (
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
)

// eachManifestEntry calls fn with each entry of manifest mf, in file
// order, decoding one Avro block at a time (iceberg-go's
// ManifestFile.Entries) rather than the whole manifest at once, so that
// compaction, expiry and orphan removal hold one manifest's entries only
// where they need them. discardDeleted skips entries of status DELETED
// (Iceberg spec, "Manifests": status 2). Errors: opening the manifest (a
// missing one as fs.Open reports it, which isNotExist recognises),
// decoding it, and fn's, returned as they are.
func eachManifestEntry(fs icebergio.IO, mf iceberg.ManifestFile, discardDeleted bool, fn func(iceberg.ManifestEntry) error) error {
	for e, err := range mf.Entries(fs, discardDeleted) {
		if err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// manifestEntries is every entry of mf, for the callers that rewrite a
// manifest or keep its files (eachManifestEntry's rules and errors).
func manifestEntries(fs icebergio.IO, mf iceberg.ManifestFile, discardDeleted bool) ([]iceberg.ManifestEntry, error) {
	var out []iceberg.ManifestEntry
	err := eachManifestEntry(fs, mf, discardDeleted, func(e iceberg.ManifestEntry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}
