package iostreams

import (
	"encoding/json"
	"fmt"
	"io"
)

// PrintJSON writes v to Out as one JSON document: indented by two spaces on
// a terminal, exactly one line in a pipe (a log appended to with `>>` keeps
// one record per run).
func (s *IOStreams) PrintJSON(v any) error {
	return WriteJSON(s.Out, v, s.IsStdoutTTY())
}

// WriteJSON writes v to w as one JSON document ending in a newline,
// indented by two spaces when indent is set, else on one line. Errors:
// v cannot be encoded, or w fails.
func WriteJSON(w io.Writer, v any, indent bool) error {
	enc := json.NewEncoder(w)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
