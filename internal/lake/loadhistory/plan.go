package loadhistory

import "time"

// MergeFanIn is how many segments of one size tier are merged into
// one: tiers grow by this factor, so a history of N records has about
// log8(N) tiers of at most 7 segments each.
const MergeFanIn = 8

// segmentTier is the size tier of a segment of n records.
func segmentTier(n int) int {
	t := 0
	for n >= MergeFanIn {
		n /= MergeFanIn
		t++
	}
	return t
}

// Plan is the next list of segments of a log (an expiry's load history,
// the outcomes recorded): the segments to name, the records of the new
// segment and the segments to merge into one.
type Plan struct {
	Keep    []SegmentInfo // kept as they are
	Merge   []SegmentInfo // read, merged with added, window-trimmed, written as one
	Dropped []SegmentInfo // past the window: left out
	Added   []Record      // records of the snapshots being expired
}

// PlanSegments decides the next history from the current segments and the
// records leaving the snapshots: segments whose newest record is past the
// window are dropped; the new records go into a segment of their own,
// unless a size tier then holds MergeFanIn segments, which are
// merged with them into one.
func PlanSegments(cur []SegmentInfo, added []Record, now time.Time, window time.Duration) Plan {
	p := Plan{Added: added}
	cutoff := now.Add(-window)
	var live []SegmentInfo
	for _, s := range cur {
		if !s.Newest.IsZero() && s.Newest.Before(cutoff) {
			p.Dropped = append(p.Dropped, s)
			continue
		}
		live = append(live, s)
	}
	if len(added) == 0 && len(p.Dropped) == 0 {
		p.Keep = live
		return p
	}
	tiers := map[int][]SegmentInfo{}
	for _, s := range live {
		tiers[segmentTier(s.Records)] = append(tiers[segmentTier(s.Records)], s)
	}
	// The new records join the smallest tier; a full tier is merged, and
	// the result may fill the next one.
	tier, carry := segmentTier(len(added)), len(added)
	merging := map[string]bool{}
	for len(tiers[tier])+1 >= MergeFanIn {
		for _, s := range tiers[tier] {
			merging[s.Name] = true
			carry += s.Records
		}
		tier = max(tier+1, segmentTier(carry))
	}
	for _, s := range live {
		if merging[s.Name] {
			p.Merge = append(p.Merge, s)
		} else {
			p.Keep = append(p.Keep, s)
		}
	}
	return p
}
