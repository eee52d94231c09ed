package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

// A landing file that cannot be fetched is that file's problem, not the
// run's (docs/ingest.md, "When one file cannot be loaded"): it is
// reported as failed with its reason, stays in the landing bucket for a
// later run, and the run goes on with the others. What stops the run is
// what every other file would meet too: the download folder is missing or
// not writable, or the landing bucket refuses reads for a setup reason
// (credentials, permissions, an unreachable endpoint), which a read of the
// run's own lease tells apart from a refusal of one object.

// notFetched settles an item whose download failed with err: waiting (it
// changed while it was read), gone (deleted since the listing: not
// reported), failed, or a fatal item error.
func (r *runner) notFetched(ctx context.Context, it *item, err error) {
	key := it.obj.Key
	var wd *workDirError
	switch {
	case ctx.Err() != nil:
		it.err = ctx.Err()
	case errors.Is(err, errChanging):
		it.res.Status, it.res.Reason, it.done = Waiting, "it changed while it was read: it may still be being written; a later run loads it", true
	case errors.As(err, &wd) && !wd.fits():
		it.err = err
	case errors.As(err, &wd):
		r.fail(it, err)
	case errors.Is(err, storage.ErrNotExist):
		listed, lerr := r.stillListed(ctx, key)
		switch {
		case lerr != nil:
			it.err = r.landingErr(lerr)
		case listed && strings.ContainsRune(key, utf8.RuneError):
			r.fail(it, fmt.Errorf("listed in the landing bucket as %q but cannot be fetched under that name: %w; "+
				"the listing has U+FFFD in the key, which a server writes for a character its XML listing cannot carry (a control character such as ESC) "+
				"when it does not url-encode listings: rename the object to a key without control characters", key, err))
		case listed:
			r.fail(it, fmt.Errorf("listed in the landing bucket but cannot be fetched: %w", err))
		default:
			// Deleted since the listing, by something else than this run
			// (a person, a run whose lease expired): nothing was loaded.
			r.log.Warn("a listed file was gone before it was read: not loaded by this run", "key", key)
			it.gone, it.done = true, true
		}
	case r.fetchStopsRun(ctx, err):
		it.err = r.landingErr(err)
	default:
		r.fail(it, fmt.Errorf("cannot be fetched: %w", err))
	}
}

// fail reports an item as failed: left in the landing bucket for a later
// run.
func (r *runner) fail(it *item, err error) {
	r.log.Info("a landing file could not be loaded; it stays for a later run", "key", it.obj.Key, "err", err)
	it.res.Status, it.done = Failed, true
	it.res.Reason = err.Error() + "; it stays in the landing bucket and a later run tries again"
}

// stopsRun reports whether a failed write or delete of the landing bucket
// about one file stops the run: ctx is done, or the store refused it for a
// setup reason (storage.Diagnose: credentials, permissions, a read-only
// disk), which the other files would meet too.
func (r *runner) stopsRun(ctx context.Context, err error) bool {
	return ctx.Err() != nil || storage.Diagnose(err, r.cfg.Explain.Landing, r.cfg.Explain.Names) != nil
}

// fetchStopsRun is stopsRun for a read of one file: a refusal for a setup
// reason stops the run only when a read of the run's own lease meets it
// too (checked once per run). A refusal of one object (an object another
// account wrote, an archived object, a local file of another user) leaves
// the others to load.
func (r *runner) fetchStopsRun(ctx context.Context, err error) bool {
	if !r.stopsRun(ctx, err) {
		return false
	}
	if ctx.Err() != nil {
		return true
	}
	r.probeOnce.Do(func() { r.probeErr = r.probeLandingRead(ctx) })
	return r.probeErr != nil
}

// probeLandingRead reads the run's lease back: it fails when the landing
// bucket refuses every read.
func (r *runner) probeLandingRead(ctx context.Context) error {
	if r.leaseKey == "" {
		return errors.New("no lease to read")
	}
	_, _, err := storage.ReadAll(ctx, r.cfg.LeaseStore, r.leaseKey)
	return err
}

// stillListed reports whether the landing bucket still has key, listed
// by this run, whose GET said it does not exist: a HEAD finds it, or a
// second listing names it again as the first did. Only a key that both
// miss is gone (deleted since the listing). The listing starts at the
// longest prefix of the key that is printable ASCII (listablePrefix), so
// that a key the server's listing changed (a character it cannot write
// replaced by U+FFFD) is found again as it was listed, and stops past key.
func (r *runner) stillListed(ctx context.Context, key string) (bool, error) {
	_, err := r.cfg.Landing.Stat(ctx, key)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, storage.ErrNotExist) {
		return false, err
	}
	errFound, errPast := errors.New("found"), errors.New("past the key")
	err = r.cfg.Landing.List(ctx, listablePrefix(key), func(o storage.ObjectInfo) error {
		switch {
		case o.Key == key:
			return errFound
		case o.Key > key:
			return errPast
		}
		return nil
	})
	var gaps *storage.UnlistedError
	switch {
	case errors.Is(err, errFound):
		return true, nil
	case err == nil, errors.Is(err, errPast), errors.As(err, &gaps):
		return false, nil
	}
	return false, err
}

// listablePrefix is the longest prefix of key made of printable ASCII,
// which every listing writes as it is.
func listablePrefix(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return key[:i]
		}
	}
	return key
}

// workDir is the download folder.
func (r *runner) workDir() string {
	if r.cfg.WorkDir != "" {
		return r.cfg.WorkDir
	}
	return os.TempDir()
}

// workDirError is a download that the download folder cannot take: the
// folder cannot hold a file at all (missing, not writable: every file
// would fail, the run stops), or has too little free space for this one
// (size > 0: that file fails).
type workDirError struct {
	dir  string
	key  string
	size int64 // bytes of the file; 0 when the folder takes no file
	free int64 // bytes free in dir; -1 when unknown
	err  error
}

// fits reports whether the folder takes files, only not this one.
func (e *workDirError) fits() bool { return e.size > 0 }

func (e *workDirError) Error() string {
	if !e.fits() {
		return fmt.Sprintf("download folder %s: %v (set TMPDIR to a folder timelake can write)", e.dir, e.err)
	}
	free := "free space unknown"
	if e.free >= 0 {
		free = mebibytes(e.free) + " free"
	}
	return fmt.Sprintf("%s (%s) does not fit in the download folder %s (%s); free space there, or set TMPDIR to a folder on a larger disk",
		e.key, mebibytes(e.size), e.dir, free)
}

// mebibytes renders a size for a message about disk space (12.3 MiB).
func mebibytes(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func (e *workDirError) Unwrap() error { return e.err }

// freeBytes is the free space of a folder (diskFree; tests replace it).
var freeBytes = diskFree

// roomFor checks, before a download, that the download folder has room
// for the object (its free space, where the system tells it).
func (r *runner) roomFor(o storage.ObjectInfo) error {
	free, err := freeBytes(r.workDir())
	if err != nil || o.Size <= free {
		return nil // unknown: the copy tells
	}
	return &workDirError{dir: r.workDir(), key: o.Key, size: o.Size, free: free, err: io.ErrShortWrite}
}

// noRoom is the error of a download the disk ran out of space for (other
// downloads may have filled it meanwhile).
func (r *runner) noRoom(key string, size int64, err error) error {
	free, ferr := freeBytes(r.workDir())
	if ferr != nil {
		free = -1
	}
	return &workDirError{dir: r.workDir(), key: key, size: max(size, 1), free: free, err: err}
}

// download copies an object to a temp file, hashing it on the way.
type download struct {
	f      *os.File
	info   storage.ObjectInfo
	sha256 string
	// content is the hex SHA-256 of the decompressed bytes of a gzip file,
	// the sha256 of any other; "" when the gzip stream does not read (the
	// decoder says why).
	content string
	// decompressed is the size of the decompressed bytes of a gzip file
	// (as far as they read), the size of any other.
	decompressed int64
}

// compressed reports a gzip file, whose content hash differs from its
// hash.
func (d *download) compressed() bool { return d.content != d.sha256 }

func (d *download) close() {
	if d != nil && d.f != nil {
		d.f.Close()
		os.Remove(d.f.Name())
	}
}

// downloadPrefix names the temporary copies of landing files this process
// downloads: timelake-ingest-<pid>-<process start>-, so that a later run
// can tell the copies of a run that died (kill -9, a lost host) from those
// of one still running (removeStaleDownloads).
func downloadPrefix(h landing.Holder) string {
	return fmt.Sprintf("timelake-ingest-%d-%d-", h.PID, h.Start)
}

// staleDownloadAge is the age after which a download copy whose process
// cannot be identified (an older name without it) is removed.
const staleDownloadAge = time.Hour

// removeStaleDownloads removes the download copies in dir ("" is
// os.TempDir()) of processes that ended (killed runs leave them; they hold
// landing data), and unidentifiable ones older than staleDownloadAge. It
// returns how many it removed; it is best effort (a copy a running run
// still reads stays readable through its open file on Unix).
func removeStaleDownloads(dir string, now time.Time) int {
	if dir == "" {
		dir = os.TempDir()
	}
	names, err := filepath.Glob(filepath.Join(dir, "timelake-ingest-*"))
	if err != nil {
		return 0
	}
	// The data files of an S3 warehouse wait for their upload in the same
	// folder (lake.UploadTempPrefix<pid>-).
	uploads, err := filepath.Glob(filepath.Join(dir, lake.UploadTempPrefix+"*"))
	if err != nil {
		return 0
	}
	removed := 0
	for _, path := range append(names, uploads...) {
		var pid int
		var start uint64
		stale := false
		base := filepath.Base(path)
		if _, err := fmt.Sscanf(base, "timelake-ingest-%d-%d-", &pid, &start); err == nil && pid > 0 {
			stale = pid != os.Getpid() && landing.ProcessGone(pid, start)
		} else if _, err := fmt.Sscanf(base, lake.UploadTempPrefix+"%d-", &pid); err == nil && pid > 0 {
			stale = pid != os.Getpid() && landing.ProcessGone(pid, 0)
		} else if fi, err := os.Stat(path); err == nil {
			stale = now.Sub(fi.ModTime()) > staleDownloadAge
		}
		if stale && os.Remove(path) == nil {
			removed++
		}
	}
	return removed
}

// download copies a landing object to a temp file in the download folder
// (WorkDir). Errors: the store's (ErrNotExist: gone since the listing),
// errChanging, a *workDirError when the download folder cannot take it.
func (r *runner) download(ctx context.Context, o storage.ObjectInfo) (*download, error) {
	key := o.Key
	if err := r.roomFor(o); err != nil {
		return nil, err
	}
	rc, info, err := r.cfg.Landing.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	f, err := os.CreateTemp(r.cfg.WorkDir, downloadPrefix(r.cfg.Holder)+"*")
	if err != nil {
		return nil, &workDirError{dir: r.workDir(), err: err}
	}
	d := &download{f: f, info: info}
	h := sha256.New()
	buf := copyBuffers.Get().(*[]byte)
	n, err := copyFilled(io.MultiWriter(f, h), rc, *buf)
	copyBuffers.Put(buf)
	if err != nil {
		d.close()
		if errors.Is(err, syscall.ENOSPC) {
			return nil, r.noRoom(key, info.Size, err)
		}
		return nil, fmt.Errorf("download %s: %w", key, err)
	}
	if _, local := r.cfg.Landing.(*storage.LocalStore); n != info.Size && (local || info.Size > 0) {
		// Bytes were added (or cut) while it was read: a file still being
		// written in place.
		d.close()
		return nil, fmt.Errorf("%s: read %d bytes, the store said %d: %w", key, n, info.Size, errChanging)
	}
	d.info.Size = n
	d.sha256 = hex.EncodeToString(h.Sum(nil))
	d.content, d.decompressed = d.sha256, n
	gz, size, err := contentHash(f)
	switch {
	case err != nil:
		d.content, d.decompressed = "", size
	case gz != "":
		d.content, d.decompressed = gz, size
	}
	return d, nil
}

// copyBuffers hold the buffers downloads copy through: 1 MiB, so that a
// large file reaches its temp file in a thirty-second of the writes
// io.Copy's 32 KiB would take (on this kind of host a quarter less CPU per
// GB written, and the page cache's pages are read back in larger runs).
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// errInvalidWrite is io.Copy's error for a writer that reports more bytes
// written than it was given, or fewer than none.
var errInvalidWrite = errors.New("invalid write result")

// copyFilled copies src to dst as io.Copy does, but writes only full
// buffers (and the last part): a socket's reads return what has arrived,
// often a few KB, and each write is a system call.
func copyFilled(dst io.Writer, src io.Reader, buf []byte) (int64, error) {
	var written int64
	for {
		n, rerr := 0, error(nil)
		for n < len(buf) && rerr == nil {
			var m int
			m, rerr = src.Read(buf[n:])
			n += m
		}
		if n > 0 {
			m, werr := dst.Write(buf[:n])
			if m < 0 || m > n {
				m = 0
				if werr == nil {
					werr = errInvalidWrite
				}
			}
			written += int64(m)
			if werr != nil {
				return written, werr
			}
			if m < n {
				return written, io.ErrShortWrite
			}
		}
		if rerr == io.EOF {
			return written, nil
		}
		if rerr != nil {
			return written, rerr
		}
	}
}

// noteClockAhead notes a file modified ahead of this host's clock, for
// the run's report (reportClockAhead).
func (r *runner) noteClockAhead(key string, ahead time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ahead == nil {
		r.ahead = map[string]time.Duration{}
	}
	r.ahead[key] = max(r.ahead[key], ahead)
}

// reportClockAhead puts the files noted ahead in the report, with one
// warning for the run.
func (r *runner) reportClockAhead() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ahead) == 0 {
		return
	}
	ca := &ClockAhead{Files: len(r.ahead)}
	for _, k := range slices.Sorted(maps.Keys(r.ahead)) {
		if s := r.ahead[k].Seconds(); s > ca.Seconds {
			ca.Key, ca.Seconds = k, s
		}
	}
	r.rep.ClockAhead = ca
	r.ahead = nil
	r.log.Warn("files modified in the future: the clock of the machine that wrote them is ahead of this host's; set it right (NTP)",
		"files", ca.Files, "key", ca.Key, "ahead", time.Duration(ca.Seconds*float64(time.Second)).Round(time.Second).String())
}

// errChanging marks a landing file that changed while it was read.
var errChanging = errors.New("the file changed while it was read")

// contentHash returns the hex SHA-256 of the decompressed bytes of f and
// their size when it is gzip-compressed (by its magic bytes), "" when it is
// not, and an error when the gzip stream does not read to its end (size is
// then what did).
func contentHash(f io.ReaderAt) (string, int64, error) {
	var magic [2]byte
	if n, _ := f.ReadAt(magic[:], 0); n < 2 || magic != [2]byte{0x1f, 0x8b} {
		return "", 0, nil
	}
	zr, err := decode.NewGzipReader(io.NewSectionReader(f, 0, 1<<62))
	if err != nil {
		return "", 0, err
	}
	defer zr.Close()
	h := sha256.New()
	n, err := io.Copy(h, zr)
	if err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// source is the downloaded file, to decode.
func (d *download) source() decode.Source {
	return decode.Source{Key: d.info.Key, R: d.f, Size: d.info.Size}
}
