package storage

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Location is a parsed store root: an S3 bucket with an optional key prefix,
// or a local folder.
type Location struct {
	Bucket string // S3 bucket; empty for a local folder
	Prefix string // S3 key prefix without leading or trailing slash
	Dir    string // absolute local folder; empty for S3
}

// IsS3 reports whether the location is an S3 bucket.
func (l Location) IsS3() bool { return l.Bucket != "" }

// String renders the location as s3://bucket/prefix or the absolute folder.
func (l Location) String() string {
	if !l.IsS3() {
		return l.Dir
	}
	if l.Prefix == "" {
		return "s3://" + l.Bucket
	}
	return "s3://" + l.Bucket + "/" + l.Prefix
}

// bucketName follows the S3 general purpose bucket naming rules (3-63
// characters, lowercase letters, digits, dots and hyphens).
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// ParseLocation parses a warehouse or landing setting. Accepted forms:
//   - s3://bucket or s3://bucket/prefix (also s3a://)
//   - file:///absolute/path
//   - a path containing a slash, or starting with "." or "~": a local folder
//     (not a mistyped URL of those schemes, such as s3:/landing,
//     s3//landing or S3://landing: refused with what was meant)
//   - a bare word: an S3 bucket name when bareIsBucket (LANDING_BUCKET holds
//     a bucket name in the public docs), otherwise a local folder. A bare
//     word that names a folder in the current directory is refused with
//     "did you mean ./name?" (it reads the file system for that); so is a
//     bare word and a slash (landing/) that names no folder, with "did
//     you mean s3://landing?".
func ParseLocation(s string, bareIsBucket bool) (Location, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Location{}, errors.New("empty location")
	}
	if strings.HasPrefix(s, "s3://") || strings.HasPrefix(s, "s3a://") {
		u, err := url.Parse(s)
		if err != nil {
			return Location{}, fmt.Errorf("parse %q: %w", s, err)
		}
		return s3Location(s, u.Host, u.Path)
	}
	if strings.HasPrefix(s, "file://") {
		u, err := url.Parse(s)
		if err != nil {
			return Location{}, fmt.Errorf("parse %q: %w", s, err)
		}
		return localLocation(u.Path)
	}
	if fix, ok := schemeTypo(s); ok {
		// s3:/landing or s3//landing would otherwise be a folder named
		// "s3:" or "s3" here.
		return Location{}, fmt.Errorf("location %q looks like a mistyped URL: did you mean %s? (a folder of that name is written ./%s)", s, fix, s)
	}
	if strings.Contains(s, "://") {
		return Location{}, fmt.Errorf("unsupported location %q (expected s3://bucket/prefix or a local folder)", s)
	}

	if word := strings.TrimRight(s, "/"); bareIsBucket && word != s && bucketName.MatchString(word) {
		// landing/ is a bucket name with a slash after it, or a folder.
		if fi, err := os.Stat(word); err != nil || !fi.IsDir() {
			return Location{}, fmt.Errorf("%q names no folder here: did you mean the bucket s3://%s? (a new folder is written ./%s)", s, word, word)
		}
	}
	if bareIsBucket && !strings.ContainsAny(s, `/\`) && !strings.HasPrefix(s, ".") && !strings.HasPrefix(s, "~") {
		if fi, err := os.Stat(s); err == nil && fi.IsDir() {
			// The user most likely means the folder: a bucket of the same
			// name would be reached through the network, with credentials.
			return Location{}, fmt.Errorf("%q names the S3 bucket %s, but ./%s is a folder here: did you mean ./%s? (write s3://%s for the bucket)",
				s, s, s, s, s)
		}
		return s3Location(s, s, "")
	}
	return localLocation(s)
}

// schemeTypo reports whether s is a URL of a scheme timelake reads (s3,
// s3a, file) mistyped: the scheme in capitals (S3://), without its colon
// (s3//landing) or its "//" (s3:/landing, s3:landing); and what was meant.
// Correct URLs (lowercase scheme, "://") are not typos.
func schemeTypo(s string) (string, bool) {
	for _, scheme := range []string{"s3a", "s3", "file"} {
		if len(s) <= len(scheme) || !strings.EqualFold(s[:len(scheme)], scheme) {
			continue
		}
		rest := s[len(scheme):]
		switch {
		case strings.HasPrefix(rest, "://") && s[:len(scheme)] == scheme:
			return "", false // the URL itself
		case strings.HasPrefix(rest, ":"):
			rest = rest[1:]
		case strings.HasPrefix(rest, "//"), strings.HasPrefix(rest, `\`):
		default:
			continue // a name that starts with the letters (s3-mirror, files)
		}
		rest = strings.TrimLeft(rest, `/\`)
		if scheme == "file" {
			return "file:///" + rest, true
		}
		return scheme + "://" + rest, true
	}
	return "", false
}

// ExplicitFolder reports whether setting s names a local folder in a way
// that cannot be read as a bucket: a file:// URL, an absolute path, or a
// path from the home folder (~/). A relative path such as my-lake/warehouse
// could be a bucket and prefix written without s3://.
func ExplicitFolder(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "file://") || filepath.IsAbs(s) || strings.HasPrefix(s, "~/")
}

func s3Location(orig, bucket, prefix string) (Location, error) {
	if !bucketName.MatchString(bucket) {
		return Location{}, fmt.Errorf("invalid bucket name %q in %q (S3 bucket names are 3-63 lowercase letters, digits, dots and hyphens)", bucket, orig)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		if err := ValidateKey(prefix); err != nil {
			return Location{}, fmt.Errorf("invalid prefix in %q: %w", orig, err)
		}
	}
	return Location{Bucket: bucket, Prefix: prefix}, nil
}

func localLocation(p string) (Location, error) {
	if strings.HasPrefix(p, "~/") {
		home, err := userHomeDir()
		if err != nil {
			return Location{}, err
		}
		p = filepath.Join(home, p[2:])
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return Location{}, fmt.Errorf("resolve folder %q: %w", p, err)
	}
	return Location{Dir: abs}, nil
}

// Overlaps reports whether one location lies inside the other (or they are
// the same): the same bucket with one prefix below the other, or one folder
// within the other, after following symbolic links (folders are compared as
// the file system resolves them, so a link into the landing folder is
// inside it). A landing location must not overlap the warehouse, or ingest
// would load the table's own files.
func Overlaps(a, b Location) bool {
	if a.IsS3() != b.IsS3() {
		return false
	}
	if a.IsS3() {
		if a.Bucket != b.Bucket {
			return false
		}
		return within(a.Prefix, b.Prefix) || within(b.Prefix, a.Prefix)
	}
	ad, bd := filepath.ToSlash(resolvedDir(a.Dir)), filepath.ToSlash(resolvedDir(b.Dir))
	return within(ad, bd) || within(bd, ad)
}

// resolvedDir returns the absolute folder dir with symbolic links
// resolved in its longest existing part (the rest may not exist yet).
func resolvedDir(dir string) string {
	rest := ""
	for d := filepath.Clean(dir); ; {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return filepath.Clean(dir)
		}
		rest = filepath.Join(filepath.Base(d), rest)
		d = parent
	}
}

// within reports whether slash path p is parent or below it.
func within(p, parent string) bool {
	parent = strings.TrimSuffix(parent, "/")
	return parent == "" || p == parent || strings.HasPrefix(p, parent+"/")
}
