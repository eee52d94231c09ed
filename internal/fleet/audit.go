package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

// Defaults of an audit.
const (
	// DefaultStuckAfter is how long a file may wait in the landing bucket
	// before the audit calls it stuck: a cron poller loads within a
	// minute or two, serve within seconds.
	DefaultStuckAfter = 15 * time.Minute
	// DefaultAuditLimit is how many files each finding lists (all are
	// counted).
	DefaultAuditLimit = 20
	// DefaultAuditSince is how far back the audit looks for files a serve
	// loaded by its sweep.
	DefaultAuditSince = 24 * time.Hour
)

// auditReads bounds the landing files the audit reads at once (to compare
// the content of a loaded key still in the landing bucket).
const auditReads = 4

// maxReasonGroups bounds the reasons the quarantine finding tells apart;
// the others are counted together.
const maxReasonGroups = 50

// Finding kinds, in the order the report gives them.
const (
	// FindingStuck: a file not loaded, waiting longer than StuckAfter: no
	// poller runs (a stopped cron line, a serve that is down or has lost
	// its lease), or its load keeps failing.
	FindingStuck = "stuck"
	// FindingChanged: the key was loaded, and the file under it now has
	// other content: it was changed after the load (ingest quarantines it
	// as such at its next look; corrections need a new key).
	FindingChanged = "changed-after-load"
	// FindingLeftAfterLoad: the key was loaded with this very content and
	// the file is still in the landing bucket, older than StuckAfter: a
	// poller stopped between its commit and the delete, and none ran
	// since (the next run deletes it).
	FindingLeftAfterLoad = "loaded-not-deleted"
	// FindingQuarantined: files in the quarantine, counted by reason.
	FindingQuarantined = "quarantined"
	// FindingSweepLoaded: files a serve loaded by its sweep since Since,
	// not by their notification: notifications that were lost.
	FindingSweepLoaded = "loaded-by-sweep"
	// FindingHistoryMissing: load history or outcome log segments the
	// table names and the store lacks (deleted by hand or by another
	// tool): the keys they held are no longer recognised as loaded.
	FindingHistoryMissing = "history-segment-missing"
	// FindingUnlisted: folders (or files) of a local landing folder, or
	// of its quarantine, that could not be listed (storage.UnlistedError:
	// permission denied, an I/O error): their files are neither loaded
	// nor audited until they can be.
	FindingUnlisted = "unlisted"
	// FindingClockAhead: files of the landing bucket whose modification
	// time is ahead of this host's clock by more than landing.ClockSkew:
	// the clock of the machine that wrote them is ahead. In a local folder
	// they are judged by the time this host saw them change, where the
	// system keeps it; else they wait until their time.
	FindingClockAhead = "clock-ahead"
)

var findingOrder = []string{FindingStuck, FindingChanged, FindingLeftAfterLoad, FindingQuarantined, FindingSweepLoaded, FindingHistoryMissing, FindingUnlisted, FindingClockAhead}

// findingText is what each finding means, and what to do.
var findingText = map[string]string{
	FindingStuck:          "files not loaded, waiting longer than the stuck threshold: is the poller running (cron line, serve and its lease)? does its log show a failing load?",
	FindingChanged:        "keys loaded before, now holding other content: the file was changed after it was loaded; send corrections under a new key (ingest quarantines these)",
	FindingLeftAfterLoad:  "files already loaded with this content but still in the landing bucket: a poller stopped between its commit and the delete, and none ran since (the next run deletes them)",
	FindingQuarantined:    "files in the quarantine: fix the cause and requeue them (timelake landing requeue), or discard them (timelake landing discard)",
	FindingSweepLoaded:    "files loaded by serve's sweep, not by their notification: notifications are being lost (check the bucket's notification set-up, and whether serve was down)",
	FindingHistoryMissing: "history segments the table names are gone from the store: the keys they held are no longer recognised as loaded (timelake tables maintain drops them from the table)",
	FindingUnlisted:       "folders of the landing folder that could not be listed: their files are neither loaded nor audited; let the user that runs timelake read them (a folder also needs execute permission)",
	FindingClockAhead:     "files modified in the future: the clock of the machine that wrote them is ahead of this host's; set it right (NTP). Their landing times are taken from this host's clock",
}

// AuditOptions are the inputs of Audit.
type AuditOptions struct {
	Bucket *landing.Bucket
	// Prefix limits the audit to landing keys below it (a poller's
	// --prefix).
	Prefix string
	// Accept, when set, limits the audit to the landing keys it takes,
	// waiting or quarantined: those of a routed table (as
	// StatusOptions.Accept). Nil takes every key.
	Accept func(key string) bool
	// Table is the table the landing bucket loads into; nil when it does
	// not exist yet (nothing is loaded).
	Table     *lake.Table
	TableName string
	// StuckAfter: 0 means DefaultStuckAfter.
	StuckAfter time.Duration
	// Since: files loaded by the sweep since then are reported; zero
	// means DefaultAuditSince before Now.
	Since time.Time
	// Limit is how many files each finding lists; 0 means
	// DefaultAuditLimit.
	Limit int
	Depth int
	Now   time.Time
}

// AuditReport is what Audit found.
type AuditReport struct {
	Table             string    `json:"table"`
	Landing           string    `json:"landing"`
	At                time.Time `json:"at"`
	StuckAfterSeconds float64   `json:"stuck_after_seconds"`
	Since             time.Time `json:"since"`
	// Checked counts what was read.
	Checked AuditChecked `json:"checked"`
	// Findings holds every kind, in a fixed order, with Count 0 when
	// nothing was found.
	Findings []Finding `json:"findings"`
	// Attention is set when any finding needs someone (exit code 1).
	Attention bool `json:"attention"`
}

// AuditChecked counts what an audit read.
type AuditChecked struct {
	// LandingFiles are the files listed in the landing bucket, Waiting
	// those of them not loaded and younger than the stuck threshold
	// (normal: the next run loads them).
	LandingFiles int `json:"landing_files"`
	Waiting      int `json:"waiting"`
	// Quarantined are the files in the quarantine, HistoryRecords the
	// records of the table's snapshots, load history and outcome log.
	Quarantined    int `json:"quarantined"`
	HistoryRecords int `json:"history_records"`
}

// Finding is one kind of problem: how many files, the first Limit of them
// (by key), and for the quarantine the count per reason.
type Finding struct {
	Kind      string        `json:"kind"`
	Attention bool          `json:"attention"`
	Count     int           `json:"count"`
	Meaning   string        `json:"meaning"`
	Files     []AuditFile   `json:"files"`
	Reasons   []ReasonCount `json:"reasons,omitempty"`
}

// AuditFile is one file of a finding.
type AuditFile struct {
	Key     string `json:"key"`
	Gateway string `json:"gateway"`
	Size    int64  `json:"size"`
	// Modified is the landing file's modification time (for a loaded
	// file, when it landed, if known).
	Modified *time.Time `json:"modified"`
	// SnapshotID and LoadedAt say where and when the key was loaded.
	SnapshotID int64      `json:"snapshot_id,omitempty"`
	LoadedAt   *time.Time `json:"loaded_at,omitempty"`
	// QuarantinedTo is the quarantined copy's key.
	QuarantinedTo string `json:"quarantined_to,omitempty"`
	// Detail says what was found (the reason of a quarantined file).
	Detail string `json:"detail"`
}

// ReasonCount is how many quarantined files one reason (its key, row,
// line and values left out) refused, with the first of them.
type ReasonCount struct {
	Reason  string `json:"reason"`
	Kind    string `json:"kind,omitempty"` // the report's: file or setting
	Count   int    `json:"count"`
	Example string `json:"example"`
}

// auditor gathers findings while the sources stream by; its methods are
// safe for concurrent use.
type auditor struct {
	o        AuditOptions
	mu       sync.Mutex
	findings map[string]*Finding
	reasons  map[string]*ReasonCount
	rep      *AuditReport
}

// add counts f under kind and keeps it when it is among the first Limit
// keys.
func (a *auditor) add(kind string, f AuditFile) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fd := a.findings[kind]
	fd.Count++
	i, _ := slices.BinarySearchFunc(fd.Files, f.Key, func(x AuditFile, k string) int { return strings.Compare(x.Key, k) })
	if i < a.o.Limit {
		fd.Files = slices.Insert(fd.Files, i, f)
		if len(fd.Files) > a.o.Limit {
			fd.Files = fd.Files[:a.o.Limit]
		}
	}
}

// Audit compares the landing bucket and the quarantine with what the
// table remembers, streaming both listings and the history. Errors:
// listing or reading the stores; a history segment that is missing is a
// finding, not an error.
func Audit(ctx context.Context, o AuditOptions) (*AuditReport, error) {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	if o.StuckAfter <= 0 {
		o.StuckAfter = DefaultStuckAfter
	}
	if o.Since.IsZero() {
		o.Since = now.Add(-DefaultAuditSince)
	}
	if o.Limit <= 0 {
		o.Limit = DefaultAuditLimit
	}
	a := &auditor{o: o, findings: map[string]*Finding{}, reasons: map[string]*ReasonCount{},
		rep: &AuditReport{Table: o.TableName, Landing: o.Bucket.Store.URI(), At: now.UTC().Truncate(time.Millisecond),
			StuckAfterSeconds: o.StuckAfter.Seconds(), Since: o.Since.UTC().Truncate(time.Millisecond)}}
	for _, k := range findingOrder {
		a.findings[k] = &Finding{Kind: k, Meaning: findingText[k], Files: []AuditFile{}}
	}
	missing := map[string]bool{}
	var hist *lake.LoadHistory
	if o.Table != nil {
		var gone []string
		var err error
		if hist, gone, err = o.Table.LoadHistoryPresent(ctx); err != nil {
			return nil, err
		}
		for _, n := range gone {
			missing[n] = true
		}
	}
	if err := a.landing(ctx, hist, now); err != nil {
		return nil, err
	}
	if err := a.quarantine(ctx); err != nil {
		return nil, err
	}
	if o.Table != nil {
		gone, err := o.Table.ScanHistory(ctx, func(r lake.LoadRecord) error {
			a.rep.Checked.HistoryRecords++
			if r.Outcome() == lake.OutcomeLoaded && r.LoadedBy == lake.LoadedBySweep && !r.LoadedAt.Before(o.Since) &&
				strings.HasPrefix(r.Key, o.Prefix) {
				a.add(FindingSweepLoaded, AuditFile{Key: r.Key, Gateway: GatewayOf(r.Key, o.Depth), Size: r.Size,
					Modified: timePtr(r.LandedAt), SnapshotID: r.SnapshotID, LoadedAt: timePtr(r.LoadedAt),
					Detail: "loaded by a sweep of serve, not after its notification"})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, n := range gone {
			missing[n] = true
		}
	}
	for _, n := range slices.Sorted(maps.Keys(missing)) {
		a.add(FindingHistoryMissing, AuditFile{Key: "metadata/" + n, Detail: "named by the table, not in the store"})
	}
	return a.report(), nil
}

// landing lists the landing bucket and looks every key up in the table:
// not loaded (waiting, or stuck when older than StuckAfter), loaded with
// other content, or loaded and left behind. A loaded key whose file has the
// recorded size is read and hashed to tell the last two apart.
func (a *auditor) landing(ctx context.Context, hist *lake.LoadHistory, now time.Time) error {
	o := a.o
	type check struct {
		obj    storage.ObjectInfo
		loaded lake.LoadRecord
	}
	checks := make(chan check, 2*auditReads)
	g, gctx := errgroup.WithContext(ctx)
	for range auditReads {
		g.Go(func() error {
			for c := range checks {
				sum, err := objectSHA256(gctx, o.Bucket.Store, c.obj.Key)
				if errors.Is(err, storage.ErrNotExist) {
					continue // settled meanwhile
				}
				if err != nil {
					return fmt.Errorf("read %s: %w", c.obj.Key, err)
				}
				a.settleLoaded(c.obj, c.loaded, c.loaded.SHA256 == "" || sum == c.loaded.SHA256, now)
			}
			return nil
		})
	}
	err := o.Bucket.List(gctx, o.Prefix, func(obj storage.ObjectInfo) error {
		if o.Accept != nil && !o.Accept(obj.Key) {
			return nil
		}
		a.mu.Lock()
		a.rep.Checked.LandingFiles++
		a.mu.Unlock()
		rec, ok, err := a.loaded(gctx, hist, obj.Key)
		if err != nil {
			return err
		}
		if ahead := landing.ClockAhead(obj.LastModified, now); ahead > 0 {
			a.add(FindingClockAhead, AuditFile{Key: obj.Key, Gateway: GatewayOf(obj.Key, o.Depth), Size: obj.Size,
				Modified: timePtr(obj.LastModified), Detail: "modified " + ahead.Round(time.Second).String() + " in the future"})
		}
		landed := landing.LandedTime(obj.LastModified, obj.Changed, now)
		switch {
		case !ok && now.Sub(landed) > o.StuckAfter:
			a.add(FindingStuck, AuditFile{Key: obj.Key, Gateway: GatewayOf(obj.Key, o.Depth), Size: obj.Size,
				Modified: timePtr(obj.LastModified),
				Detail:   "waiting for " + now.Sub(landed).Round(time.Second).String() + ", not loaded"})
		case !ok:
			a.mu.Lock()
			a.rep.Checked.Waiting++
			a.mu.Unlock()
		case rec.Size != obj.Size && rec.Size > 0:
			a.add(FindingChanged, loadedFile(obj, rec, o.Depth,
				fmt.Sprintf("loaded with %d bytes in snapshot %d, %d bytes now", rec.Size, rec.SnapshotID, obj.Size)))
		default:
			select {
			case checks <- check{obj, rec}:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	close(checks)
	if werr := g.Wait(); werr != nil {
		return werr
	}
	err = a.unlisted(err, false)
	if err != nil {
		return fmt.Errorf("list landing %s: %w", o.Bucket.Store.URI(), err)
	}
	return nil
}

// loaded looks key up: a snapshot of the current ancestry, else the load
// history (the segments still there).
func (a *auditor) loaded(ctx context.Context, hist *lake.LoadHistory, key string) (lake.LoadRecord, bool, error) {
	if a.o.Table == nil {
		return lake.LoadRecord{}, false, nil
	}
	if b, ok := a.o.Table.FindBatch(key); ok {
		size, _ := strconv.ParseInt(b.Summary[lake.SummarySourceSize], 10, 64)
		return lake.LoadRecord{Key: key, Size: size, SHA256: b.Summary[lake.SummarySourceSHA256], SnapshotID: b.SnapshotID,
			LoadedAt: b.CommittedAt}, true, nil
	}
	return hist.Find(ctx, key)
}

// settleLoaded files a loaded key that is still in the landing bucket:
// same content (left after the load; a finding once older than
// StuckAfter) or other content (changed after the load).
func (a *auditor) settleLoaded(obj storage.ObjectInfo, rec lake.LoadRecord, same bool, now time.Time) {
	switch {
	case !same:
		a.add(FindingChanged, loadedFile(obj, rec, a.o.Depth,
			fmt.Sprintf("loaded in snapshot %d with SHA-256 %s, other content now", rec.SnapshotID, rec.SHA256)))
	case now.Sub(obj.LastModified) > a.o.StuckAfter:
		a.add(FindingLeftAfterLoad, loadedFile(obj, rec, a.o.Depth,
			fmt.Sprintf("loaded in snapshot %d at %s, still here", rec.SnapshotID, rec.LoadedAt.UTC().Format(time.RFC3339))))
	default:
		a.mu.Lock()
		a.rep.Checked.Waiting++
		a.mu.Unlock()
	}
}

func loadedFile(obj storage.ObjectInfo, rec lake.LoadRecord, depth int, detail string) AuditFile {
	return AuditFile{Key: obj.Key, Gateway: GatewayOf(obj.Key, depth), Size: obj.Size, Modified: timePtr(obj.LastModified),
		SnapshotID: rec.SnapshotID, LoadedAt: timePtr(rec.LoadedAt), Detail: detail}
}

// objectSHA256 reads an object and returns the hex SHA-256 of its bytes.
func objectSHA256(ctx context.Context, st storage.Store, key string) (string, error) {
	rc, _, err := st.Get(ctx, key)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, storage.ContextReader(ctx, rc)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// quarantine counts the quarantined files by reason (reading each report,
// streamed: landing.Bucket.EachRejected).
func (a *auditor) quarantine(ctx context.Context) error {
	o := a.o
	err := o.Bucket.EachRejected(ctx, func(r landing.Rejected) error {
		if !strings.HasPrefix(r.Key, o.Prefix) || o.Accept != nil && !o.Accept(r.Key) {
			return nil
		}
		a.mu.Lock()
		a.rep.Checked.Quarantined++
		class := ReasonClass(r.Key, r.Reason, r.Value)
		rc := a.reasons[class]
		if rc == nil && len(a.reasons) >= maxReasonGroups {
			class = "(other reasons)"
			rc = a.reasons[class]
		}
		if rc == nil {
			rc = &ReasonCount{Reason: class, Kind: r.Kind, Example: r.Key}
			a.reasons[class] = rc
		}
		rc.Count++
		if r.Key < rc.Example {
			rc.Example = r.Key
		}
		a.mu.Unlock()
		a.add(FindingQuarantined, AuditFile{Key: r.Key, Gateway: GatewayOf(r.Key, o.Depth), Size: r.Size,
			Modified: timePtr(r.At), QuarantinedTo: r.QuarantinedTo, Detail: r.Reason})
		return nil
	})
	if err = a.unlisted(err, true); err != nil && !errors.Is(err, storage.ErrNotExist) {
		return err
	}
	return nil
}

// unlisted adds the gaps of a local listing (storage.UnlistedError, which
// LocalStore.List returns after listing everything else) as findings, and
// returns err without them: nil when they were all it said. Of the landing
// listing, the gaps ingest never loads from (hidden folders, the
// quarantine, which its own listing reports) are left out as ingest
// leaves them out.
func (a *auditor) unlisted(err error, quarantine bool) error {
	var gaps *storage.UnlistedError
	if !errors.As(err, &gaps) {
		return err
	}
	for _, g := range gaps.Gaps {
		if !quarantine && a.o.Bucket.Skipped(g.Key) {
			continue
		}
		a.add(FindingUnlisted, AuditFile{Key: g.Key, Gateway: GatewayOf(g.Key, a.o.Depth),
			Detail: "could not be listed: " + g.Err.Error()})
	}
	return nil
}

// report puts the findings in order, the reasons by count.
func (a *auditor) report() *AuditReport {
	rep := a.rep
	q := a.findings[FindingQuarantined]
	for _, rc := range a.reasons {
		q.Reasons = append(q.Reasons, *rc)
	}
	slices.SortFunc(q.Reasons, func(x, y ReasonCount) int {
		if x.Count != y.Count {
			return y.Count - x.Count
		}
		return strings.Compare(x.Reason, y.Reason)
	})
	for _, k := range findingOrder {
		f := a.findings[k]
		f.Attention = f.Count > 0
		rep.Attention = rep.Attention || f.Attention
		rep.Findings = append(rep.Findings, *f)
	}
	return rep
}

var (
	// locationPart is the row and line a decode error starts with.
	locationPart = regexp.MustCompile(`^(row \d+( \(line \d+\))?|line \d+)(, |: )`)
	digitRun     = regexp.MustCompile(`\d+`)
)

// ReasonClass is a quarantine reason without what differs from file to
// file (the key, the row and line, the value, numbers), so that the files
// one cause refused count together.
func ReasonClass(key, reason, value string) string {
	s := strings.TrimPrefix(reason, key+": ")
	s = locationPart.ReplaceAllString(s, "")
	if value != "" {
		s = strings.ReplaceAll(s, strconv.Quote(value), `"…"`)
	}
	return digitRun.ReplaceAllString(s, "N")
}
