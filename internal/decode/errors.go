package decode

import (
	"errors"
	"strconv"
	"strings"
)

// FileError describes why a landing file could not be decoded. Every error
// returned by Decode and DetectFormat is a *FileError (possibly wrapping a
// lower-level cause in Err), so callers can write a quarantine report that
// names the object key, the 1-based data row (header excluded; 0 when the
// problem is not tied to a row), for text files the line, the column and
// the offending value.
type FileError struct {
	// Key is the landing object key of the file.
	Key string
	// Row is the 1-based data row number (the CSV header is not counted;
	// for Parquet it is the row index in the file plus one), 0 when the
	// error is not row-specific.
	Row int64
	// Line is the 1-based line of a CSV/TSV file where the row starts (the
	// header is line 1; blank lines and line breaks inside quoted values
	// count), 0 when unknown or not a text file.
	Line int64
	// Column is the column name, "" when the error is not column-specific.
	Column string
	// Value is the raw offending value, "" when there is none.
	Value string
	// Reason is the human-readable explanation (lowercase, no trailing
	// punctuation).
	Reason string
	// Err is the underlying cause, if any.
	Err error

	// newColumns marks the refusal of columns the table does not have,
	// which DecodeOptions.Evolve may turn into new columns.
	newColumns bool
	// columnsSetting marks the refusal of a DecodeOptions.Columns entry
	// that no file could satisfy (the time column given another type
	// than timestamptz): the setting is wrong, not the file.
	columnsSetting bool
	// brokenRecord marks a row of a text file whose structure is broken
	// (the wrong number of fields, a bare or unclosed quote, a carriage
	// return outside quotes), which no setting reads as it is.
	brokenRecord bool
	// nullCell marks a null in a required column, which addLine words
	// again when the cell of a text file was a CSV.Null token.
	nullCell bool
	// unreadable marks a file that no setting can make readable (not
	// Parquet, a broken footer or page): see IsUnreadable.
	unreadable bool
}

// parquetProblem is the refusal of a Parquet file that cannot be read as
// it is (unreadable), naming arrow-go's page size limit when that is what
// refused it: arrow-go's reader refuses a page over 64 MiB compressed or
// 256 MiB decompressed (parquet.ReaderProperties), which would be held
// whole in memory.
func parquetProblem(key, column, reason string, err error) *FileError {
	if err != nil && strings.Contains(err.Error(), "exceeds configured limit") {
		reason += "; one of its pages is larger than a Parquet reader holds (64 MiB compressed, 256 MiB decompressed): " +
			"write the file again with smaller pages (most writers' default is 1 MiB)"
	}
	return &FileError{Key: key, Column: column, Reason: reason, Err: err, unreadable: true}
}

// IsUnreadable reports whether err refuses a file that cannot be read
// whatever the settings (a Parquet file that is not one, or whose footer,
// schema or pages cannot be read): ingest quarantines it even before the
// table exists, where other refusals may come from a wrong setting.
func IsUnreadable(err error) bool {
	var fe *FileError
	return errors.As(err, &fe) && fe.unreadable
}

// Error formats the error as `<key>: row <n> (line <l>), column "<c>":
// <reason>`, leaving out the parts that are not set.
func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.Key)
	var loc []string
	switch {
	case e.Row > 0 && e.Line > 0:
		loc = append(loc, "row "+strconv.FormatInt(e.Row, 10)+" (line "+strconv.FormatInt(e.Line, 10)+")")
	case e.Row > 0:
		loc = append(loc, "row "+strconv.FormatInt(e.Row, 10))
	case e.Line > 0:
		loc = append(loc, "line "+strconv.FormatInt(e.Line, 10))
	}
	if e.Column != "" {
		loc = append(loc, "column "+strconv.Quote(e.Column))
	}
	if len(loc) > 0 {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(strings.Join(loc, ", "))
	}
	msg := e.message()
	if msg != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(msg)
	}
	return b.String()
}

// message is the error's reason and its cause, without the key and
// place.
func (e *FileError) message() string {
	msg := e.Reason
	if e.Err != nil {
		if msg == "" {
			msg = e.Err.Error()
		} else {
			msg += ": " + e.Err.Error()
		}
	}
	return msg
}

// IsNewColumns reports whether err refuses a file for columns the table
// does not have, which DecodeOptions.Evolve add-columns would add.
func IsNewColumns(err error) bool {
	var fe *FileError
	return errors.As(err, &fe) && fe.newColumns
}

// IsColumnsSetting reports whether err refuses a DecodeOptions.Columns
// entry (--column) rather than the file: the time column given a type other
// than timestamptz. Callers report it as a bad setting.
func IsColumnsSetting(err error) bool {
	var fe *FileError
	return errors.As(err, &fe) && fe.columnsSetting
}

// IsBrokenRecord reports whether err refuses a text file for a row whose
// structure is broken: the wrong number of fields, a bare or unclosed
// quote, a carriage return outside quotes. No setting reads that row; only
// OnErrorSkipRows loads the file's other rows (and sets it aside).
func IsBrokenRecord(err error) bool {
	var fe *FileError
	return errors.As(err, &fe) && fe.brokenRecord
}

// Unwrap returns the underlying cause (nil when there is none).
func (e *FileError) Unwrap() error { return e.Err }

// maxValueInMessage bounds how much of an offending value is quoted in an
// error message; FileError.Value always keeps the full value.
const maxValueInMessage = 100

// quoteValue quotes v for an error message, shortening very long values.
func quoteValue(v string) string {
	if len(v) > maxValueInMessage {
		return strconv.Quote(v[:valueCut(v)]) + "..."
	}
	return strconv.Quote(v)
}

// valueCut is where a value longer than a message shows is cut: at most
// maxValueInMessage bytes, at the start of a character.
func valueCut(v string) int {
	cut := maxValueInMessage
	for cut > 0 && !isRuneStart(v[cut]) {
		cut--
	}
	return cut
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
