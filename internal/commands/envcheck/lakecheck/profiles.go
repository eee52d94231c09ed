package lakecheck

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/timelake/timelake/internal/commands/envcheck"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/profile"
	"github.com/timelake/timelake/internal/storage"
)

// profileSample bounds the landing files the profiles check looks at.
const profileSample = 1000

// profiles checks the table's source profiles as ingest applies them
// (profile.FromProperties, Set.For): that they read, and which profile
// each file waiting in the landing bucket gets (up to profileSample of
// them); a file two profiles match fails the check, naming both, since
// ingest refuses it. accept, when not nil, keeps the keys routed to the
// table.
func (k *Checks) profiles(ctx context.Context, c *envcheck.Checker, name lake.TableName, accept func(key string) bool) {
	pre := "" // with routes, the row names its table
	if accept != nil {
		pre = name.String() + ": "
	}
	switch {
	case k.tableMissing:
		c.OK(envcheck.CheckProfiles, pre+"no source profiles: the table does not exist yet (profiles are table properties, set with timelake tables alter once it exists)")
		return
	case k.loaded == nil:
		c.Skip(envcheck.CheckProfiles, pre+"table not loaded")
		return
	}
	set, err := profile.FromProperties(k.loaded.Properties())
	if err != nil {
		c.Fail(envcheck.CheckProfiles, pre+err.Error(), "fix the profile's properties with timelake tables alter "+name.String())
		return
	}
	if len(set) == 0 {
		c.OK(envcheck.CheckProfiles, pre+"no source profiles: every file is read with the settings of the run")
		return
	}
	var names []string
	for _, p := range set {
		names = append(names, fmt.Sprintf("%s (%s)", p.Name, p.Values[profile.SettingMatch]))
	}
	detail := fmt.Sprintf("%d source profiles: %s", len(set), strings.Join(names, ", "))
	if !c.LandingListed() {
		c.OK(envcheck.CheckProfiles, pre+detail+"; landing files not looked at (landing not usable)")
		return
	}
	st, done, err := c.Landing()
	if err != nil {
		c.OK(envcheck.CheckProfiles, pre+detail+"; landing files not looked at: "+err.Error())
		return
	}
	defer done()
	counts := map[string]int{}
	var ambiguous []string
	seen := 0
	lctx, cancel := c.WithTimeout(ctx)
	defer cancel()
	errEnough := errors.New("enough")
	err = (&landing.Bucket{Store: st}).List(lctx, "", func(o storage.ObjectInfo) error {
		if accept != nil && !accept(o.Key) {
			return nil
		}
		if seen == profileSample {
			return errEnough
		}
		seen++
		p, err := set.For(o.Key)
		switch {
		case err != nil:
			ambiguous = append(ambiguous, err.Error())
		case p == nil:
			counts[""]++
		default:
			counts[p.Name]++
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		c.OK(envcheck.CheckProfiles, pre+detail+"; landing files not looked at: "+err.Error())
		return
	}
	var read []string
	for _, p := range set {
		read = append(read, fmt.Sprintf("%s %d", p.Name, counts[p.Name]))
	}
	detail += fmt.Sprintf("; of %d files in the landing bucket, read with %s, with the run's settings %d", seen, strings.Join(read, ", "), counts[""])
	if len(ambiguous) > 0 {
		shown := ambiguous[:min(3, len(ambiguous))]
		c.Fail(envcheck.CheckProfiles, pre+fmt.Sprintf("%s; %d files match two profiles, which ingest refuses: %s", detail, len(ambiguous), strings.Join(shown, "; ")),
			"change the profiles' match settings so that one applies to each key (timelake tables alter "+name.String()+")")
		return
	}
	c.OK(envcheck.CheckProfiles, pre+detail)
}
