package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/timelake/timelake/internal/decode"
	_ "github.com/timelake/timelake/internal/decode/pqarrowio" // Parquet read (and rejects written) with pqarrow
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/profile"
	"github.com/timelake/timelake/internal/storage"
)

// dryRunLoadedReason says what a run without --dry-run does with a key
// loaded before (batch b) that is in the landing bucket again with size
// bytes: a size other than the one loaded is other content (quarantined)
// unless the file was compressed; the rest is judged by the content's
// hash, which a dry run does not read.
func dryRunLoadedReason(b lake.BatchInfo, size int64) string {
	// A compressed file is judged by its decompressed content: another
	// size may hold the same (compressed again at another level).
	content := b.Summary[lake.SummaryContentSHA256]
	compressed := content != "" && content != b.Summary[lake.SummarySourceSHA256]
	if was, err := strconv.ParseInt(b.Summary[lake.SummarySourceSize], 10, 64); err == nil && was != size && !compressed {
		return fmt.Sprintf("snapshot %d, of %d bytes where the file now has %d: a run without --dry-run quarantines it as other content under a loaded key", b.SnapshotID, was, size)
	}
	return fmt.Sprintf("snapshot %d; a run without --dry-run deletes it if it holds the content loaded (it quarantines it otherwise)", b.SnapshotID)
}

// prepare takes one landing object as far as it goes before the commit:
// download, the already-loaded check, decode, data files written. Problems
// with the file itself end in quarantine (done); anything else is a fatal
// item error that leaves the object in place. admit is called once, after
// the download and before the decode, with the file's share of the memory
// budget (admission), and blocks until the share is free (an error: ctx is
// done). The file is decoded and written in pieces of at most the budget
// (decode.DecodeEach, lake.BatchWriter), which commit as one snapshot.
func (r *runner) prepare(ctx context.Context, o storage.ObjectInfo, admit func(share int64) error) *item {
	it := &item{obj: o, res: FileResult{Key: o.Key, Size: o.Size, landed: o.LastModified}, start: time.Now()}
	if r.cfg.DryRun {
		it.res.Status, it.done = WouldLoad, true
		if r.tbl != nil {
			b, ok, err := r.tbl.FindLoaded(ctx, o.Key)
			if err != nil {
				it.err = err
				return it
			}
			if ok {
				it.res.Status, it.res.SnapshotID, it.res.Rows = AlreadyLoaded, b.SnapshotID, b.Rows
				it.res.Reason = dryRunLoadedReason(b, o.Size)
				return it
			}
			// The profile the file would be read with, or why it would
			// be refused (two match its key).
			if _, prof, err := r.fileSettings(o.Key); err != nil {
				it.res.Reason = strings.TrimPrefix(err.Error(), o.Key+": ")
			} else if prof != nil {
				it.res.Profile = prof.Name
			}
		}
		return it
	}
	d, err := r.download(ctx, o)
	if err != nil {
		r.notFetched(ctx, it, err)
		return it
	}
	// A requeued file says when it first landed; one its writer dated
	// ahead landed when this host saw it change.
	now := time.Now()
	o.LastModified = landing.LandedAt(storage.ObjectInfo{LastModified: o.LastModified, Metadata: d.info.Metadata})
	if ahead := landing.ClockAhead(o.LastModified, now); ahead > 0 {
		r.noteClockAhead(o.Key, ahead)
		o.LastModified = landing.LandedTime(o.LastModified, d.info.Changed, now)
	}
	it.res.landed = o.LastModified
	defer d.close()
	it.src = d
	it.res.Size, it.res.sha256 = d.info.Size, d.sha256
	if r.complete != (landing.Settle{}) {
		w, err := r.complete.Judge(o.Key, d.f, d.info.Size, landing.AgeFrom(d.info.LastModified, d.info.Changed, now), now)
		if err != nil {
			it.err = fmt.Errorf("read the download of %s: %w", o.Key, err)
			return it
		}
		if w.Waiting() {
			it.res.Status, it.res.Reason, it.res.ReadyAt, it.res.OpenEnd, it.done = Waiting, w.Reason+"; a later run loads it", w.Until, w.OpenEnd, true
			return it
		}
		it.openEndNote = w.Note
	}

	if r.tbl != nil {
		b, ok, err := r.tbl.FindLoaded(ctx, o.Key)
		if err != nil {
			it.err = err
			return it
		}
		if ok {
			it.res, it.err = r.alreadyLoaded(ctx, it.res, d, b)
			it.done = true
			return it
		}
		if done := r.sameContent(ctx, it, d); done {
			return it
		}
	}
	reject := func(cause error) *item {
		// Before the table exists a refusal may come from a setting
		// (--time-column, --series-key), so the file waits; one that no
		// setting can make readable is quarantined at once.
		if r.tbl == nil && ctx.Err() == nil && !errors.Is(cause, errNameNotUTF8) && !decode.IsUnreadable(cause) && !errors.Is(cause, lake.ErrTooWide) {
			it.deferred = cause
			return it
		}
		it.res, it.err = r.reject(ctx, it.res, d, cause)
		// A file the run could not set aside (it was stopped, the
		// landing bucket refused) stays where it is, without a line.
		it.done = it.err == nil
		return it
	}
	if !utf8.ValidString(o.Key) {
		// A batch id is a string of the table's metadata (JSON, UTF-8):
		// this key could not be recognised as loaded again.
		return reject(fmt.Errorf("%q: %w", o.Key, errNameNotUTF8))
	}
	share := admission(decode.DecodedSize(d.source(), d.decompressed), r.memoryBudget())
	if err := admit(share); err != nil {
		it.err = err
		return it
	}
	summary := map[string]string{
		lake.SummarySourceSize:   strconv.FormatInt(d.info.Size, 10),
		lake.SummarySourceSHA256: d.sha256,
		lake.SummarySourceETag:   d.info.ETag,
	}
	if by := r.loadedByOf(o.Key); by != "" {
		summary[lake.SummaryLoadedBy] = by
	}
	if !o.LastModified.IsZero() {
		summary[lake.SummarySourceModified] = o.LastModified.UTC().Format(time.RFC3339Nano)
	}
	if d.content != "" && d.compressed() {
		summary[lake.SummaryContentSHA256] = d.content
	}
	wr, err := r.writePieces(ctx, o.Key, d, summary)
	var fatal *fatalError
	var unset *setAsideError
	switch {
	case errors.As(err, &fatal):
		it.err = fatal.err
		return it
	case errors.As(err, &unset):
		if r.stopsRun(ctx, unset.err) {
			it.err = r.landingErr(unset.err)
			return it
		}
		r.log.Info("could not set the refused rows of a file aside; it stays in the landing bucket", "key", o.Key, "err", unset.err)
		it.res.Status, it.done = Failed, true
		it.res.Reason = fmt.Sprintf("%d rows are refused (--on-error skip-rows) and could not be set aside (%v); the file stays in the landing bucket and a later run tries again", unset.rows, unset.err)
		return it
	case err != nil:
		return reject(err)
	}
	it.prepared, it.res.DuplicateRows, it.res.Profile = wr.prepared, wr.dups, wr.profile
	it.res.ReplacedRows = wr.prepared.Replaced
	it.res.RejectedRows, it.res.RejectsTo = wr.rejected, wr.rejectsTo
	return it
}

// fatalError marks an error of writePieces that is not the file's: the
// file stays in the landing bucket.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

// setAsideError says the rows refused under --on-error skip-rows could not
// be set aside (rows of them): the file stays in the landing bucket.
type setAsideError struct {
	rows int
	err  error
}

func (e *setAsideError) Error() string { return e.err.Error() }

// written is what writePieces made of a file: its batch to commit, the
// rows of a piece whose (series key, time) an earlier row of the piece
// has (dups), its source profile, and the rows set aside under
// --on-error skip-rows with their rejects file.
type written struct {
	prepared  *lake.Prepared
	dups      int64
	profile   string
	rejected  int64
	rejectsTo string
}

// writePieces decodes d in pieces of at most the memory budget (decoded
// bytes, decode.DecodedSize) and writes each as data files of one batch
// (the file's snapshot, to commit), with the source columns filled
// (sourceColumns). When there is no table yet, the whole file is decoded
// first (nothing kept but its schema), and the table is created from it
// only if every row decodes. Rows refused under --on-error skip-rows come
// with the last piece: they are set aside (setAside) before the batch is
// returned, since once its rows are committed the landing file goes, and
// the rows refused with it. The file's own problems (it does not decode,
// a required column is null) come back as they are, to quarantine it; a
// rejects file that cannot be written as a *setAsideError; others as a
// *fatalError.
func (r *runner) writePieces(ctx context.Context, key string, d *download, summary map[string]string) (*written, error) {
	if r.tbl == nil {
		var first decode.Decoded
		_, err := r.decodeEach(ctx, d, func(dec *decode.Decoded) error {
			defer dec.Release()
			if dec.Piece == 0 {
				// Too wide a file is refused at its first piece,
				// before the rest is decoded.
				if err := lake.CheckCreateWidth(dec.Schema, r.cfg.MaxColumns); err != nil {
					return widthError(key, err)
				}
			}
			first.Schema, first.TimeColumn = dec.Schema, dec.TimeColumn
			return nil
		})
		if err != nil {
			return nil, err
		}
		// The other files start once the table exists, before this one
		// is committed: a copy of it among them must find it loading.
		if r.cfg.ContentDedupe && d.content != "" {
			r.claimContent(key, d.content)
		}
		if err := r.createTable(ctx, key, &first); err != nil {
			var fe *decode.FileError
			if errors.As(err, &fe) {
				return nil, err
			}
			return nil, &fatalError{r.lakeErr(err)}
		}
	}
	var w *lake.BatchWriter
	out := &written{}
	var rows int64
	drop := func() {
		if w != nil {
			w.Discard(context.WithoutCancel(ctx))
			w = nil
		}
	}
	loadTime := r.cfg.Now()
	prof, err := r.decodeEach(ctx, d, func(dec *decode.Decoded) (err error) {
		defer dec.Release()
		// A panic while the piece is converted or written (arrow-go's
		// writer, the sort) refuses this file alone; the commit protocol
		// does not run here.
		defer func() {
			if v := recover(); v != nil {
				err = decode.Recovered(key, "the writer", "writing its data files", "", v)
			}
		}()
		if r.cfg.FaultHook != nil {
			r.cfg.FaultHook("write", key)
		}
		if dec.Piece == 0 {
			drop() // the decode started over
			rows = 0
			// Columns the file adds (--evolve add-columns) must
			// leave a table its manifests can carry.
			if err := r.tbl.CheckWidth(dec.Schema, r.cfg.MaxColumns); err != nil {
				return widthError(key, err)
			}
		}
		if w == nil {
			var err error
			if w, err = r.tbl.NewBatchWriter(key, summary, 0); err != nil {
				return &fatalError{r.lakeErr(err)}
			}
		}
		recs, release, err := r.sourceColumns(key, loadTime, dec)
		if err != nil {
			return err
		}
		defer release()
		w.SetPartial(dec.More)
		if err := w.Write(ctx, recs); err != nil {
			if errors.Is(err, lake.ErrRequiredNull) || errors.Is(err, lake.ErrTooManyPartitions) || errors.Is(err, lake.ErrPartitionName) {
				return err
			}
			if decode.IsPanic(err) { // on a writer's goroutine
				return decode.PanicRefusal(key, "the writer crashed while writing its data files", err)
			}
			return &fatalError{r.lakeErr(err)}
		}
		rows += dec.Rows
		if len(dec.Rejected) > 0 {
			dst, err := r.setAside(ctx, d, dec, rows)
			if err != nil {
				return &setAsideError{rows: len(dec.Rejected), err: err}
			}
			out.rejected, out.rejectsTo = int64(len(dec.Rejected)), dst
			summary[lake.SummaryRejectedRows] = strconv.Itoa(len(dec.Rejected))
			summary[lake.SummaryRejectsFile] = dst
		}
		return nil
	})
	if err != nil {
		drop()
		return nil, err
	}
	out.prepared, out.profile = w.Prepared(), prof
	out.dups = out.prepared.Repeated // counted by the sort of each piece
	return out, nil
}

// decodeEach decodes d (decode.DecodeEach) with the settings that apply
// to it (fileSettings), against the table, or for a new one, in pieces of
// at most the memory budget; it returns the name of its source profile
// ("" for none).
func (r *runner) decodeEach(ctx context.Context, d *download, fn func(*decode.Decoded) error) (string, error) {
	fs, prof, err := r.fileSettings(d.info.Key)
	if err != nil {
		return "", err
	}
	opts := decode.DecodeOptions{TimeUnit: fs.TimeUnit, AssumeLocation: fs.AssumeLocation,
		CSV: fs.CSV, Columns: fs.Columns, OnError: fs.OnError, MaxBadRows: fs.MaxBadRows, PieceBytes: r.memoryBudget(), Format: fs.Format,
		MaxRecordBytes: maxRecordBytes(r.memoryBudget()),
		CheckColumns:   func(sc *arrow.Schema) error { return r.checkColumnCount(d.info.Key, sc) }}
	if r.tbl != nil {
		opts.Target = r.tbl.ArrowSchema()
		opts.TimeColumn = r.tbl.Contract().TimeColumn
		opts.Evolve = fs.Evolve
		if fs.TimeColumn != "" && fs.TimeColumn != opts.TimeColumn {
			// The profile's files name the time column their own way.
			opts.Renames = map[string]string{fs.TimeColumn: opts.TimeColumn}
		}
	} else {
		opts.TimeColumn = fs.TimeColumn
	}
	name := ""
	if prof != nil {
		name = prof.Name
	}
	if hook := r.cfg.FaultHook; hook != nil {
		// The hook runs on the decoder's stack, as a reader's code does.
		write := fn
		fn = func(dec *decode.Decoded) error {
			hook("decode", d.info.Key)
			return write(dec)
		}
	}
	return name, decode.DecodeEach(ctx, d.source(), opts, fn)
}

// checkColumnCount refuses the file key, whose columns as read are sc,
// when they would give the table more columns than it may have
// (lake.MaxColumns): before a value is decoded, whether the file creates the
// table, adds its columns to it (--evolve add-columns) or is refused for
// them (without). The schema's size is checked once the file is decoded
// (writePieces), when its types are known.
func (r *runner) checkColumnCount(key string, sc *arrow.Schema) error {
	if r.tbl == nil {
		return widthError(key, lake.CheckCreateColumns(sc.NumFields(), r.cfg.MaxColumns))
	}
	have := r.tbl.ArrowSchema()
	added := 0
	for i := range sc.NumFields() {
		if !have.HasField(sc.Field(i).Name) {
			added++
		}
	}
	return widthError(key, r.tbl.CheckAddedColumns(added, r.cfg.MaxColumns))
}

// maxRecordBytes is the longest row of text a file may hold under a
// memory budget: a quarter of it (at least 1 MiB), so that a row is held
// whole and copied on its way within the budget.
func maxRecordBytes(budget int64) int64 { return max(budget/4, 1<<20) }

// memoryBudget is Config.MemoryBudget or its default.
func (r *runner) memoryBudget() int64 {
	if r.cfg.MemoryBudget > 0 {
		return r.cfg.MemoryBudget
	}
	return DefaultMemoryBudget
}

// fileSettings are the settings a landing key is read with: the run's
// (Config), each table-level one from the table's property when the run
// does not set it, and the source profile the key matches over them
// (profile.Profile.Apply). Errors: the table's profiles do not read, or
// two match the key (profile.ErrAmbiguous); the file is refused with it,
// as a setting's refusal.
func (r *runner) fileSettings(key string) (profile.FileSettings, *profile.Profile, error) {
	fs := profile.FileSettings{CSV: r.cfg.CSV, Columns: r.cfg.Columns, TimeUnit: r.cfg.TimeUnit,
		AssumeLocation: r.cfg.AssumeLocation, Evolve: r.cfg.Evolve, OnError: r.cfg.OnError, MaxBadRows: r.cfg.MaxBadRows}
	if r.tbl == nil {
		fs.TimeColumn = r.cfg.TimeColumn
		return fs, nil, nil
	}
	props := r.tbl.Properties()
	fs = profile.TableDefaults(fs, props, func(prop string, err error) {
		// Written by another tool (tables alter checks them): ignored,
		// as without the property.
		r.log.Warn("table property ignored", "property", prop, "err", err)
	})
	set, err := profile.FromProperties(props)
	if err != nil {
		return fs, nil, &profileError{err}
	}
	p, err := set.For(key)
	if err != nil {
		return fs, nil, &profileError{fmt.Errorf("%s: %w", key, err)}
	}
	return p.Apply(fs), p, nil
}

// profileError refuses a file because of the table's source profiles
// (their properties do not read, or two match its key): a setting's
// refusal, requeued once they are fixed.
type profileError struct{ err error }

func (e *profileError) Error() string { return e.err.Error() }

func (e *profileError) Unwrap() error { return e.err }

// sourceColumns returns dec's records with the source columns filled
// (docs/schema.md, "Source columns"): the landing key, and the time the
// file was loaded, in the columns the run or the table names; a column
// the table lacks is added to the schema with the file's commit (as
// --evolve adds one). A file that holds values in such a column of its
// own is refused: they would be overwritten. loadTime is the same for
// every piece of a file. release frees what it made.
func (r *runner) sourceColumns(key string, loadTime time.Time, dec *decode.Decoded) ([]arrow.RecordBatch, func(), error) {
	src, loaded := r.sourceColumnNames()
	if src == "" && loaded == "" {
		return dec.Records, func() {}, nil
	}
	var cols []lake.SourceValue
	if src != "" {
		cols = append(cols, lake.SourceValue{Column: src, Text: key})
	}
	if loaded != "" {
		cols = append(cols, lake.SourceValue{Column: loaded, Time: loadTime})
	}
	recs, err := lake.WithSourceColumns(dec.Schema, dec.Records, cols)
	var sce *lake.SourceColumnError
	if errors.As(err, &sce) {
		return nil, nil, &decode.FileError{Key: key, Column: sce.Column, Reason: sce.Reason}
	}
	if err != nil {
		return nil, nil, err
	}
	return recs, func() {
		for _, rec := range recs {
			rec.Release()
		}
	}, nil
}

// sourceColumnNames returns the columns of the landing key and of the
// load time ("" for none): the run's settings, else the table's
// properties.
func (r *runner) sourceColumnNames() (source, loadTime string) {
	props := r.tbl.Properties()
	return cmp.Or(r.cfg.SourceColumn, props[lake.PropSourceColumn]), cmp.Or(r.cfg.LoadTimeColumn, props[lake.PropLoadTimeColumn])
}

// setAside writes the rows of d that were refused (--on-error
// skip-rows; dec: the file's last piece, which carries them; loaded: the
// rows of all its pieces) as a rejects file with its report next to the
// quarantine (landing.Bucket.SetAside) and returns its key there.
func (r *runner) setAside(ctx context.Context, d *download, dec *decode.Decoded, loaded int64) (string, error) {
	f, err := os.CreateTemp(r.cfg.WorkDir, downloadPrefix(r.cfg.Holder)+"rejects-*")
	if err != nil {
		return "", &workDirError{dir: r.workDir(), err: err}
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	ext, err := dec.WriteRejects(decode.Source{Key: d.info.Key, R: d.f, Size: d.info.Size}, f)
	if err != nil {
		return "", fmt.Errorf("write the refused rows of %s: %w", d.info.Key, err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return "", err
	}
	first := dec.Rejected[0]
	rep := landing.Report{Table: r.cfg.Table.String(), Kind: landing.KindRows, SourceKey: d.info.Key, SourceSHA256: d.sha256,
		Reason: fmt.Sprintf("%d of %d rows of %s refused (--on-error skip-rows), the first at row %d: %s; the other %d rows are loaded",
			len(dec.Rejected), loaded+int64(len(dec.Rejected)), d.info.Key, first.Row, first.Reason, loaded),
		Row: first.Row, Column: first.Column, Value: first.Value, Rows: dec.Rejected, At: r.cfg.Now().UTC(),
		Hint: "fix the rows (or the setting that refused them) and send them again as a new file, or put this file back with timelake landing requeue KEY once a setting is fixed"}
	return r.bucket.SetAside(ctx, landing.RejectsKey(d.info.Key, ext), io.NewSectionReader(f, 0, size), size, rep)
}

// createTable creates the table from the first decoded file, or loads it if
// another writer created it first.
func (r *runner) createTable(ctx context.Context, key string, dec *decode.Decoded) error {
	for _, k := range r.cfg.SeriesKey {
		if len(dec.Schema.FieldIndices(k)) == 0 {
			return &decode.FileError{Key: key, Column: k, Reason: "series key column is not in the file (check --series-key)"}
		}
	}
	if name := lake.PartitionFieldName(dec.TimeColumn, r.cfg.Partition); len(dec.Schema.FieldIndices(name)) > 0 {
		return &decode.FileError{Key: key, Column: name, Reason: lake.ErrPartitionName.Error()}
	}
	spec := lake.CreateSpec{TimeColumn: dec.TimeColumn, SeriesKey: r.cfg.SeriesKey, Partition: r.cfg.Partition, Properties: map[string]string{}}
	// The run's table-level settings become the table's, for every writer.
	for k, v := range map[string]string{lake.PropEvolve: string(r.cfg.Evolve), lake.PropOnError: string(r.cfg.OnError),
		lake.PropSourceColumn: r.cfg.SourceColumn, lake.PropLoadTimeColumn: r.cfg.LoadTimeColumn} {
		if v != "" {
			spec.Properties[k] = v
		}
	}
	if r.cfg.MaxBadRows.IsSet() {
		spec.Properties[lake.PropMaxBadRows] = r.cfg.MaxBadRows.String()
	}
	tbl, err := r.cfg.Lake.CreateTable(ctx, r.cfg.Table, dec.Schema, spec)
	if errors.Is(err, lake.ErrTableExists) {
		tbl, err = r.cfg.Lake.LoadTable(ctx, r.cfg.Table)
		if err != nil {
			return err
		}
		r.tbl = tbl
		r.noteTableReady()
		return nil
	}
	if err != nil {
		return err
	}
	r.tbl = tbl
	created := CreatedFrom(r.cfg.Table, tbl.Metadata(), key)
	r.rep.Created = created
	if r.cfg.OnCreate != nil {
		r.cfg.OnCreate(created)
	}
	r.noteTableReady()
	return nil
}

// noteTableReady tells load that the table exists (tableReady), so that
// the other files start while the one that created it is written.
func (r *runner) noteTableReady() {
	if r.tableReady != nil {
		r.tableReady()
	}
}
