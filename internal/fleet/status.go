package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/settings/quantity"
	"github.com/timelake/timelake/internal/storage"
)

// StatusOptions are the inputs of Status.
type StatusOptions struct {
	Bucket *landing.Bucket
	// Prefix limits the gateways to landing keys below it (a poller's
	// --prefix).
	Prefix string
	// Accept, when set, limits the gateways to the landing keys it takes,
	// waiting or quarantined: those of a routed table (route.Routes.Accepts,
	// as ingest.Config.Accept). Nil takes every key.
	Accept func(key string) bool
	// Table is the table the landing bucket loads into; nil when it does
	// not exist yet (only the landing bucket is read).
	Table     *lake.Table
	TableName string
	// Depth is how many folders of a key name its gateway; 0: the folder
	// that holds the file (GatewayOf).
	Depth int
	// ExpectEvery is how often each gateway should land a file; 0 means
	// the table's timelake.expect-every, else none (no gateway is silent).
	ExpectEvery time.Duration
	Now         time.Time
}

// Where an expected cadence comes from (Status.ExpectFrom).
const (
	ExpectFromSetting  = "setting"        // --expect-every or TIMELAKE_EXPECT_EVERY
	ExpectFromProperty = "table property" // timelake.expect-every
)

// Status is the freshness of every gateway: the landing bucket's files
// and the table's history, at At.
type Status struct {
	Table   string    `json:"table"`
	Landing string    `json:"landing"`
	At      time.Time `json:"at"`
	Depth   int       `json:"gateway_depth"`
	// ExpectEverySeconds is the cadence (nil: none, no gateway is silent),
	// ExpectFrom where it comes from (ExpectFromSetting,
	// ExpectFromProperty).
	ExpectEverySeconds *float64        `json:"expect_every_seconds"`
	ExpectFrom         string          `json:"expect_from,omitempty"`
	Gateways           []GatewayStatus `json:"gateways"`
	// Silent counts the silent gateways.
	Silent int `json:"silent"`
	// MissingSegments are history segments the table names and the store
	// lacks: what they told is not in these figures.
	MissingSegments []string `json:"missing_segments,omitempty"`
	// Unlisted are the folders (keys ending in "/") and files of a local
	// landing folder, or of its quarantine, that could not be listed
	// (storage.UnlistedError): their files are not in these figures.
	Unlisted []string `json:"unlisted,omitempty"`
}

// ExpectEvery is the cadence as a duration (0: none).
func (s *Status) ExpectEvery() time.Duration {
	if s.ExpectEverySeconds == nil {
		return 0
	}
	return time.Duration(*s.ExpectEverySeconds * float64(time.Second))
}

// GatewayStatus is the freshness of one gateway.
type GatewayStatus struct {
	Gateway string `json:"gateway"`
	// LastLanded is the newest modification time of its files: those
	// waiting in the landing bucket and those the table's history
	// remembers (loaded, duplicates, rejected); a file loaded before
	// landing times were recorded counts with its load time, a
	// quarantined one without a record with the time of its copy.
	LastLanded *time.Time `json:"last_landed"`
	// LastLoaded is the commit time of its newest loaded file.
	LastLoaded *time.Time `json:"last_loaded"`
	// NewestRowTime is the newest value of the time column its loaded
	// files held (of files loaded since timelake records it).
	NewestRowTime *time.Time `json:"newest_row_time"`
	// Waiting counts its files in the landing bucket (to be loaded, or
	// settled by the next run), OldestWaiting is the oldest one's
	// modification time.
	Waiting       int        `json:"waiting"`
	OldestWaiting *time.Time `json:"oldest_waiting"`
	// Quarantined counts its files in the quarantine now.
	Quarantined int `json:"quarantined"`
	// ClockAhead counts its files waiting whose modification time is in
	// the future (landing.ClockAhead): its clock is ahead. They count in
	// LastLanded and OldestWaiting with the time this host saw them.
	ClockAhead int `json:"clock_ahead,omitempty"`
	// LoadedLastDay, DuplicatesLastDay and RejectedLastDay count its
	// files loaded, found duplicates and rejected in the 24 hours before At.
	LoadedLastDay     int `json:"loaded_last_day"`
	DuplicatesLastDay int `json:"duplicates_last_day"`
	RejectedLastDay   int `json:"rejected_last_day"`
	// Silent: no file landed for SilentFactor times the cadence.
	Silent bool `json:"silent"`
}

// gatewayFigures gathers a gateway's figures while the sources stream by.
type gatewayFigures struct {
	landed, loaded, newestRow, oldestWaiting time.Time
	waiting, quarantined, clockAhead         int
	loadedDay, duplicatesDay, rejectedDay    int
}

// ExpectEveryOf returns the cadence of a status: set (a setting, which
// wins) or the table's timelake.expect-every, and where it came from; 0
// and "" when neither says. Errors: a property that does not read as a
// duration.
func ExpectEveryOf(set time.Duration, t *lake.Table) (time.Duration, string, error) {
	if set > 0 {
		return set, ExpectFromSetting, nil
	}
	if t == nil {
		return 0, "", nil
	}
	v := t.Properties()[lake.PropExpectEvery]
	if v == "" {
		return 0, "", nil
	}
	d, err := quantity.ParseAge(v)
	if err != nil || d <= 0 {
		return 0, "", fmt.Errorf("table property %s=%q: expected a duration such as 1m", lake.PropExpectEvery, v)
	}
	return d, ExpectFromProperty, nil
}

// ComputeStatus reads the landing bucket (streamed), the quarantine's
// listing and the table's history (lake.Table.ScanHistory) and returns
// every gateway's freshness, sorted by name. Memory holds one entry per
// gateway. Errors: listing or reading the stores, a bad
// timelake.expect-every.
func ComputeStatus(ctx context.Context, o StatusOptions) (*Status, error) {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	every, from, err := ExpectEveryOf(o.ExpectEvery, o.Table)
	if err != nil {
		return nil, err
	}
	st := &Status{Table: o.TableName, Landing: o.Bucket.Store.URI(), At: now.UTC().Truncate(time.Millisecond), Depth: o.Depth,
		ExpectFrom: from, Gateways: []GatewayStatus{}}
	if every > 0 {
		secs := every.Seconds()
		st.ExpectEverySeconds = &secs
	}
	figs := map[string]*gatewayFigures{}
	fig := func(key string) *gatewayFigures {
		gw := GatewayOf(key, o.Depth)
		f := figs[gw]
		if f == nil {
			f = &gatewayFigures{}
			figs[gw] = f
		}
		return f
	}
	accept := func(key string) bool { return o.Accept == nil || o.Accept(key) }
	err = o.Bucket.List(ctx, o.Prefix, func(obj storage.ObjectInfo) error {
		if !accept(obj.Key) {
			return nil
		}
		f := fig(obj.Key)
		f.waiting++
		// A file its writer dated ahead (a clock ahead) landed when this
		// host saw it change, and no later than now.
		landed := landing.LandedTime(obj.LastModified, obj.Changed, now)
		if landing.ClockAhead(obj.LastModified, now) > 0 {
			f.clockAhead++
		}
		f.landed = later(f.landed, landed)
		if f.oldestWaiting.IsZero() || landed.Before(f.oldestWaiting) {
			f.oldestWaiting = landed
		}
		return nil
	})
	if err = st.noteUnlisted(err, o.Bucket.Skipped); err != nil {
		return nil, fmt.Errorf("list landing %s: %w", o.Bucket.Store.URI(), err)
	}
	copies := map[string]time.Time{} // quarantined keys: the newest copy's time
	err = o.Bucket.Store.List(ctx, o.Bucket.QuarantineKeyPrefix(), func(obj storage.ObjectInfo) error {
		key, ok := o.Bucket.OriginalKey(obj.Key)
		if !ok || landing.IsReport(obj.Key) || !strings.HasPrefix(key, o.Prefix) || !accept(key) {
			return nil
		}
		// A quarantined file landed before it was moved: its copy's time
		// (when it was quarantined) stands for its landing only when no
		// record of the table's history says when it landed; a rejects
		// file's rows landed with their file.
		fig(key).quarantined++
		if !landing.IsRejectsKey(key) {
			copies[key] = later(copies[key], obj.LastModified)
		}
		return nil
	})
	if err = st.noteUnlisted(err, nil); err != nil && !errors.Is(err, storage.ErrNotExist) {
		return nil, fmt.Errorf("list the quarantine of %s: %w", o.Bucket.Store.URI(), err)
	}
	if o.Table != nil {
		day := now.Add(-24 * time.Hour)
		st.MissingSegments, err = o.Table.ScanHistory(ctx, func(r lake.LoadRecord) error {
			if !strings.HasPrefix(r.Key, o.Prefix) {
				return nil
			}
			f := fig(r.Key)
			f.landed = later(f.landed, cmp.Or(r.LandedAt, r.LoadedAt))
			if !r.LandedAt.IsZero() {
				delete(copies, r.Key)
			}
			recent := !r.LoadedAt.Before(day)
			switch r.Outcome() {
			case lake.OutcomeLoaded:
				f.loaded = later(f.loaded, r.LoadedAt)
				f.newestRow = later(f.newestRow, r.MaxRowTime)
				if recent {
					f.loadedDay++
				}
			case lake.OutcomeDuplicate:
				if recent {
					f.duplicatesDay++
				}
			case lake.OutcomeRejected:
				if recent {
					f.rejectedDay++
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for key, at := range copies {
		f := fig(key)
		f.landed = later(f.landed, at)
	}
	for _, gw := range slices.Sorted(maps.Keys(figs)) {
		f := figs[gw]
		g := GatewayStatus{Gateway: gw, LastLanded: timePtr(f.landed), LastLoaded: timePtr(f.loaded),
			NewestRowTime: timePtr(f.newestRow), Waiting: f.waiting, OldestWaiting: timePtr(f.oldestWaiting),
			Quarantined: f.quarantined, ClockAhead: f.clockAhead, LoadedLastDay: f.loadedDay, DuplicatesLastDay: f.duplicatesDay,
			RejectedLastDay: f.rejectedDay, Silent: isSilent(f.landed, now, every)}
		if g.Silent {
			st.Silent++
		}
		st.Gateways = append(st.Gateways, g)
	}
	return st, nil
}

// noteUnlisted adds the gaps of a local listing (storage.UnlistedError,
// returned after everything else was listed) to st.Unlisted, but those
// skip says ingest never loads from, and returns err without them.
func (st *Status) noteUnlisted(err error, skip func(key string) bool) error {
	var gaps *storage.UnlistedError
	if !errors.As(err, &gaps) {
		return err
	}
	for _, g := range gaps.Gaps {
		if skip == nil || !skip(g.Key) {
			st.Unlisted = append(st.Unlisted, g.Key)
		}
	}
	return nil
}
