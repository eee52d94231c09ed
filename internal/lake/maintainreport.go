package lake

import "github.com/timelake/timelake/internal/lake/maintenance"

// MaintainReport is one round of maintenance (Table.Maintain): what it
// did, what it left and why, and the settings it ran with; every output
// renders it (maintenance.Report).
type MaintainReport = maintenance.Report
