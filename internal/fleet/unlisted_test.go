package fleet

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/alert"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

// unlistedStore is a local landing folder in which some folders cannot be
// read, as a folder of another user with mode 0700 cannot (the tests run
// as root): its listing goes on without them and ends with the
// *storage.UnlistedError a LocalStore gives.
type unlistedStore struct {
	*storage.LocalStore
	folders []string
}

func (u unlistedStore) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	var gaps []storage.Unlisted
	for _, f := range u.folders {
		if strings.HasPrefix(f, prefix) || strings.HasPrefix(prefix, f) {
			gaps = append(gaps, storage.Unlisted{Key: f,
				Err: &fs.PathError{Op: "open", Path: strings.TrimSuffix(f, "/"), Err: fs.ErrPermission}})
		}
	}
	err := u.LocalStore.List(ctx, prefix, func(o storage.ObjectInfo) error {
		for _, f := range u.folders {
			if strings.HasPrefix(o.Key, f) {
				return nil
			}
		}
		return fn(o)
	})
	if err != nil || len(gaps) == 0 {
		return err
	}
	return &storage.UnlistedError{Root: u.Path(""), Gaps: gaps}
}

// TestUnlistedFolders: folders of a local landing folder and of its
// quarantine that cannot be read do not stop the audit or the status:
// the audit names each once (a hidden folder, never loaded, not at all)
// as a finding that needs attention and checks the rest; the status
// counts the rest and names the gaps.
func TestUnlistedFolders(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s stores) {
		if s.local == "" {
			t.Skip("an S3 listing has no folders that fail alone")
		}
		tbl := newTable(t, s.lake)
		now := time.Now().UTC()
		load(t, tbl, "gw-1/a.csv", "a", now, now, lake.LoadedByPoll)
		s.put(t, "gw-1/b.csv", "b")
		s.put(t, "gw-2/locked/c.csv", "c")
		quarantine(t, s, "gw-3/q.csv", "gw-3/q.csv: the file is empty", "", now)
		st := unlistedStore{s.landing.(*storage.LocalStore),
			[]string{"_rejected/gw-3/", "gw-2/locked/", ".cache/"}}
		b := &landing.Bucket{Store: st}

		rep, err := Audit(ctx, AuditOptions{Bucket: b, Table: tbl, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		f, keys := finding(t, rep, FindingUnlisted)
		if !rep.Attention || !f.Attention || !slices.Equal(keys, []string{"_rejected/gw-3/", "gw-2/locked/"}) ||
			!strings.Contains(f.Files[1].Detail, "permission denied") || f.Files[1].Gateway != "gw-2/locked" {
			t.Errorf("unlisted: %+v (report attention %v)", f, rep.Attention)
		}
		if rep.Checked.LandingFiles != 1 || rep.Checked.Waiting != 1 {
			t.Errorf("checked %+v, want the other files", rep.Checked)
		}
		if conds := AuditConditions(rep); !slices.ContainsFunc(conds, func(c alert.Condition) bool { return strings.Contains(c.Key, FindingUnlisted) }) {
			t.Errorf("conditions %+v, want the unlisted folders", conds)
		}

		status, err := ComputeStatus(ctx, StatusOptions{Bucket: b, Table: tbl, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(status.Unlisted, []string{"gw-2/locked/", "_rejected/gw-3/"}) || len(status.Gateways) != 1 ||
			status.Gateways[0].Waiting != 1 {
			t.Errorf("status: unlisted %v, gateways %+v", status.Unlisted, status.Gateways)
		}
	})
}
