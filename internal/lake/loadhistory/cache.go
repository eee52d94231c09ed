package loadhistory

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
)

// Cache is the folder on local disk that keeps one table's segments and
// their indexes (IndexSuffix) between runs: segments are immutable, so a
// cron poller downloads each once. Every file of it is read, written and
// removed through an os.Root of the folder, so that no name and no link
// leads out of it. The zero Cache keeps nothing.
type Cache struct {
	folder string
}

// NewCache is the cache of the segments of table (its name as printed)
// at location in the cache folder cacheDir:
// <cacheDir>/load-history/<ns>.<table>-<hash of the table location>. The
// zero Cache when cacheDir is "".
func NewCache(cacheDir, table, location string) Cache {
	if cacheDir == "" {
		return Cache{}
	}
	return Cache{folder: filepath.Join(cacheDir, "load-history", fmt.Sprintf("%s-%016x", table, Fingerprint(location)))}
}

// Folder is the cache's folder, "" for the zero Cache.
func (c Cache) Folder() string { return c.folder }

// Path is where the cached file name is kept, "" for the zero Cache.
func (c Cache) Path(name string) string {
	if c.folder == "" {
		return ""
	}
	return filepath.Join(c.folder, name)
}

// root opens the cache's folder (made first when create). An error for the
// zero Cache.
func (c Cache) root(create bool) (*os.Root, error) {
	if c.folder == "" {
		return nil, errors.New("no cache folder")
	}
	if create {
		if err := os.MkdirAll(c.folder, 0o700); err != nil {
			return nil, err
		}
	}
	return os.OpenRoot(c.folder)
}

// Read reads the cached file name (a segment, or a segment's name with
// IndexSuffix).
func (c Cache) Read(name string) ([]byte, error) {
	r, err := c.root(false)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadFile(name)
}

// Write keeps body as the cached file name, whole or not at all (nothing
// for the zero Cache).
func (c Cache) Write(name string, body []byte) error {
	if c.folder == "" {
		return nil
	}
	r, err := c.root(true)
	if err != nil {
		return err
	}
	defer r.Close()
	return writeFileAtomic(r, name, body)
}

// Remove removes the cached copy of segment name and its index.
func (c Cache) Remove(name string) {
	if r, err := c.root(false); err == nil {
		r.Remove(name)
		r.Remove(name + IndexSuffix)
		r.Close()
	}
}

// Prune removes the cached segments (and indexes) that keep does not name
// (merged away or expired): the cache holds one table's history once.
func (c Cache) Prune(keep []SegmentInfo) {
	r, err := c.root(false)
	if err != nil {
		return
	}
	defer r.Close()
	kept := map[string]bool{}
	for _, s := range keep {
		kept[s.Name] = true
		kept[s.Name+IndexSuffix] = true
	}
	entries, err := iofs.ReadDir(r.FS(), ".")
	if err != nil {
		return
	}
	for _, e := range entries {
		if !kept[e.Name()] && (strings.HasPrefix(e.Name(), HistoryPrefix) || strings.HasPrefix(e.Name(), OutcomePrefix)) {
			r.Remove(e.Name())
		}
	}
}

// writeFileAtomic writes body to name in r through a temporary file and a
// rename, so a reader never sees part of it.
func writeFileAtomic(r *os.Root, name string, body []byte) error {
	tmp := ".tmp-" + uuid.NewString()
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(body)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		r.Remove(tmp)
		return err
	}
	if err := r.Rename(tmp, name); err != nil {
		r.Remove(tmp)
		return err
	}
	return nil
}
