// Package landing is the landing bucket (an S3 bucket or prefix, or a local
// folder) as ingest sees it: the listing of files to load (skipping
// timelake's own objects, the quarantine prefix, hidden and partial files),
// when a local file is complete (Settle, shared with the gateway's spool),
// quarantine with an error report next to the kept copy (for any key the
// store holds), and the per-table ingest lease. Decoding a file's bytes is
// package decode's job.
package landing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/storage"
)

// ReservedPrefix holds timelake's own objects in the landing bucket (the
// ingest lease); listings for ingest skip it.
const ReservedPrefix = "_timelake/"

// DefaultQuarantinePrefix is where files that cannot be loaded are moved.
const DefaultQuarantinePrefix = "_rejected/"

// Bucket is the landing bucket (or folder) as ingest sees it.
type Bucket struct {
	Store storage.Store
	// QuarantinePrefix is where rejected files go ("" means _rejected/).
	QuarantinePrefix string
}

func (b *Bucket) quarantinePrefix() string {
	p := b.QuarantinePrefix
	if p == "" {
		p = DefaultQuarantinePrefix
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// QuarantineFolder is the prefix quarantined copies are kept below
// (QuarantinePrefix, else DefaultQuarantinePrefix), with its "/".
func (b *Bucket) QuarantineFolder() string { return b.quarantinePrefix() }

// partialSuffixes mark files still being written (write, then rename).
var partialSuffixes = []string{".tmp", ".part", ".partial", ".swp", "~"}

// Skipped reports whether key is never a file to load: timelake's own
// objects and the quarantine (at the root, and below any folder: a poller
// whose landing location is s3://bucket/prefix keeps them below prefix),
// hidden names (a path segment starting with ".", e.g. editor locks) and
// partial files (*.tmp, *.part, *.partial, *.swp, *~) that a writer renames
// when complete.
func (b *Bucket) Skipped(key string) bool {
	if strings.HasPrefix(key, b.quarantinePrefix()) {
		return true
	}
	reserved, quarantine := strings.TrimSuffix(ReservedPrefix, "/"), strings.TrimSuffix(DefaultQuarantinePrefix, "/")
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		if strings.HasPrefix(seg, ".") || (i < len(segs)-1 && (seg == reserved || seg == quarantine)) {
			return true
		}
	}
	return IsPartialName(key)
}

// IsPartialName reports whether a file name marks a file still being
// written (*.tmp, *.part, *.partial, *.swp, *~, any case): writers create
// it under such a name and rename it when complete.
func IsPartialName(name string) bool {
	lower := strings.ToLower(name)
	for _, suf := range partialSuffixes {
		if strings.HasSuffix(lower, suf) {
			return true
		}
	}
	return false
}

// List calls fn for each file to load below prefix, in key order, page by
// page, skipping the reserved and quarantine prefixes.
func (b *Bucket) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	return b.Store.List(ctx, prefix, func(o storage.ObjectInfo) error {
		if b.Skipped(o.Key) {
			return nil
		}
		return fn(o)
	})
}

// Report is the JSON error report written next to a quarantined file
// (<quarantined key>.error.json).
type Report struct {
	Key string `json:"key"` // original landing key
	// KeyBytes holds the key's bytes when they are not UTF-8 (a local file
	// name in another encoding), which Key, a JSON string, cannot.
	KeyBytes      []byte    `json:"key_bytes,omitempty"`
	QuarantinedTo string    `json:"quarantined_to"` // key of the kept copy
	Table         string    `json:"table,omitempty"`
	Reason        string    `json:"reason"` // one line: what failed
	Row           int64     `json:"row,omitempty"`
	Column        string    `json:"column,omitempty"`
	Value         string    `json:"value,omitempty"`
	Hint          string    `json:"hint,omitempty"` // how to fix it
	Size          int64     `json:"size"`
	ETag          string    `json:"etag,omitempty"`
	SHA256        string    `json:"sha256,omitempty"`
	At            time.Time `json:"at"`
	// LandedAt is when the file landed (LandedAt of its landing object),
	// kept so that a requeue puts it back with that time.
	LandedAt time.Time `json:"landed_at,omitzero"`
	Kind     string    `json:"kind,omitempty"` // what refused it: KindFile, KindRow, KindSetting or KindRows ("" before they were written)
	// SourceKey, SourceSHA256 and Rows are those of a rejects file
	// (KindRows, SetAside): the landing key and SHA-256 of the file its
	// rows were refused from, and each row's refusal, in the rejects
	// file's order (row i of the rejects file is Rows[i-1]).
	SourceKey    string               `json:"source_key,omitempty"`
	SourceSHA256 string               `json:"source_sha256,omitempty"`
	Rows         []decode.RejectedRow `json:"rejected_rows,omitempty"`
}

// Quarantine moves key to the quarantine prefix (QuarantineKey) and writes
// the report beside it, so a file that cannot be loaded is kept, never
// dropped. When that name is taken (a file with the same key quarantined
// before, or a rejects file set aside under it), the new copy gets a UTC
// timestamp suffix (claim). The report is written first, as a conditional
// create that claims the name, then the copy, then the file is deleted: a
// crash in between leaves the file in the landing bucket (and a report
// without a copy, which listings ignore and the next attempt replaces),
// never in neither place, and no copy or report of another file is ever
// overwritten. In a folder, the copy
// and the report keep the permission bits of the file. It returns the
// quarantined key.
func (b *Bucket) Quarantine(ctx context.Context, key string, rep Report) (string, error) {
	src, err := b.Store.Stat(ctx, key)
	if err != nil {
		return "", fmt.Errorf("quarantine %s: %w", key, err)
	}
	rep.Key = key
	if !utf8.ValidString(key) {
		rep.KeyBytes = []byte(key)
	}
	dst, err := b.claim(ctx, b.QuarantineKey(key), rep, src.Mode)
	if err != nil {
		return "", fmt.Errorf("quarantine %s: %w", key, err)
	}
	if err := b.Store.Copy(ctx, key, dst); err != nil {
		return "", fmt.Errorf("quarantine %s: %w", key, err)
	}
	if err := b.Store.Delete(ctx, key); err != nil {
		return "", fmt.Errorf("quarantine %s: %w", key, err)
	}
	return dst, nil
}

// claimTries bounds the names claim tries: the copy's name, then that name
// with a time suffix, one nanosecond later each time.
const claimTries = 16

// claim reserves a name for a quarantined copy or rejects file, dst or, when
// that is taken, dst with the time suffix of a second copy (rep.At, one
// nanosecond later on each try): a name is taken when an object holds it or
// the report of another landing key, and it is claimed by creating its
// report (rep, QuarantinedTo set to it) only if absent, so two files
// quarantined at once never get one name; a report of the same key without
// its copy (an attempt stopped between the two writes) is replaced. It
// returns the name claimed, whose report is written.
func (b *Bucket) claim(ctx context.Context, dst string, rep Report, mode fs.FileMode) (string, error) {
	name := dst
	for i := range claimTries {
		if i > 0 {
			name = dst + "." + rep.At.UTC().Add(time.Duration(i-1)).Format(copyTimeLayout)
		}
		if _, err := b.Store.Stat(ctx, name); err == nil {
			continue
		} else if !errors.Is(err, storage.ErrNotExist) {
			return "", err
		}
		rep.QuarantinedTo = name
		body, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return "", err
		}
		opts := storage.PutOptions{IfAbsent: true, ContentType: "application/json", Mode: mode}
		_, err = b.Store.Put(ctx, name+reportSuffix, bytes.NewReader(append(body, '\n')), opts)
		if errors.Is(err, storage.ErrPreconditionFailed) {
			// The report of the same file without its copy (checked
			// above): an earlier attempt stopped between the two writes, or
			// its report's write landed without its answer. That file is
			// still in the landing bucket (or its rows not committed): the
			// name is this attempt's.
			if prev, rerr := b.readReport(ctx, name+reportSuffix); rerr != nil || !sameFile(prev, rep) {
				continue
			}
			opts.IfAbsent = false
			_, err = b.Store.Put(ctx, name+reportSuffix, bytes.NewReader(append(body, '\n')), opts)
		}
		if err != nil {
			return "", fmt.Errorf("write report: %w", err)
		}
		return name, nil
	}
	return "", fmt.Errorf("%s and %d names with a time suffix are taken", dst, claimTries-1)
}

// sameFile reports whether two reports are of the same file: the same
// landing key, content (size, ETag, SHA-256) and, for rejects files, source.
func sameFile(a, b Report) bool {
	return a.Key == b.Key && bytes.Equal(a.KeyBytes, b.KeyBytes) && a.Kind == b.Kind && a.Size == b.Size && a.ETag == b.ETag &&
		a.SHA256 == b.SHA256 && a.SourceKey == b.SourceKey && a.SourceSHA256 == b.SourceSHA256
}

// copyTimeLayout is the UTC time Quarantine adds to the name of a second
// copy of one landing key (copySuffix matches it).
const copyTimeLayout = "20060102T150405.000000000Z"

// HashedFolder holds, below the quarantine prefix, the copies of files
// whose keys cannot be kept as they are (QuarantineKey). Its "_timelake"
// segment is one no landing key that ingest loads holds (Skipped), so no
// quarantined key can be mistaken for a hashed copy.
const HashedFolder = "_timelake/hashed/"

// QuarantineKey is where Quarantine keeps a copy of key: the quarantine
// prefix and the key, or, when that would not fit or is not a key
// timelake writes, the quarantine prefix, HashedFolder and the hex SHA-256
// of the key with its file type's extension (a fixed length of at most 88
// bytes after the prefix). The key is not kept when its copy's report, with
// the suffix of a second copy, would pass S3's 1,024 bytes
// (storage.MaxKeyBytes, with the key prefix of an S3 landing location) or
// have a path segment longer than a file name may
// be (storage.MaxNameBytes), or when it fails storage.ValidateKey (control
// characters, backslashes) or is not UTF-8, or when it ends as a report's
// name does (".error.json"): kept as it is, the copy would be taken for
// the report of another file, or overwritten by it. The report
// (Report.Key) keeps the key in every case.
func (b *Bucket) QuarantineKey(key string) string {
	dst := b.quarantinePrefix() + key
	full := dst // the key in the bucket, with the store's prefix
	if s3, ok := b.Store.(interface{ FullKey(string) string }); ok {
		full = s3.FullKey(dst)
	}
	suffix := len("."+copyTimeLayout) + len(reportSuffix)
	fits := len(full)+suffix <= storage.MaxKeyBytes && utf8.ValidString(key) && storage.ValidateKey(dst) == nil && !IsReport(key)
	for i, seg := range strings.Split(dst, "/") {
		n := len(seg)
		if i == strings.Count(dst, "/") {
			n += suffix
		}
		fits = fits && n <= storage.MaxNameBytes
	}
	if fits {
		return dst
	}
	sum := sha256.Sum256([]byte(key))
	return b.quarantinePrefix() + HashedFolder + hex.EncodeToString(sum[:]) + fileExt(key)
}

// hashedCopy reports whether a quarantined key is a hashed copy, whose
// landing key only its report knows.
func (b *Bucket) hashedCopy(quarantined string) bool {
	return strings.HasPrefix(quarantined, b.quarantinePrefix()+HashedFolder)
}

// fileExt is the extension of a landing file type that key ends in (any
// case), lower-cased: .csv.gz, .tsv.gz, .jsonl.gz, .ndjson.gz, .json.gz,
// .csv, .tsv, .jsonl, .ndjson, .json, .parquet, .gz; "" for none of them.
func fileExt(key string) string {
	lower := strings.ToLower(key)
	for _, ext := range []string{".csv.gz", ".tsv.gz", ".jsonl.gz", ".ndjson.gz", ".json.gz", ".csv", ".tsv", ".jsonl", ".ndjson", ".json", ".parquet", ".gz"} {
		if strings.HasSuffix(lower, ext) {
			return ext
		}
	}
	return ""
}

// RejectsKey is the landing key of the rejects file of the rows refused
// from key (--on-error skip-rows): key without its file type's extension,
// then ".rejects" and ext, the rejects file's (".csv", ".tsv", ".jsonl",
// ".parquet"), when key ends in ext (gw-7/a.csv gives gw-7/a.rejects.csv);
// else key whole, then ".rejects" and ext (gw-7/a.csv.gz gives
// gw-7/a.csv.gz.rejects.csv), so that the rows of a.csv and a.csv.gz are
// two files under two keys. Put back under it (landing requeue), the rows
// load as a new file.
func RejectsKey(key, ext string) string {
	if fe := fileExt(key); strings.EqualFold(fe, ext) {
		return key[:len(key)-len(fe)] + ".rejects" + ext
	}
	return key + ".rejects" + ext
}

// IsRejectsKey reports whether key is named as RejectsKey names rejects
// files: rows of another file, which landed with it.
func IsRejectsKey(key string) bool {
	for _, ext := range []string{".csv", ".tsv", ".parquet"} {
		if strings.HasSuffix(key, ".rejects"+ext) {
			return true
		}
	}
	return false
}

// SetAside keeps a rejects file (the rows refused from rep.SourceKey,
// size bytes of body) in the quarantine under QuarantineKey(key) with its
// report beside it, rep.Key being key and rep.SHA256 the body's: the rows
// are kept, never dropped, while the file's other rows load. A rejects
// file of the same source (key and SHA-256) and the same rows (SHA-256)
// kept before, under that name or one with a time suffix, is the same
// one, set aside again by a run that did not get to its commit: it is kept
// as it is (written again if only its report was). Other rows of the same
// source (a setting changed in between) are a rejects file of their own.
// Another file under the name (another source's rejects file, a
// quarantined file) keeps it: this one gets a name with a time suffix
// (claim). It returns the key of the kept copy.
func (b *Bucket) SetAside(ctx context.Context, key string, body io.ReadSeeker, size int64, rep Report) (string, error) {
	dst := b.QuarantineKey(key)
	h := sha256.New()
	if _, err := io.Copy(h, body); err != nil {
		return "", fmt.Errorf("set aside rows of %s: %w", rep.SourceKey, err)
	}
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("set aside rows of %s: %w", rep.SourceKey, err)
	}
	rep.Key, rep.Size, rep.SHA256 = key, size, hex.EncodeToString(h.Sum(nil))
	name, err := b.setAsideBefore(ctx, dst, rep)
	if err != nil {
		return "", fmt.Errorf("set aside rows of %s: %w", rep.SourceKey, err)
	}
	if name != "" {
		if _, err := b.Store.Stat(ctx, name); err == nil {
			return name, nil
		} else if !errors.Is(err, storage.ErrNotExist) {
			return "", fmt.Errorf("set aside rows of %s: %w", rep.SourceKey, err)
		}
	} else if name, err = b.claim(ctx, dst, rep, 0); err != nil {
		return "", fmt.Errorf("set aside rows of %s: %w", rep.SourceKey, err)
	}
	if _, err := b.Store.Put(ctx, name, body, storage.PutOptions{}); err != nil {
		return "", fmt.Errorf("set aside rows of %s: %w", rep.SourceKey, err)
	}
	return name, nil
}

// setAsideBefore finds the rejects file of rep's source kept before under
// dst or dst with a time suffix: the name its report names; "" when none.
func (b *Bucket) setAsideBefore(ctx context.Context, dst string, rep Report) (string, error) {
	var reports []string
	err := b.Store.List(ctx, dst, func(o storage.ObjectInfo) error {
		if copyKey, ok := strings.CutSuffix(o.Key, reportSuffix); ok && copySuffix.ReplaceAllString(copyKey, "") == dst {
			reports = append(reports, o.Key)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	for _, r := range reports {
		prev, err := b.readReport(ctx, r)
		if err == nil && sameFile(prev, rep) {
			return strings.TrimSuffix(r, reportSuffix), nil
		}
	}
	return "", nil
}

// readReport reads a quarantine report.
func (b *Bucket) readReport(ctx context.Context, key string) (Report, error) {
	var rep Report
	body, _, err := storage.ReadAll(ctx, b.Store, key)
	if err != nil {
		return rep, err
	}
	err = json.Unmarshal(body, &rep)
	return rep, err
}
