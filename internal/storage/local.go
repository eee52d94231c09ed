package storage

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// tempPrefix marks in-progress files of a LocalStore, lockSuffix the lock
// files of its compare-and-swaps; List never returns them.
const (
	tempPrefix = ".tl-tmp-"
	lockSuffix = ".tl-lock"
)

// lockStale is the age after which a left-over IfMatch lock file (from a
// process that died inside the few microseconds it holds one) is broken.
const lockStale = 30 * time.Second

var userHomeDir = os.UserHomeDir

// LocalStore is a Store on a local folder. Writes go to a temporary file in
// the target folder first and are published atomically: by rename, or by
// hard link for IfAbsent (link fails if the name exists, like O_EXCL).
//
// Nothing outside the folder is ever read, written or deleted: every access
// goes through an os.Root of the folder (Go's openat-based confinement: no
// key, and no link, leads out of it), and a key whose path holds a
// symbolic link below the folder is refused (ErrSymlink) and never listed,
// so a link cannot give a file a second key either. The folder itself may
// be a link. A link swapped in between that check and the open can only
// lead to a file inside the folder (docs/ingest.md, "Symbolic links").
type LocalStore struct {
	root string
	// keepDepth is how many levels of folders below the root Delete
	// leaves in place when it empties them (KeepFolders).
	keepDepth int
	// links receives the symbolic links a listing skipped (WarnLinks).
	links *slog.Logger
	// dirFS is the file system a listing walks in the folder's Root; nil
	// is the Root's own (tests give one that fails a folder).
	dirFS func(*os.Root) fs.FS
}

// UnlistedError is returned by LocalStore.List after it listed everything
// else: the folders below the store's folder it could not read (permission
// denied, an I/O error) and the files it could not look at, each with its
// key and its error. The listing went on without them; the caller decides
// whether a listing with gaps will do (ingest reports each gap and loads
// the rest). It unwraps to the errors of the gaps.
type UnlistedError struct {
	Root string     // the store's folder
	Gaps []Unlisted // in key order
}

// Unlisted is one gap of a listing: a folder (Key ends in "/") or a file.
type Unlisted struct {
	Key string
	Err error
}

func (e *UnlistedError) Error() string {
	parts := make([]string, len(e.Gaps))
	for i, g := range e.Gaps {
		parts[i] = fmt.Sprintf("%q: %v", g.Key, g.Err)
	}
	return fmt.Sprintf("%s: could not list %s", e.Root, strings.Join(parts, "; "))
}

func (e *UnlistedError) Unwrap() []error {
	errs := make([]error, len(e.Gaps))
	for i, g := range e.Gaps {
		errs[i] = g.Err
	}
	return errs
}

// ErrSymlink is returned (wrapped, with the key and the link) for a key of a
// LocalStore whose path holds a symbolic link below the store's folder.
var ErrSymlink = errors.New("symbolic link (timelake does not follow links inside a local folder)")

// WarnLinks makes List log a warning naming each symbolic link it skips
// (a link is never a file to load, nor a folder to look into), and
// returns s.
func (s *LocalStore) WarnLinks(log *slog.Logger) *LocalStore {
	s.links = log
	return s
}

// KeepFolders makes Delete leave the folders up to depth levels below the
// root in place when it empties them, and returns s. A landing folder keeps
// the gateways' folders (landing/gateway-7/, landing/site-berlin/gateway-7/)
// that people and gateways create and write into; deeper folders (dates
// under a gateway) are still removed, so that listings do not walk years
// of empty folders.
func (s *LocalStore) KeepFolders(depth int) *LocalStore {
	s.keepDepth = depth
	return s
}

var _ Store = (*LocalStore)(nil)

// NewLocalStore returns a store rooted at dir. It does not create dir:
// writes create the folders they need, and a listing of a missing root is
// ErrNotExist, so a mistyped folder is an error, not an empty store.
func NewLocalStore(dir string) (*LocalStore, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return &LocalStore{root: abs}, nil
}

// openRoot opens the folder for one operation; create makes it first.
// A missing folder is ErrNotExist.
func (s *LocalStore) openRoot(create bool) (*os.Root, error) {
	if create {
		if err := os.MkdirAll(s.root, 0o755); err != nil {
			return nil, err
		}
	}
	r, err := os.OpenRoot(s.root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("folder %s: %w", s.root, ErrNotExist)
		}
		return nil, err
	}
	return r, nil
}

// CheckLinks refuses key (a slash-separated path below r) when a folder on
// its path, or the key itself, is a symbolic link: an error wrapping
// ErrSymlink that names the link. A part that does not exist ends the
// check: the operation then finds it missing, or creates it. Other
// timelake folders reached through an os.Root (a local table's files) use
// it too.
func CheckLinks(r *os.Root, key string) error {
	for i := 0; i <= len(key); i++ {
		if i < len(key) && key[i] != '/' {
			continue
		}
		fi, err := r.Lstat(filepath.FromSlash(key[:i]))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a %w", key[:i], ErrSymlink)
		}
	}
	return nil
}

// open validates key, opens the folder and checks key's path for links:
// the Root to work in (the caller closes it) and key as a path below it.
// A done ctx is its error.
func (s *LocalStore) open(ctx context.Context, op, key string, create bool) (*os.Root, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	if err := ValidateObjectKey(key); err != nil {
		return nil, "", err
	}
	r, err := s.openRoot(create)
	if err != nil {
		return nil, "", mapOSErr(op, key, err)
	}
	if err := CheckLinks(r, key); err != nil {
		r.Close()
		return nil, "", mapOSErr(op, key, err)
	}
	return r, filepath.FromSlash(key), nil
}

// StaleTemp finds the temporary files of writes (and the lock files of
// compare-and-swaps) below prefix last modified before before: a process
// killed while it wrote leaves them, and List never shows them. Unless
// dryRun, it removes them. It returns what it found, with their keys.
func (s *LocalStore) StaleTemp(ctx context.Context, prefix string, before time.Time, dryRun bool) ([]ObjectInfo, error) {
	var out []ObjectInfo
	r, err := s.openRoot(false)
	if err != nil {
		return nil, nil // no folder, no temporary files
	}
	defer r.Close()
	err = s.walk(ctx, r, prefix, func(string, error) {}, func(p, key string, d fs.DirEntry) error { // a folder it cannot read holds none it could remove
		if !strings.HasPrefix(d.Name(), tempPrefix) && !strings.HasSuffix(d.Name(), lockSuffix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil || !fi.ModTime().Before(before) {
			return nil
		}
		if !dryRun {
			if err := r.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove %s: %w", key, err)
			}
		}
		out = append(out, localInfo(key, fi))
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return out, fmt.Errorf("temporary files of %s: %w", s.root, err)
	}
	return out, nil
}

// walk calls fn with the path (below r) and key of every regular file of
// r whose key starts with prefix (temporary and lock files included),
// skipping folders that cannot hold such a key. A folder below r that
// cannot be read is given to unreadable (its key with a trailing "/") and
// left out; the folder itself failing is walk's error. It never follows a
// link: WalkDir does not, and r keeps every step inside the folder.
func (s *LocalStore) walk(ctx context.Context, r *os.Root, prefix string, unreadable func(key string, err error), fn func(path, key string, d fs.DirEntry) error) error {
	fsys := r.FS()
	if s.dirFS != nil {
		fsys = s.dirFS(r)
	}
	return fs.WalkDir(fsys, ".", func(key string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if key == "." || ctx.Err() != nil {
				return err
			}
			unreadable(key+"/", err)
			return fs.SkipDir
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			// Skip folders that cannot hold a key with this prefix.
			if key != "." && !strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 && s.links != nil && !strings.HasPrefix(d.Name(), tempPrefix) {
			s.links.Warn("not loaded: a symbolic link (timelake does not follow links inside a local folder)",
				"key", key, "folder", s.root)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return fn(filepath.FromSlash(key), key, d)
	})
}

// URI returns the absolute folder.
func (s *LocalStore) URI() string { return s.root }

// Path returns the local file path of key.
func (s *LocalStore) Path(key string) string {
	return filepath.Join(s.root, filepath.FromSlash(key))
}

func localInfo(key string, fi fs.FileInfo) ObjectInfo {
	mt := fi.ModTime().UTC()
	return ObjectInfo{
		Key:          key,
		Size:         fi.Size(),
		ETag:         fmt.Sprintf("%x-%x", fi.Size(), mt.UnixNano()),
		LastModified: mt,
		Changed:      ChangeTime(fi),
		Mode:         fi.Mode().Perm(),
	}
}

func mapOSErr(op, key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s %s: %w", op, key, ErrNotExist)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

// List walks the folder and reports regular files in key order. A folder
// or file below it that cannot be read does not stop it: the others are
// reported, and then the error is an *UnlistedError naming each gap.
func (s *LocalStore) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	r, err := s.openRoot(false)
	if err != nil {
		return fmt.Errorf("folder %s: %w", s.root, ErrNotExist)
	}
	defer r.Close()
	var infos []ObjectInfo
	var gaps []Unlisted
	gap := func(key string, err error) { gaps = append(gaps, Unlisted{Key: key, Err: err}) }
	err = s.walk(ctx, r, prefix, gap, func(_, key string, d fs.DirEntry) error {
		if strings.HasPrefix(d.Name(), tempPrefix) || strings.HasSuffix(d.Name(), lockSuffix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted while listing
			}
			gap(key, err)
			return nil
		}
		infos = append(infos, localInfo(key, fi))
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", s.root, err)
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
	for _, info := range infos {
		if err := fn(info); err != nil {
			return err
		}
	}
	if len(gaps) > 0 {
		sort.Slice(gaps, func(i, j int) bool { return gaps[i].Key < gaps[j].Key })
		return &UnlistedError{Root: s.root, Gaps: gaps}
	}
	return nil
}

// Get opens the file for key.
func (s *LocalStore) Get(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error) {
	r, p, err := s.open(ctx, "get", key, false)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	defer r.Close()
	// Without blocking: a named pipe put under a key would hold the open
	// until something writes to it.
	f, err := r.OpenFile(p, openReadFlags, 0)
	if err != nil {
		return nil, ObjectInfo{}, mapOSErr("get", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, ObjectInfo{}, mapOSErr("get", key, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, ObjectInfo{}, fmt.Errorf("get %s: not a regular file: %w", key, ErrNotExist)
	}
	return f, localInfo(key, fi), nil
}

// Stat returns the file's info.
func (s *LocalStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	r, p, err := s.open(ctx, "stat", key, false)
	if err != nil {
		return ObjectInfo{}, err
	}
	defer r.Close()
	return stat(r, key, p)
}

// stat is Stat in an open folder.
func stat(r *os.Root, key, p string) (ObjectInfo, error) {
	fi, err := r.Stat(p)
	if err != nil {
		return ObjectInfo{}, mapOSErr("stat", key, err)
	}
	if !fi.Mode().IsRegular() { // a folder, a named pipe, a device: not an object
		return ObjectInfo{}, fmt.Errorf("stat %s: not a regular file: %w", key, ErrNotExist)
	}
	return localInfo(key, fi), nil
}

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeTemp copies body into a new temporary file next to dst (a path in
// r), with permission bits mode (0: 0644 less the umask).
func writeTemp(ctx context.Context, r *os.Root, dst string, body io.Reader, mode fs.FileMode) (string, error) {
	name := tempPrefix + filepath.Base(dst) + "-" + randomSuffix()
	if len(name) > MaxNameBytes {
		name = tempPrefix + randomSuffix() // the file's name is as long as a name may be
	}
	tmp := filepath.Join(filepath.Dir(dst), name)
	var f *os.File
	for attempt := 0; ; attempt++ {
		// A concurrent Delete of a folder's last file removes the folder
		// (and its empty parents) between the two steps; once the temp file
		// is in it, it is no longer empty. It may also remove the folder
		// while MkdirAll finds it there and then looks at what it is, which
		// MkdirAll reports as the folder existing (EEXIST).
		err := r.MkdirAll(filepath.Dir(dst), 0o755)
		removed := errors.Is(err, fs.ErrExist)
		if err == nil {
			f, err = r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err == nil {
				break
			}
		}
		if !errors.Is(err, fs.ErrNotExist) && !removed || attempt == 10 {
			return "", err
		}
	}
	var err error
	if mode != 0 {
		err = f.Chmod(mode.Perm()) // exactly mode: the umask does not apply
	}
	if err == nil {
		_, err = io.Copy(f, ctxReader{ctx, body})
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// Put publishes body under key atomically, honouring IfAbsent and IfMatch.
func (s *LocalStore) Put(ctx context.Context, key string, body io.ReadSeeker, opts PutOptions) (ObjectInfo, error) {
	r, p, err := s.open(ctx, "put", key, true)
	if err != nil {
		return ObjectInfo{}, err
	}
	defer r.Close()
	tmp, err := writeTemp(ctx, r, p, body, opts.Mode)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("put %s: %w", key, err)
	}
	defer r.Remove(tmp)
	if !opts.ModTime.IsZero() {
		if err := r.Chtimes(tmp, opts.ModTime, opts.ModTime); err != nil {
			return ObjectInfo{}, fmt.Errorf("put %s: %w", key, err)
		}
	}
	switch {
	case opts.IfAbsent:
		if err := r.Link(tmp, p); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return ObjectInfo{}, fmt.Errorf("put %s: %w", key, ErrPreconditionFailed)
			}
			return ObjectInfo{}, fmt.Errorf("put %s: %w", key, err)
		}
	case opts.IfMatch != "":
		if err := s.swap(ctx, r, key, p, tmp, opts.IfMatch); err != nil {
			return ObjectInfo{}, err
		}
	default:
		if err := r.Rename(tmp, p); err != nil {
			return ObjectInfo{}, fmt.Errorf("put %s: %w", key, err)
		}
	}
	return stat(r, key, p)
}

// swap replaces p by tmp if p's ETag is etag, under the key's lock so
// that two compare-and-swaps cannot interleave.
func (s *LocalStore) swap(ctx context.Context, r *os.Root, key, p, tmp, etag string) error {
	err := locked(ctx, r, key, p, func() error {
		cur, err := stat(r, key, p)
		if err != nil {
			if errors.Is(err, ErrNotExist) {
				return fmt.Errorf("put %s: %w", key, ErrPreconditionFailed)
			}
			return err
		}
		if cur.ETag != etag {
			return fmt.Errorf("put %s: %w", key, ErrPreconditionFailed)
		}
		if err := r.Rename(tmp, p); err != nil {
			return fmt.Errorf("put %s: %w", key, err)
		}
		return nil
	})
	if errors.Is(err, ErrNotExist) {
		return fmt.Errorf("put %s: %w", key, ErrPreconditionFailed) // the folder, so the object, is gone
	}
	return err
}

// locked runs fn while holding the exclusive lock file of key (path p in
// r), breaking a lock left by a process that died while holding it.
func locked(ctx context.Context, r *os.Root, key, p string, fn func() error) error {
	lock := lockPath(p)
	for {
		f, err := r.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			break
		}
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w", key, ErrNotExist) // the folder is gone
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: lock: %w", key, err)
		}
		if fi, serr := r.Lstat(lock); serr == nil && time.Since(fi.ModTime()) > lockStale {
			r.Remove(lock)
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	defer r.Remove(lock)
	return fn()
}

// lockPath is the lock file of the file at p: its name and lockSuffix, or,
// when that is longer than a file name may be, a hash of its name.
func lockPath(p string) string {
	base := filepath.Base(p)
	if len(base)+len(lockSuffix) <= MaxNameBytes {
		return p + lockSuffix
	}
	sum := sha256.Sum256([]byte(base))
	return filepath.Join(filepath.Dir(p), hex.EncodeToString(sum[:16])+lockSuffix)
}

// DeleteIfMatch removes the file if its ETag (size and modification time)
// is etag, under the key's lock, then any folders it leaves empty.
func (s *LocalStore) DeleteIfMatch(ctx context.Context, key, etag string) error {
	r, p, err := s.open(ctx, "delete", key, false)
	if errors.Is(err, ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := r.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	err = locked(ctx, r, key, p, func() error {
		cur, err := stat(r, key, p)
		if errors.Is(err, ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if cur.ETag != etag {
			return fmt.Errorf("delete %s: %w", key, ErrPreconditionFailed)
		}
		if err := r.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete %s: %w", key, err)
		}
		return nil
	})
	if errors.Is(err, ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	s.removeEmptyParents(r, key)
	return nil
}

// Copy copies src to dst through a temporary file, with the permission
// bits of src (a private file stays private in the quarantine).
func (s *LocalStore) Copy(ctx context.Context, src, dst string) error {
	rc, info, err := s.Get(ctx, src)
	if err != nil {
		return err
	}
	defer rc.Close()
	r, p, err := s.open(ctx, "copy to", dst, true)
	if err != nil {
		return err
	}
	defer r.Close()
	tmp, err := writeTemp(ctx, r, p, rc, info.Mode)
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	if err := r.Rename(tmp, p); err != nil {
		r.Remove(tmp)
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return nil
}

// Delete removes the file and then any folders it leaves empty, up to the root.
func (s *LocalStore) Delete(ctx context.Context, key string) error {
	r, p, err := s.open(ctx, "delete", key, false)
	if errors.Is(err, ErrNotExist) {
		return nil // no folder: nothing to delete
	}
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	s.removeEmptyParents(r, key)
	return nil
}

// removeEmptyParents removes the folders above key that are left empty,
// up to the root, but for the first keepDepth levels below it.
func (s *LocalStore) removeEmptyParents(r *os.Root, key string) {
	for dir := path.Dir(key); dir != "."; dir = path.Dir(dir) {
		if strings.Count(dir, "/")+1 <= s.keepDepth {
			break
		}
		if r.Remove(filepath.FromSlash(dir)) != nil { // not empty, or gone: stop
			break
		}
	}
}

// ContextReader returns a reader that fails with ctx's error once ctx is
// done, so that a long io.Copy stops on cancellation.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

// ctxReader stops a long copy when ctx is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
