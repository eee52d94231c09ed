package settings

import (
	"fmt"

	"github.com/timelake/timelake/internal/config"
	"github.com/timelake/timelake/internal/storage"
)

// LocationKindsError is a warehouse and a landing location of different
// kinds (one an S3 bucket, the other a local folder) whose local side is
// written as a relative path: TIMELAKE_WAREHOUSE=my-lake/warehouse (no
// s3://) beside LANDING_BUCKET=my-lake-landing would put the table on the
// poller's disk while the files are deleted from the bucket. A usage error
// (exit 2) with its fix (FixHint).
type LocationKindsError struct {
	// Local and Remote are the two settings as given.
	Local, Remote config.Setting
	// LocalWhat and RemoteWhat name them ("warehouse", "landing").
	LocalWhat, RemoteWhat string
	LocalLoc, RemoteLoc   storage.Location
}

func (e *LocationKindsError) Error() string {
	return fmt.Sprintf("the %s %s %q is a local folder (%s) while the %s %s is on S3 (%s): when the other side is on S3, a folder must be written as file:// or an absolute path, so that a bucket written without s3:// is not taken for a folder",
		e.LocalWhat, e.Local.Describe(), e.Local.Value, e.LocalLoc.Dir, e.RemoteWhat, e.Remote.Describe(), e.RemoteLoc)
}

// FixHint says the two ways to write it.
func (e *LocationKindsError) FixHint() string {
	key := e.Local.Key
	if e.Local.Source == config.FromFlag || key == "" {
		key = "--" + e.Local.Name
	}
	folder := fmt.Sprintf("for this folder write %s=%s", key, e.LocalLoc.Dir)
	if _, err := storage.ParseLocation("s3://"+e.Local.Value, false); err != nil {
		return folder // not a bucket name and prefix
	}
	return fmt.Sprintf("for a bucket write %s=s3://%s; %s", key, e.Local.Value, folder)
}

// CheckLocationKinds refuses a warehouse and a landing location of
// different kinds whose local side is not written explicitly
// (storage.ExplicitFolder: file://, an absolute path or ~/), from
// warehouse and landing as given (Resolver.Lookup). Two locations of one
// kind, a setting that is not set or does not parse (reported by its
// own reader), pass. Errors: *LocationKindsError.
func CheckLocationKinds(warehouse, landing config.Setting) error {
	if warehouse.Value == "" || landing.Value == "" {
		return nil
	}
	wloc, werr := storage.ParseLocation(warehouse.Value, false)
	lloc, lerr := storage.ParseLocation(landing.Value, true)
	if werr != nil || lerr != nil || wloc.IsS3() == lloc.IsS3() {
		return nil
	}
	e := &LocationKindsError{Local: warehouse, Remote: landing, LocalWhat: "warehouse", RemoteWhat: "landing",
		LocalLoc: wloc, RemoteLoc: lloc}
	if wloc.IsS3() {
		e = &LocationKindsError{Local: landing, Remote: warehouse, LocalWhat: "landing", RemoteWhat: "warehouse",
			LocalLoc: lloc, RemoteLoc: wloc}
	}
	if storage.ExplicitFolder(e.Local.Value) {
		return nil
	}
	return e
}

// CheckLocations is CheckLocationKinds of the warehouse and landing that r
// resolves.
func (r *Resolver) CheckLocations() error {
	return CheckLocationKinds(r.Lookup(&Warehouse.Spec), r.Lookup(&Landing.Spec))
}
