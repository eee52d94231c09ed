// Package upload is the gateway side of timelake: it puts landing files into
// the landing bucket (or folder) under keys that are unique per file and
// stable across retries, never overwriting an object (docs/gateways.md).
//
// For each file: validate it locally (no network), hash it, optionally gzip
// it, derive its key, and create the object with a conditional put
// (If-None-Match: *). A key that already holds the same content is "already
// uploaded" (a retry); different content is refused, because ingest skips
// keys it has already loaded, so corrections must be new files. In spool
// mode the local file is deleted (or moved) only after the object is
// confirmed, so a crash at any point is safe to rerun.
package upload

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

// MetaSourceSHA256 is the user metadata (x-amz-meta-source-sha256) holding
// the hex SHA-256 of the gateway's file before --gzip; set only on objects
// that were compressed on the way. storage.MetaSHA256 holds the SHA-256 of
// the object's bytes as stored.
const MetaSourceSHA256 = "source-sha256"

// ErrKeyConflict is returned (wrapped) when the key already holds an object
// with different content. The object is left unchanged.
var ErrKeyConflict = errors.New("key already exists with different content")

// Status is what happened to one file.
type Status string

// File statuses.
const (
	Uploaded        Status = "uploaded"
	AlreadyUploaded Status = "already-uploaded"
	Failed          Status = "failed"
	// Rejected: a spool file that can never be uploaded as it is (it fails
	// validation, or its key holds other content, or it changed after its
	// upload) was moved to the rejected folder with a report, so it does
	// not fail every run.
	Rejected Status = "rejected"
	// Waiting: a spool file that is not complete yet (landing.Settle) was
	// left in the spool for a later run.
	Waiting Status = "waiting"
)

// ErrRejected is returned by a spool run that moved files to the rejected
// folder and had no other failure: the other files went up.
var ErrRejected = errors.New("some spool files were rejected")

// RejectedFolder is the folder below the spool that rejected files are
// moved to when Config.Rejected is empty.
const RejectedFolder = "rejected"

// TimeSource selects the time in generated keys.
type TimeSource string

// Time sources.
const (
	// TimeModified uses the file's modification time (stable across retries).
	TimeModified TimeSource = "mtime"
	// TimeNow uses the upload time: a retry after a crash gets a new key.
	TimeNow TimeSource = "now"
)

// DefaultParallel is how many files upload at once by default.
const DefaultParallel = 4

// Config is one upload run's input: Files, or every eligible file of Spool.
type Config struct {
	// Store is the landing bucket or folder.
	Store storage.Store

	// Files are uploaded in the given order and left in place.
	Files []string
	// Spool is a folder whose eligible files (see SpoolFiles) are uploaded
	// oldest first and deleted, or moved to Done, once uploaded.
	Spool string
	// Done receives spool files after their upload; "" deletes them.
	Done string
	// Rejected receives spool files that can never be uploaded as they are
	// (they fail validation, or their key holds other content), each with
	// a report <name>.error.json beside it; "" means <Spool>/rejected.
	Rejected string
	// MinAge and OpenEndMinAge are the rule of when a spool file is
	// complete (landing.Settle, docs/ingest.md "What complete means"):
	// unmodified for MinAge, and for OpenEndMinAge when its end is open (a
	// CSV line without its line end). A file not complete yet is reported
	// as waiting and stays in the spool; 0 is no wait. A spool file that
	// changed after it was read and uploaded is rejected, not deleted.
	MinAge, OpenEndMinAge time.Duration

	// Key is the explicit key of the single file (still below Prefix).
	Key string
	// Gateway is the first segment of generated keys; required without Key.
	Gateway string
	// Prefix goes in front of every key ("" for none).
	Prefix string
	// Time is the time in generated keys; "" means TimeModified.
	Time TimeSource

	// Gzip compresses CSV and TSV files that are not compressed yet; their
	// keys end in ".gz". Parquet and .gz files go up unchanged.
	Gzip bool
	// Validate checks each file with Validate before anything is sent.
	Validate        bool
	ValidateOptions ValidateOptions
	// Rules, when set, are the table's (or an exported source profile's):
	// each file is validated into the table's schema with the settings
	// the poller reads its key with (Rules.options).
	Rules *Rules
	// RulesFor, when set, replaces Rules and ValidateOptions key by key:
	// the rules (nil for none) and the options of the table that takes
	// the key (upload --route: its route's table and options). A
	// *decode.FileError refuses the file (without a Key, it names the
	// file); any other error stops the run.
	RulesFor func(ctx context.Context, key string) (*Rules, ValidateOptions, error)

	// Parallel is how many files are uploaded at once (oldest first); 0
	// means DefaultParallel.
	Parallel int

	// Transfer tunes the multipart upload (zero: storage defaults).
	MultipartThreshold, PartSize int64
	Concurrency                  int

	// TempDir holds gzip output while it is uploaded; "" is os.TempDir().
	TempDir string
	// Now is the clock (TimeNow, MinAge); nil is time.Now.
	Now func() time.Time

	// OnFile is called after each file with its result.
	OnFile func(FileResult)
	// Progress is called before a file's bytes are sent; the returned
	// function (may be nil) gets the bytes sent so far, and done is called
	// when the transfer ends. Nil means no progress.
	Progress func(file string, size int64) (update func(sent int64), done func())
	// AfterUpload runs after an object is confirmed and before the spool
	// file is deleted or moved; an error stops the run there. Tests use it to
	// simulate a crash.
	AfterUpload func(FileResult) error
}

// FileResult is the outcome of one file (one output line, one JSON entry).
type FileResult struct {
	File   string `json:"file"`
	Key    string `json:"key,omitempty"`
	Status Status `json:"status"`
	// Size is the object's size in bytes (after --gzip).
	Size int64 `json:"size"`
	// SHA256 is the hex SHA-256 of the object's bytes.
	SHA256 string `json:"sha256,omitempty"`
	// SourceSHA256 is the hex SHA-256 of the file before --gzip (the hash in
	// generated keys); equal to SHA256 when nothing was compressed.
	SourceSHA256 string `json:"source_sha256,omitempty"`
	Gzipped      bool   `json:"gzipped,omitempty"`
	Multipart    bool   `json:"multipart,omitempty"`
	Parts        int    `json:"parts,omitempty"`
	Deleted      bool   `json:"deleted,omitempty"`     // spool file deleted
	MovedTo      string `json:"moved_to,omitempty"`    // spool file moved to --done
	RejectedTo   string `json:"rejected_to,omitempty"` // spool file moved to the rejected folder
	Error        string `json:"error,omitempty"`
	// Reason says why a waiting file waits, and ReadyAt when it is
	// complete if it does not change meanwhile; for an uploaded spool
	// file whose end is open (OpenEnd), that it was taken as it is past
	// --open-end-min-age (landing.Wait.Note).
	Reason  string    `json:"reason,omitempty"`
	ReadyAt time.Time `json:"ready_at,omitzero"`
	// OpenEnd: the file's end is open; a waiting file waits for it
	// (--open-end-min-age), not for its age (--min-age); an uploaded one
	// was uploaded as it is once --open-end-min-age passed.
	OpenEnd bool    `json:"open_end,omitempty"`
	Seconds float64 `json:"seconds"`
	// RowsSetAside counts the rows --validate found that ingest sets
	// aside under --on-error skip-rows (of the rows it checked: a CSV
	// file's sample); SetAside are the first maxSetAsideListed of them.
	RowsSetAside int                  `json:"rows_set_aside,omitempty"`
	SetAside     []decode.RejectedRow `json:"set_aside,omitempty"`
	// SampledRows, when set, is how many rows (a large CSV or TSV file's
	// first) the rows set aside were found among: the rest was not
	// checked.
	SampledRows int64 `json:"sampled_rows,omitempty"`

	// read is the spool file's size and modification time when it was
	// read, checked again before it is deleted.
	read fileState
}

// maxSetAsideListed bounds the rows set aside a FileResult lists.
const maxSetAsideListed = 10

// noteSetAside records the rows validation found that ingest would set
// aside.
func (r *FileResult) noteSetAside(c decode.CheckResult) {
	r.RowsSetAside = len(c.SetAside)
	r.SetAside = c.SetAside[:min(len(c.SetAside), maxSetAsideListed)]
	if c.Sampled {
		r.SampledRows = c.RowsChecked
	}
}

// fileState is what says a local file did not change: its size and
// modification time.
type fileState struct {
	size    int64
	modTime time.Time
}

func stateOf(fi fs.FileInfo) fileState { return fileState{fi.Size(), fi.ModTime()} }

func (s fileState) same(o fileState) bool { return s.size == o.size && s.modTime.Equal(o.modTime) }

// Report is the outcome of a run (the --json document).
type Report struct {
	Landing         string       `json:"landing"`
	Spool           string       `json:"spool,omitempty"`
	Files           []FileResult `json:"files"`
	Uploaded        int          `json:"uploaded"`
	AlreadyUploaded int          `json:"already_uploaded"`
	Failed          int          `json:"failed"`
	Rejected        int          `json:"rejected"`
	Waiting         int          `json:"waiting"`
	// Bytes is the number of bytes uploaded by this run.
	Bytes int64 `json:"bytes"`
	// Stopped is true when an error (network, storage, cancellation) ended
	// the run before every file was tried.
	Stopped bool    `json:"stopped"`
	Seconds float64 `json:"seconds"`
}

// fileError marks a problem of one file (invalid, conflicting, unreadable):
// the run goes on with the next file. Any other error stops the run.
type fileError struct{ err error }

func (e *fileError) Error() string { return e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// IsFileError reports whether err concerns one file only (the run went on).
func IsFileError(err error) bool {
	var fe *fileError
	return errors.As(err, &fe)
}

// Run uploads the files of cfg and returns the report with an error when a
// file failed or the run stopped early. A file-level failure (invalid file,
// key conflict, unreadable file) does not stop the run; any other error
// (storage, network, ctx) does, and the files not tried stay where they are.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	start := time.Now()
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Time == "" {
		cfg.Time = TimeModified
	}
	rep := &Report{Landing: cfg.Store.URI(), Spool: cfg.Spool, Files: []FileResult{}}
	err := run(ctx, cfg, rep)
	rep.Seconds = time.Since(start).Seconds()
	return rep, err
}

func run(ctx context.Context, cfg Config, rep *Report) error {
	if cfg.Key != "" && (cfg.Spool != "" || len(cfg.Files) != 1) {
		return errors.New("an explicit key needs exactly one file")
	}
	files := cfg.Files
	var young []FileResult // spool files not complete by their age
	if cfg.Spool != "" {
		entries, err := spoolEntries(cfg.Spool)
		if err != nil {
			return err
		}
		now := cfg.Now()
		for _, e := range entries {
			if w := spoolSettle(cfg).ByAge(landing.AgeFrom(e.modTime, e.changed, now), now); w.Waiting() {
				young = append(young, FileResult{File: e.path, Status: Waiting, Size: e.size, Reason: w.Reason, ReadyAt: w.Until})
				continue
			}
			files = append(files, e.path)
		}
	}
	parallel := cfg.Parallel
	if parallel <= 0 {
		parallel = DefaultParallel
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		failed  []error
		fatal   error
		next    int
		workers sync.WaitGroup
		// Results are recorded (and printed) in the files' order: slot i
		// holds file i's result until every earlier file is recorded.
		slots   = make([]*FileResult, len(files))
		settled = make([]bool, len(files))
		flushed int
		// The printer records results (and calls OnFile, which writes the
		// output lines) in order, outside mu: a slow output never holds up
		// the workers. It owns rep until it is done.
		ordered = make(chan FileResult, len(files)+len(young))
		printer sync.WaitGroup
	)
	printer.Add(1)
	go func() {
		defer printer.Done()
		for r := range ordered {
			record(cfg, rep, r)
		}
	}()
	flush := func() {
		for flushed < len(files) && settled[flushed] {
			if r := slots[flushed]; r != nil {
				ordered <- *r // never blocks: one slot per file
			}
			flushed++
		}
	}
	// Files start oldest first; up to parallel of them are in flight.
	for range min(parallel, len(files)) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				mu.Lock()
				if next == len(files) || fatal != nil || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				i, path := next, files[next]
				next++
				mu.Unlock()

				t0 := time.Now()
				res, err := uploadFile(ctx, cfg, path)
				var w *notComplete
				if errors.As(err, &w) {
					res.Status, res.Reason, res.ReadyAt, res.OpenEnd, err = Waiting, w.Reason, w.Until, w.OpenEnd, nil
				}
				if err == nil && cfg.AfterUpload != nil && res.Status != Waiting {
					mu.Lock()
					err = cfg.AfterUpload(res)
					mu.Unlock()
				}
				if err == nil && cfg.Spool != "" && res.Status != Waiting {
					err = settleSpool(cfg, &res)
				}
				res.Seconds = time.Since(t0).Seconds()
				gone := err != nil && cfg.Spool != "" && errors.Is(err, fs.ErrNotExist)
				if err != nil && !gone {
					res.Status, res.Error = Failed, err.Error()
				}
				if err != nil && !gone && cfg.Spool != "" && rejectable(err) {
					switch rerr := reject(cfg, path, &res, err); {
					case rerr == nil:
						err = nil
					case errors.Is(rerr, fs.ErrNotExist):
						gone = true
					default:
						err = &fileError{rerr} // not moved: a failure like any other
						res.Error = rerr.Error()
					}
				}
				mu.Lock()
				if !gone {
					// Gone from the spool since the listing means an
					// overlapping run uploaded it and deleted or moved it:
					// nothing to report.
					slots[i] = &res
				}
				settled[i] = true
				flush()
				if err != nil && !gone {
					if IsFileError(err) {
						failed = append(failed, err)
					} else if fatal == nil {
						fatal = err
						cancel()
					}
				}
				mu.Unlock()
			}
		}()
	}
	workers.Wait()
	for flushed < len(files) && slots[flushed] == nil && !settled[flushed] {
		flushed++ // never started: the run stopped
	}
	flush()
	for _, r := range young {
		ordered <- r
	}
	close(ordered)
	printer.Wait()
	if fatal != nil {
		rep.Stopped = true
		return fatal
	}
	if err := ctx.Err(); err != nil && next < len(files) {
		rep.Stopped = true
		return err
	}
	switch {
	case len(failed) == 1 && len(files) == 1:
		return failed[0]
	case len(failed) > 0:
		return &fileError{fmt.Errorf("%d of %d files failed", len(failed), len(files))}
	case rep.Rejected > 0:
		return fmt.Errorf("%w: %d of %d moved to %s", ErrRejected, rep.Rejected, len(files), rejectedDir(cfg))
	}
	return nil
}

// rejectable reports whether a file's error means it can never be
// uploaded as it is: it fails validation, its key holds other content, or
// it changed after it was uploaded.
func rejectable(err error) bool {
	var fe *decode.FileError
	return IsFileError(err) && (errors.As(err, &fe) || errors.Is(err, ErrKeyConflict) || errors.Is(err, errChangedAfterUpload))
}

// errChangedAfterUpload marks a spool file that changed between the read
// of its upload and its deletion: a writer appended to it after a pause
// longer than the settle time.
var errChangedAfterUpload = errors.New("changed after it was uploaded")

// notComplete is a spool file that is not complete yet (landing.Settle).
type notComplete struct{ landing.Wait }

func (n *notComplete) Error() string { return n.Reason }

// spoolSettle is the completeness rule of spool files.
func spoolSettle(cfg Config) landing.Settle {
	return landing.Settle{Time: cfg.MinAge, OpenEndTime: cfg.OpenEndMinAge}
}

func rejectedDir(cfg Config) string {
	if cfg.Rejected != "" {
		return cfg.Rejected
	}
	return filepath.Join(cfg.Spool, RejectedFolder)
}

// RejectReport is the JSON report written beside a rejected spool file
// (<name>.error.json).
type RejectReport struct {
	File       string    `json:"file"`        // where the file was in the spool
	RejectedTo string    `json:"rejected_to"` // where it is now
	Reason     string    `json:"reason"`
	Row        int64     `json:"row,omitempty"`
	Column     string    `json:"column,omitempty"`
	Value      string    `json:"value,omitempty"`
	Key        string    `json:"key,omitempty"` // the landing key it would have had
	Hint       string    `json:"hint"`
	At         time.Time `json:"at"`
}

// reject moves a spool file that can never be uploaded to the rejected
// folder and writes its report there; res becomes Rejected.
func reject(cfg Config, path string, res *FileResult, cause error) error {
	rep := RejectReport{File: path, Reason: cause.Error(), Key: res.Key, At: cfg.Now().UTC(),
		Hint: "fix the file and put it back into the spool (or send a correction as a new file); the report can then be deleted"}
	var fe *decode.FileError
	if errors.As(cause, &fe) {
		rep.Row, rep.Column, rep.Value = fe.Row, fe.Column, fe.Value
	}
	if errors.Is(cause, ErrKeyConflict) {
		rep.Hint = "the landing bucket already holds other content under this key; send the file as a new file under a new key (for example with --time now)"
	}
	if errors.Is(cause, errChangedAfterUpload) {
		rep.Hint = "its first " + fmt.Sprint(res.read.size) + " bytes are uploaded as " + res.Key + "; send what was written after them as a new file, and let the writer pause less than --min-age or write under a partial name (name.csv.tmp) and rename it when complete"
	}
	tag := cfg.Now().UTC().Format("20060102T150405Z")
	dst, err := moveFile(path, rejectedDir(cfg), tag, rejectReportSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return err // moved by an overlapping run meanwhile
	}
	if err != nil {
		return fmt.Errorf("%s cannot be uploaded and could not be moved to %s: %w (it was: %v)", path, rejectedDir(cfg), err, cause)
	}
	rep.RejectedTo = dst
	body, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		err = writeNew(dst+rejectReportSuffix, append(body, '\n'))
	}
	if err != nil {
		return fmt.Errorf("rejected %s to %s but could not write its report: %w", path, dst, err)
	}
	res.Status, res.RejectedTo = Rejected, dst
	return nil
}

func record(cfg Config, rep *Report, res FileResult) {
	rep.Files = append(rep.Files, res)
	switch res.Status {
	case Uploaded:
		rep.Uploaded++
		rep.Bytes += res.Size
	case AlreadyUploaded:
		rep.AlreadyUploaded++
	case Failed:
		rep.Failed++
	case Rejected:
		rep.Rejected++
	case Waiting:
		rep.Waiting++
	}
	if cfg.OnFile != nil {
		cfg.OnFile(res)
	}
}

// SpoolFiles lists the files of dir to upload, oldest modification time
// first (then by name): regular files only (no folders, no symbolic links),
// not hidden (".name"), not partial (*.tmp, *.part, *.partial, *.swp, *~),
// and modified at or before notAfter.
func SpoolFiles(dir string, notAfter time.Time) ([]string, error) {
	entries, err := spoolEntries(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.modTime.After(notAfter) {
			out = append(out, e.path)
		}
	}
	return out, nil
}

// spoolEntry is a file of the spool, as listed.
type spoolEntry struct {
	path    string
	size    int64
	modTime time.Time
	changed time.Time // storage.ChangeTime: this host's clock, where modTime is the writer's
}

// spoolEntries lists the regular files of dir that are not hidden or
// partial, oldest modification time first (then by name).
func spoolEntries(dir string) ([]spoolEntry, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	var cands []spoolEntry
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(name, ".") || landing.IsPartialName(name) {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // moved away meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		cands = append(cands, spoolEntry{filepath.Join(dir, name), fi.Size(), fi.ModTime(), storage.ChangeTime(fi)})
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if !cands[i].modTime.Equal(cands[j].modTime) {
			return cands[i].modTime.Before(cands[j].modTime)
		}
		return cands[i].path < cands[j].path
	})
	return cands, nil
}

// prepared is a file ready to be sent.
type prepared struct {
	res  FileResult
	body *os.File // the file itself, or its gzip copy
	temp string   // gzip copy to remove
	// src is what is validated, hashed and compressed: a copy of the file in
	// memory (files up to snapshotMax bytes), else the file itself.
	src io.ReaderAt
}

func (p *prepared) close() {
	if p.body != nil {
		p.body.Close()
	}
	if p.temp != "" {
		os.Remove(p.temp)
	}
}

// snapshotMax is the size up to which a file is read into memory once, and
// validated, hashed (and compressed) from that copy, instead of being read
// from the file for each of these steps. It bounds the memory this takes to
// Parallel x snapshotMax.
const snapshotMax = 1 << 20

// uploadFile validates, hashes, compresses and uploads one file.
func uploadFile(ctx context.Context, cfg Config, path string) (FileResult, error) {
	p, err := prepare(ctx, cfg, path)
	if p != nil {
		defer p.close()
	}
	if err != nil {
		return FileResult{File: path}, err
	}
	return send(ctx, cfg, p)
}

// prepare opens the file once, validates it (before any network call),
// hashes it, gzips it if asked, and derives its key.
func prepare(ctx context.Context, cfg Config, path string) (*prepared, error) {
	p := &prepared{res: FileResult{File: path}}
	f, err := os.Open(path)
	if err != nil {
		return p, openError(cfg, path, err)
	}
	p.body = f
	fi, err := f.Stat()
	if err != nil {
		return p, openError(cfg, path, err)
	}
	if !fi.Mode().IsRegular() {
		return p, &fileError{fmt.Errorf("%s: not a regular file (use --spool for a folder)", path)}
	}
	size := fi.Size()
	p.src = f
	var (
		sum  string
		data []byte // the file in memory
	)
	if size <= snapshotMax {
		data = make([]byte, size)
		if _, err := f.ReadAt(data, 0); err != nil && !(errors.Is(err, io.EOF) && size == 0) {
			return p, &fileError{fmt.Errorf("read %s: %w", path, err)}
		}
		p.src = bytes.NewReader(data)
		s := sha256.Sum256(data)
		sum = hex.EncodeToString(s[:])
	}
	p.res.read = stateOf(fi)
	if cfg.Spool != "" {
		now := cfg.Now()
		w, err := spoolSettle(cfg).Judge(path, p.src, size, landing.AgeFrom(fi.ModTime(), storage.ChangeTime(fi), now), now)
		if err != nil {
			return p, &fileError{fmt.Errorf("read %s: %w", path, err)}
		}
		if w.Waiting() {
			return p, &notComplete{w}
		}
		// Taken with its end open (past --open-end-min-age): its line
		// says so, as its last row may be cut.
		p.res.Reason, p.res.OpenEnd = w.Note, w.OpenEnd
	}
	// Without rules that depend on the key, the file is validated before
	// it is even hashed; with them (a table's source profiles), once its
	// key is known.
	keyed := cfg.Rules != nil || cfg.RulesFor != nil
	if cfg.Validate && !keyed {
		checked, err := validate(ctx, path, p.src, size, cfg.ValidateOptions)
		if err != nil {
			err = staleExport(cfg.Rules, err)
			if ctx.Err() != nil {
				return p, ctx.Err()
			}
			return p, &fileError{err}
		}
		p.res.noteSetAside(checked)
	}
	if sum == "" {
		if sum, err = hashFile(ctx, f, size); err != nil {
			return p, &fileError{fmt.Errorf("read %s: %w", path, err)}
		}
	}
	p.res.Size, p.res.SHA256, p.res.SourceSHA256 = size, sum, sum
	ext := Ext(path)
	gzip := cfg.Gzip && compressible(path, p.src)
	if gzip {
		ext += ".gz"
	}
	switch {
	case cfg.Key != "":
		p.res.Key, err = JoinKey(cfg.Prefix, cfg.Key)
		if err == nil && gzip && !strings.HasSuffix(strings.ToLower(cfg.Key), ".gz") {
			err = fmt.Errorf("key %s: --gzip compresses %s, so the key must end in .gz", cfg.Key, path)
		}
	default:
		t := fi.ModTime()
		if cfg.Time == TimeNow {
			t = cfg.Now()
		}
		p.res.Key, err = GeneratedKey(cfg.Prefix, cfg.Gateway, t, p.res.SourceSHA256, ext)
	}
	if err != nil {
		return p, &fileError{err}
	}
	if cfg.Validate && keyed {
		opts, err := keyOptions(ctx, cfg, p.res.Key)
		var fe *decode.FileError
		switch {
		case err == nil:
		case !errors.As(err, &fe):
			return p, err // the rules could not be read: the run stops
		case fe.Key == "":
			fe.Key = path
		}
		var checked decode.CheckResult
		if err == nil {
			checked, err = validate(ctx, path, p.src, size, opts)
			err = staleExport(cfg.Rules, err)
		}
		if err != nil {
			if ctx.Err() != nil {
				return p, ctx.Err()
			}
			return p, &fileError{err}
		}
		p.res.noteSetAside(checked)
	}
	if gzip {
		if err := p.compress(ctx, cfg.TempDir); err != nil {
			return p, err
		}
	}
	return p, nil
}

// keyOptions are the options a file uploaded under key is validated
// with: those of its rules (Config.RulesFor, else Config.Rules) over its
// base options. Errors: a *decode.FileError refuses the file (no rules
// for the key, or they read it with other settings); any other is
// RulesFor's.
func keyOptions(ctx context.Context, cfg Config, key string) (ValidateOptions, error) {
	rules, base := cfg.Rules, cfg.ValidateOptions
	if cfg.RulesFor != nil {
		var err error
		if rules, base, err = cfg.RulesFor(ctx, key); err != nil {
			return base, err
		}
	}
	if rules == nil {
		return base, nil
	}
	return rules.options(key, base)
}

// openError is the file error of a file that cannot be opened, worded as
// Validate words it when validation is on.
func openError(cfg Config, path string, err error) error {
	if cfg.Validate {
		err = &decode.FileError{Key: path, Reason: "cannot read file", Err: err}
	}
	return &fileError{err}
}

func hashFile(ctx context.Context, r io.ReaderAt, size int64) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, storage.ContextReader(ctx, io.NewSectionReader(r, 0, size))); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// compressible reports whether --gzip applies: a CSV or TSV file that is
// not gzip-compressed already.
func compressible(path string, f io.ReaderAt) bool {
	head := make([]byte, 4)
	n, _ := f.ReadAt(head, 0)
	format, gz, err := decode.DetectFormat(path, head[:n])
	return err == nil && !gz && (format == decode.FormatCSV || format == decode.FormatTSV)
}

// compress replaces the body by a gzip copy in dir. The gzip header carries
// no name and no time, so the same input always gives the same bytes with
// one timelake build.
func (p *prepared) compress(ctx context.Context, dir string) error {
	tmp, err := os.CreateTemp(dir, "timelake-upload-*.gz")
	if err != nil {
		return fmt.Errorf("gzip %s: %w", p.res.File, err)
	}
	p.temp = tmp.Name()
	h := sha256.New()
	zw := gzip.NewWriter(io.MultiWriter(tmp, h))
	_, err = io.Copy(zw, storage.ContextReader(ctx, io.NewSectionReader(p.src, 0, p.res.Size)))
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		tmp.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &fileError{fmt.Errorf("gzip %s: %w", p.res.File, err)}
	}
	size, err := tmp.Seek(0, io.SeekCurrent)
	if err != nil {
		tmp.Close()
		return fmt.Errorf("gzip %s: %w", p.res.File, err)
	}
	p.body.Close()
	p.body = tmp
	p.res.Size, p.res.SHA256, p.res.Gzipped = size, hex.EncodeToString(h.Sum(nil)), true
	return nil
}

// contentType is the MIME type stored with an object, from its key.
func contentType(key string) string {
	k := strings.ToLower(key)
	switch {
	case strings.HasSuffix(k, ".gz"):
		return "application/gzip"
	case strings.HasSuffix(k, ".csv"):
		return "text/csv"
	case strings.HasSuffix(k, ".tsv"):
		return "text/tab-separated-values"
	case strings.HasSuffix(k, ".parquet"):
		return "application/vnd.apache.parquet"
	}
	return "application/octet-stream"
}

// maxPutAttempts bounds the put -> 412 -> object gone (ingest loaded and
// deleted it meanwhile) -> put again loop.
const maxPutAttempts = 3

// send creates the object, or settles an existing one.
func send(ctx context.Context, cfg Config, p *prepared) (FileResult, error) {
	res := p.res
	threshold := cfg.MultipartThreshold
	if threshold <= 0 {
		threshold = storage.DefaultMultipartThreshold
	}
	if res.Size >= threshold {
		// A large retry costs one HEAD instead of a full resend. Any error
		// (e.g. 403 without s3:GetObject) just means "not known": the
		// conditional put below still protects the key.
		if why, err := sameContent(ctx, cfg.Store, res); err == nil {
			return settleExisting(cfg.Store, res, why)
		}
	}
	opts := storage.UploadOptions{
		IfAbsent:           true,
		SHA256:             res.SHA256,
		ContentType:        contentType(res.Key),
		MultipartThreshold: cfg.MultipartThreshold,
		PartSize:           cfg.PartSize,
		Concurrency:        cfg.Concurrency,
	}
	if res.Gzipped {
		opts.Metadata = map[string]string{MetaSourceSHA256: res.SourceSHA256}
	}
	for attempt := 1; ; attempt++ {
		var done func()
		if cfg.Progress != nil {
			opts.Progress, done = cfg.Progress(res.File, res.Size)
		}
		ur, err := storage.Upload(ctx, cfg.Store, res.Key, p.body, res.Size, opts)
		if done != nil {
			done()
		}
		switch {
		case err == nil:
			res.Status, res.Multipart, res.Parts = Uploaded, ur.Multipart, ur.Parts
			return res, nil
		case errors.Is(err, storage.ErrChecksumMismatch):
			return res, &fileError{err}
		case !errors.Is(err, storage.ErrPreconditionFailed):
			return res, err
		}
		// The key exists: a retry of this very file, or a conflict.
		why, err := sameContent(ctx, cfg.Store, res)
		if errors.Is(err, storage.ErrNotExist) && attempt < maxPutAttempts {
			continue // gone since the put: try again
		}
		if storage.IsAccessDenied(err) {
			return res, &fileError{fmt.Errorf("%s already exists in %s and cannot be compared with %s: the credentials lack s3:GetObject, which the already-uploaded check needs: %w",
				res.Key, cfg.Store.URI(), res.File, err)}
		}
		if err != nil {
			return res, err
		}
		return settleExisting(cfg.Store, res, why)
	}
}

// settleExisting turns the comparison with an existing object (why: "" when
// it holds the same content) into the file's outcome.
func settleExisting(s storage.Store, res FileResult, why string) (FileResult, error) {
	if why == "" {
		res.Status = AlreadyUploaded
		return res, nil
	}
	return res, &fileError{fmt.Errorf("%s: %w in %s (%s); corrections must be uploaded as new files under new keys, since ingest skips keys it has already loaded",
		res.Key, ErrKeyConflict, s.URI(), why)}
}

// sameContent compares the object at res.Key with the file: "" when it is
// the same content, else why not. It compares, in this order, the
// source-sha256 metadata (objects gzipped on the way), the sha256 metadata,
// and without metadata (folders, other clients) the size and then the
// SHA-256 of the object's bytes (a download). ErrNotExist when there is no
// object.
func sameContent(ctx context.Context, s storage.Store, res FileResult) (string, error) {
	info, meta, err := storage.StatMetadata(ctx, s, res.Key)
	if err != nil {
		return "", err
	}
	if src := meta[MetaSourceSHA256]; src != "" {
		if src == res.SourceSHA256 {
			return "", nil
		}
		return "source SHA-256 " + short(src) + " there, " + short(res.SourceSHA256) + " here", nil
	}
	if sum := meta[storage.MetaSHA256]; sum != "" {
		if sum == res.SHA256 && info.Size == res.Size {
			return "", nil
		}
		return fmt.Sprintf("%d bytes with SHA-256 %s there, %d bytes with %s here", info.Size, short(sum), res.Size, short(res.SHA256)), nil
	}
	if info.Size != res.Size {
		return fmt.Sprintf("%d bytes there, %d here", info.Size, res.Size), nil
	}
	rc, _, err := s.Get(ctx, res.Key)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return "", fmt.Errorf("read %s: %w", res.Key, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != res.SHA256 {
		return "SHA-256 " + short(sum) + " there, " + short(res.SHA256) + " here", nil
	}
	return "", nil
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// settleSpool deletes the uploaded spool file or moves it to cfg.Done, if
// it is still what was read (errChangedAfterUpload: then the run rejects
// it, so that the rows written after the read are neither lost nor sent
// twice).
func settleSpool(cfg Config, res *FileResult) error {
	fi, err := os.Stat(res.File)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // moved or deleted by an overlapping run meanwhile
	}
	if err != nil {
		return fmt.Errorf("uploaded %s as %s but cannot look at it again (the next run will find it already uploaded): %w", res.File, res.Key, err)
	}
	if now := stateOf(fi); !now.same(res.read) {
		return &fileError{fmt.Errorf("%s: %w as %s: it had %d bytes, modified %s, and has %d, modified %s",
			res.File, errChangedAfterUpload, res.Key, res.read.size, res.read.modTime.UTC().Format(time.RFC3339Nano),
			now.size, now.modTime.UTC().Format(time.RFC3339Nano))}
	}
	if cfg.Done == "" {
		if err := os.Remove(res.File); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("uploaded %s as %s but could not delete it (the next run will find it already uploaded): %w", res.File, res.Key, err)
		}
		res.Deleted = true
		return nil
	}
	dst, err := moveFile(res.File, cfg.Done, res.SourceSHA256[:HashChars], "")
	if errors.Is(err, fs.ErrNotExist) {
		return nil // moved or deleted by an overlapping run meanwhile
	}
	if err != nil {
		return fmt.Errorf("uploaded %s as %s but could not move it to %s (the next run will find it already uploaded): %w", res.File, res.Key, cfg.Done, err)
	}
	res.MovedTo = dst
	return nil
}

// moveFile moves src into dir without replacing a file there: a name that
// is taken gets "-<tag>" before its extension. Across file systems it
// copies, syncs and removes.
// With a report suffix, a report is to be written beside the moved file
// (dst+reportSuffix): a name is also taken when its report's name is, and
// a file named like a report gets the tag too, so that no report is
// written over a file moved there.
func moveFile(src, dir, tag, reportSuffix string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	base := filepath.Base(src)
	dst := filepath.Join(dir, base)
	stem, ext := splitExt(base)
	if taken(dst) || (reportSuffix != "" && (taken(dst+reportSuffix) || strings.HasSuffix(base, reportSuffix))) {
		dst = filepath.Join(dir, stem+"-"+tag+ext)
	}
	err := os.Link(src, dst)
	// A rejected file's tag is the time: another file may hold the name.
	for n := 2; reportSuffix != "" && errors.Is(err, fs.ErrExist) && !sameFile(src, dst); n++ {
		if n > 100 {
			return "", fmt.Errorf("%s and the names numbered up to 100 are taken in %s", dst, dir)
		}
		dst = filepath.Join(dir, stem+"-"+tag+"-"+strconv.Itoa(n)+ext)
		err = os.Link(src, dst)
	}
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		// Same name and same tag: the same file was moved before (a
		// done file's tag is its hash; a rejected file is the same file).
	case errors.Is(err, fs.ErrNotExist):
		return "", err // src moved by an overlapping run
	default:
		if err := copyFile(src, dst); err != nil {
			return "", err
		}
	}
	if err := os.Remove(src); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return dst, nil
}

// taken reports whether a file (or anything) is at path.
func taken(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// sameFile reports whether a and b are one file (a hard link of it).
func sameFile(a, b string) bool {
	fa, errA := os.Lstat(a)
	fb, errB := os.Lstat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// rejectReportSuffix ends the name of the report written beside a rejected
// spool file.
const rejectReportSuffix = ".error.json"

// writeNew writes a new file at path, never over one that is there.
func writeNew(path string, body []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}
