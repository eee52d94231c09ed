package lakecmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/profile"
	"github.com/timelake/timelake/internal/upload"
)

// UploadRules reads the rules upload --validate applies from the table
// (uploadcmd.TableRules): its schema, source profiles and load properties;
// nil, nil when the table does not exist yet.
func UploadRules(ctx context.Context, cmd *cobra.Command, f *cmdutil.Factory, warehouse string, name lake.TableName) (*upload.Rules, error) {
	l, err := OpenLake(ctx, f, cmd, warehouse)
	if err != nil {
		return nil, err
	}
	t, err := l.LoadTable(ctx, name)
	if errors.Is(err, lake.ErrTableNotFound) {
		return nil, nil // the first file creates it: nothing to apply yet
	}
	if err != nil {
		return nil, f.ExplainLake(cmd, err)
	}
	props := t.Properties()
	set, err := profile.FromProperties(props)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &upload.Rules{Target: t.ArrowSchema(), TimeColumn: t.Contract().TimeColumn, Profiles: set, Properties: props}, nil
}
