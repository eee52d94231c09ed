// Package tablename is the name of a table as users give it
// (namespace.table) and its rule, kept apart from the lake so that the
// settings and the gateway binary read it without linking the lake.
package tablename

import (
	"fmt"
	"regexp"
	"strings"
)

// namePart is the rule for each part of a name: the parts become path
// segments of the table's location (docs/table-format.md, "Layout").
var namePart = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Name is a namespace-qualified table name.
type Name struct {
	Namespace string
	Name      string
}

// String renders ns.table.
func (n Name) String() string { return n.Namespace + "." + n.Name }

// ValidPart reports whether s may be a namespace or a table's name.
func ValidPart(s string) bool { return namePart.MatchString(s) }

// Parse parses "ns.table"; a bare "table" is in namespace "default".
// Each part must match [A-Za-z0-9_-]+.
func Parse(s string) (Name, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	var n Name
	switch len(parts) {
	case 1:
		n = Name{Namespace: "default", Name: parts[0]}
	case 2:
		n = Name{Namespace: parts[0], Name: parts[1]}
	default:
		return Name{}, fmt.Errorf("invalid table name %q: expected namespace.table", s)
	}
	for _, p := range []string{n.Namespace, n.Name} {
		if !namePart.MatchString(p) {
			return Name{}, fmt.Errorf("invalid table name %q: each part must match [A-Za-z0-9_-]+", s)
		}
	}
	return n, nil
}
