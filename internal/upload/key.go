package upload

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/timelake/timelake/internal/storage"
)

// Key scheme (docs/gateways.md): <prefix>/<gateway>/<time>-<hash><ext>, e.g.
// gateway-7/20260105T100000Z-1a2b3c4d.csv.
const (
	// TimeFormat is the layout of the time in generated keys: ISO 8601 basic
	// format, UTC, whole seconds. Keys of one gateway sort by time, so
	// ingest (which loads in key order) loads a gateway's files oldest first.
	TimeFormat = "20060102T150405Z"
	// HashChars is the number of hex characters of the file's SHA-256 in
	// generated keys (32 bits: two different files of one gateway and
	// second collide with probability 2^-32, and a collision is refused,
	// never overwritten).
	HashChars = 8
)

// gatewayName is one key segment a gateway can be named by.
var gatewayName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidateGateway checks a gateway name: 1-128 letters, digits, dots,
// hyphens and underscores, starting with a letter or digit (a single key
// segment).
func ValidateGateway(name string) error {
	if !gatewayName.MatchString(name) {
		return fmt.Errorf("invalid gateway name %q: use 1-128 letters, digits, '.', '-' or '_', starting with a letter or digit", name)
	}
	return nil
}

// NormalizePrefix trims slashes from a key prefix and validates it with
// storage.ValidateKey; "" stays "".
func NormalizePrefix(prefix string) (string, error) {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return "", nil
	}
	if err := storage.ValidateKey(prefix); err != nil {
		return "", fmt.Errorf("prefix: %w", err)
	}
	return prefix, nil
}

// Ext returns the extension a generated key keeps: the file name's last
// extension, or its last two when the last is ".gz" (".csv.gz"), lower-cased;
// "" when the name has none.
func Ext(name string) string {
	_, ext := splitExt(filepath.Base(name))
	return strings.ToLower(ext)
}

// splitExt splits a base name before the extension Ext keeps. A leading dot
// (".profile") does not start an extension.
func splitExt(base string) (stem, ext string) {
	stem = base
	for i := 0; i < 2; i++ {
		e := path.Ext(stem)
		if e == "" || e == stem || (i == 1 && !strings.EqualFold(ext, ".gz")) {
			break
		}
		stem, ext = strings.TrimSuffix(stem, e), e+ext
	}
	return stem, ext
}

// GeneratedKey builds the default key of a file:
// [prefix/]gateway/<t in TimeFormat>-<first HashChars hex of sha256hex><ext>.
// The same file (same modification time and bytes) always gets the same
// key, which makes retries idempotent.
func GeneratedKey(prefix, gateway string, t time.Time, sha256hex, ext string) (string, error) {
	if err := ValidateGateway(gateway); err != nil {
		return "", err
	}
	if len(sha256hex) < HashChars {
		return "", errors.New("generated key: short SHA-256")
	}
	key := gateway + "/" + t.UTC().Format(TimeFormat) + "-" + sha256hex[:HashChars] + ext
	return JoinKey(prefix, key)
}

// JoinKey prepends prefix (may be "") to key and validates the result with
// storage.ValidateKey (no leading slash, no "." or ".." segments, no control
// characters, at most storage.MaxKeyBytes bytes: the S3 key limit).
func JoinKey(prefix, key string) (string, error) {
	if prefix != "" {
		key = strings.TrimSuffix(prefix, "/") + "/" + key
	}
	if err := storage.ValidateKey(key); err != nil {
		return "", err
	}
	return key, nil
}
