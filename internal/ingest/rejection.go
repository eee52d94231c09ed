package ingest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
)

// otherContentError refuses a file whose key was loaded with other content:
// corrections come as new files with new keys.
type otherContentError struct{ msg string }

func (e *otherContentError) Error() string { return e.msg }

// rejectionKind says what refused a file, for the report's kind and
// requeue --all (docs/schema.md, "Putting quarantined files back").
// landing.KindFile when the file itself is broken, which no setting can
// change:
//   - a problem of the whole file, found before any row or column (a
//     decode.FileError without row, line, column or value): it cannot be read as
//     the format its name says (corrupt or cut gzip, not Parquet, UTF-16,
//     binary), it is empty, its line ends are a lone CR; except a missing
//     time column, which --time-column may name;
//   - a value that is not valid UTF-8 or holds a NUL byte (the file's
//     encoding), a null in a required column (the table's contract);
//   - its key was loaded with other content;
//   - its schema is too large for a table's manifests (lake.ErrTooWide
//     with the schema's size; more columns than --max-columns is a
//     setting's refusal);
//   - a reader or writer panicked on it (decode.IsPanic);
//   - it cannot be read whatever the settings (decode.IsUnreadable): not
//     Parquet, a broken footer or page, a page whose checksum does not
//     match its bytes, also when the refusal names a column.
//
// landing.KindRow when a row's structure is broken (decode.IsBrokenRecord:
// the wrong number of fields, a bare or unclosed quote, a carriage return
// outside quotes): only --on-error skip-rows loads the file.
//
// Else landing.KindSetting: a value, a field count, a column or a type that
// a setting (a delimiter, a decimal comma, --csv-null, --column,
// --time-unit, --evolve) may have refused. TestBadFilesAreQuarantined pins
// the verdicts against decode's errors.
func rejectionKind(err error) string {
	var oc *otherContentError
	var we *lake.WidthError
	if errors.As(err, &we) && we.SchemaBytes == 0 {
		return landing.KindSetting // more columns than --max-columns
	}
	if errors.As(err, &oc) || errors.Is(err, lake.ErrRequiredNull) || errors.Is(err, lake.ErrTooWide) || decode.IsPanic(err) || decode.IsUnreadable(err) {
		return landing.KindFile
	}
	var fe *decode.FileError
	switch {
	case !errors.As(err, &fe), decode.IsNewColumns(err), decode.IsColumnsSetting(err):
		return landing.KindSetting
	case fe.Row == 0 && fe.Line == 0 && fe.Column == "" && fe.Value == "" && !strings.Contains(fe.Reason, "time column"):
		return landing.KindFile
	case strings.HasPrefix(fe.Reason, "null in required column"),
		strings.Contains(fe.Reason, "is not valid UTF-8"), strings.Contains(fe.Reason, "holds a NUL byte"):
		return landing.KindFile
	case decode.IsBrokenRecord(err):
		return landing.KindRow
	}
	return landing.KindSetting
}

// widthError refuses the file key whose columns would make the table too
// wide (lake.CheckCreateWidth, Table.CheckWidth and their kin); other errors
// of the check are not the file's; nil for nil.
func widthError(key string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, lake.ErrTooWide) {
		return fmt.Errorf("%s: %w", key, err)
	}
	return &fatalError{err}
}
