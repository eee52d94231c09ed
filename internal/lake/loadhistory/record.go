package loadhistory

import "time"

// Record is one landing file loaded into the table, or, in the outcome
// log, one that ingest settled without loading it: found a duplicate, or
// rejected into the quarantine (lake.LoadRecord is this type).
type Record struct {
	Key           string    `json:"key"`                      // the batch id: the landing object key
	Size          int64     `json:"size"`                     // bytes of the landing object
	SHA256        string    `json:"sha256,omitempty"`         // hex SHA-256 of the object's bytes
	ContentSHA256 string    `json:"content_sha256,omitempty"` // hex SHA-256 of its decompressed bytes; "" when not compressed
	Rows          int64     `json:"rows"`
	SnapshotID    int64     `json:"snapshot_id"` // the snapshot that loaded it (expired or not); of a duplicate, the snapshot that loaded the first copy
	LoadedAt      time.Time `json:"loaded_at"`   // UTC, the snapshot's commit time; of an outcome, when ingest settled the file

	// Status is "" for a loaded file, OutcomeDuplicate or OutcomeRejected
	// in the outcome log.
	Status string `json:"status,omitempty"`
	// Reason says why a file was rejected, or what it duplicates.
	Reason string `json:"reason,omitempty"`
	// SameAs is the key whose content a duplicate repeats ("" for the same
	// key loaded again); QuarantinedTo the kept copy of a rejected file.
	SameAs        string `json:"same_as,omitempty"`
	QuarantinedTo string `json:"quarantined_to,omitempty"`
	// LandedAt is the landing object's modification time, MaxRowTime the
	// newest value of the time column the file loaded, LoadedBy how its
	// key reached the loader (LoadedByPoll, LoadedByNotification,
	// LoadedBySweep); each zero when not known (files loaded before
	// timelake recorded them, other writers).
	LandedAt   time.Time `json:"landed_at,omitzero"`
	MaxRowTime time.Time `json:"max_row_time,omitzero"`
	LoadedBy   string    `json:"loaded_by,omitempty"`
	// RejectedRows counts the rows set aside under --on-error skip-rows
	// (timelake.rejected-rows); 0 in segments written before it existed
	// and in the outcome log.
	RejectedRows int64 `json:"rejected_rows,omitempty"`
}

// Outcomes of a landing file that was not loaded (Record.Status); a
// loaded file's status is "" (OutcomeLoaded where a word is printed).
const (
	OutcomeLoaded    = "loaded"
	OutcomeDuplicate = "duplicate"
	OutcomeRejected  = "rejected"
	// OutcomeDeleted is not a landing file's: tables history lists the
	// deletes of rows (lake's Table.Deletions) under it.
	OutcomeDeleted = "deleted"
	// OutcomeRestored is not a landing file's either: the undos of deletes
	// (lake's Table.Restores).
	OutcomeRestored = "restored"
)

// Outcome is r's status as a word: OutcomeLoaded for a loaded file.
func (r Record) Outcome() string {
	if r.Status == "" {
		return OutcomeLoaded
	}
	return r.Status
}

// How a loaded key reached the loader (the snapshot summary's
// timelake.loaded-by): a cron ingest's listing, a serve's object
// notification, or a serve's sweep (a file no notification announced in
// time: docs/serve.md).
const (
	LoadedByPoll         = "poll"
	LoadedByNotification = "notification"
	LoadedBySweep        = "sweep"
)

// ContentHash is the hash of the file's content: its decompressed bytes,
// which are its bytes when it was not compressed.
func (r Record) ContentHash() string {
	if r.ContentSHA256 != "" {
		return r.ContentSHA256
	}
	return r.SHA256
}
