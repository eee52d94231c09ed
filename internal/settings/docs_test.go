package settings

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docRow is one row of a settings table of docs/configuration.md.
type docRow struct {
	section, flag, vars, def, commands string
	line                               int
}

// key identifies a setting the way the docs can: flag, variables and
// commands (three settings share the flag --prefix).
func (r docRow) key() string { return r.flag + " | " + r.vars + " | " + r.commands }

func specKey(s *Spec) string {
	flag := ""
	if s.Flag != "" {
		flag = "`--" + s.Flag + "`"
	}
	vars := make([]string, len(s.Env))
	for i, v := range s.Env {
		vars[i] = "`" + v + "`"
	}
	return flag + " | " + strings.Join(vars, ", ") + " | " + strings.Join(s.CommandNames(), ", ")
}

// readDocTables reads every table whose header is
// "| flag | variables | default | commands | meaning |".
func readDocTables(t *testing.T, path string) []docRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []docRow
	section, inTable := "", false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section, inTable = strings.TrimPrefix(line, "## "), false
		case line == "| flag | variables | default | commands | meaning |":
			inTable = true
		case inTable && strings.HasPrefix(line, "|---"):
		case inTable && strings.HasPrefix(line, "|"):
			// The first four cells hold no "|"; the meaning may.
			cells := strings.SplitN(strings.TrimPrefix(line, "|"), "|", 5)
			if len(cells) < 5 {
				t.Fatalf("%s:%d: %d cells, want 5: %s", path, n, len(cells), line)
			}
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			rows = append(rows, docRow{section: section, flag: cells[0], vars: cells[1], def: cells[2], commands: cells[3], line: n})
		default:
			inTable = false
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestConfigurationDoc checks docs/configuration.md against the registry:
// every setting has a row in its section with its flag, its variables in
// order, its commands and its default, and the doc has no row the
// registry lacks.
func TestConfigurationDoc(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "configuration.md")
	rows := readDocTables(t, path)
	byKey := map[string]docRow{}
	for _, r := range rows {
		if _, dup := byKey[r.key()]; dup {
			t.Errorf("%s:%d: %s is documented twice", path, r.line, r.key())
		}
		byKey[r.key()] = r
	}
	specs := map[string]bool{}
	for _, s := range All() {
		k := specKey(s)
		specs[k] = true
		r, ok := byKey[k]
		if !ok {
			t.Errorf("%s: no row for %s (want the row %q in section %q)", path, s.Name(), k, s.Group)
			continue
		}
		if r.section != string(s.Group) {
			t.Errorf("%s:%d: %s is in section %q, want %q", path, r.line, s.Name(), r.section, s.Group)
		}
		switch {
		case s.Default != "" && r.def != "`"+s.Default+"`":
			t.Errorf("%s:%d: %s: default %s, want `%s`", path, r.line, s.Name(), r.def, s.Default)
		case s.Default == "" && (r.def == "" || strings.Contains(r.def, "`")):
			t.Errorf("%s:%d: %s has no default value: say in words what applies, without a value in backticks (got %q)", path, r.line, s.Name(), r.def)
		}
	}
	for _, r := range rows {
		if !specs[r.key()] {
			t.Errorf("%s:%d: the row %q names a setting the registry (internal/settings) does not have", path, r.line, r.key())
		}
	}
}

// TestRouteOptionsDoc: each name a route's options take is a setting of
// ingest and serve, and is listed in docs/routing.md ("Table defaults per
// route") and in the row of TIMELAKE_ROUTES of docs/configuration.md.
func TestRouteOptionsDoc(t *testing.T) {
	routing, err := os.ReadFile(filepath.Join("..", "..", "docs", "routing.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(routing), "## Table defaults per route\n")
	section, _, _ = strings.Cut(section, "\n## ")
	if !ok {
		t.Fatal(`docs/routing.md has no section "Table defaults per route"`)
	}
	config, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(config), "\n") {
		if strings.Contains(line, "`TIMELAKE_ROUTES`") {
			row = line
		}
	}
	for _, name := range RouteOptions {
		if s := routeOption(name); s == nil || !s.UsedBy(Serve) {
			t.Errorf("route option %q is not a setting of ingest and serve", name)
		}
		if !strings.Contains(section, "`"+name+"`") || !strings.Contains(row, "`"+name+"`") {
			t.Errorf("route option %q is not listed in docs/routing.md (Table defaults per route) and in the TIMELAKE_ROUTES row of docs/configuration.md", name)
		}
	}
}
