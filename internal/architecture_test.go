package internal_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/timelake/timelake/"

// depsOf lists the packages pkg links (go list -deps), or, with direct,
// the packages it imports itself.
func depsOf(t *testing.T, pkg string, direct bool) []string {
	t.Helper()
	args := []string{"list", "-deps", pkg}
	if direct {
		args = []string{"list", "-f", `{{join .Imports "\n"}}`, pkg}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

// within reports whether pkg is prefix or a package below it.
func within(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

// matches reports whether pkg is the package pattern names: a path, or
// with /... that path and the packages below it (as go list reads them).
func matches(pkg, pattern string) bool {
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return within(pkg, p)
	}
	return pkg == pattern
}

// rule is one line of docs/architecture.md's import rules:
// - `A` depends on none of `B`, `C`.
var rule = regexp.MustCompile("(?m)^- `([^`]+)` depends on none of (.+)$")

// importOnly is a line of the import rules that names the only packages
// that import a module (directly):
// - `m/...` is imported only by `A`, `B/...`.
var importOnly = regexp.MustCompile("(?m)^- `([^`]+)` is imported only by (.+)$")

// TestImportRules checks the import rules docs/architecture.md states:
// each package named there links none of the packages and modules it names
// (go list -deps), and no command package imports another command package
// but its own sub-packages and the shared ones.
func TestImportRules(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rules := rule.FindAllStringSubmatch(string(doc), -1)
	if len(rules) < 4 {
		t.Fatalf("docs/architecture.md states %d import rules (- `pkg` depends on none of `a`, `b`.), want its section Import rules", len(rules))
	}
	for _, r := range rules {
		pkg := r[1]
		var banned []string
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(r[2], -1) {
			banned = append(banned, m[1])
		}
		path := "./" + pkg
		for _, dep := range depsOf(t, path, false) {
			for _, b := range banned {
				if matches(strings.TrimPrefix(dep, module), b) {
					t.Errorf("%s links %s, which docs/architecture.md says it does not depend on", pkg, dep)
				}
			}
		}
	}

	// Only the packages the import-only rule names import what it names
	// (their test files aside: go list's Imports).
	only := importOnly.FindAllStringSubmatch(string(doc), -1)
	if len(only) == 0 {
		t.Fatal("docs/architecture.md states no rule - `m` is imported only by `a`, `b`.")
	}
	for _, r := range only {
		var allowed []string
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(r[2], -1) {
			allowed = append(allowed, m[1])
		}
		cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
		cmd.Dir = ".."
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			pkg := strings.TrimPrefix(f[0], module)
			if slices.ContainsFunc(allowed, func(a string) bool { return matches(pkg, a) }) {
				continue
			}
			for _, imp := range f[1:] {
				if matches(imp, r[1]) {
					t.Errorf("%s imports %s, which docs/architecture.md says only %s import", pkg, imp, strings.Join(allowed, ", "))
				}
			}
		}
	}

	// Command packages share helpers through the shared packages only.
	shared := map[string]bool{"internal/commands/cmdutil": true, "internal/commands/lakecmd": true}
	trees := map[string]bool{"internal/commands": true, "internal/commands/gateway": true}
	for _, pkg := range depsOf(t, "./internal/commands/...", false) {
		if !strings.HasPrefix(pkg, module+"internal/commands/") {
			continue
		}
		p := strings.TrimPrefix(pkg, module)
		if trees[p] {
			continue
		}
		group := strings.Join(strings.Split(p, "/")[:3], "/") // internal/commands/<command>
		for _, imp := range depsOf(t, "./"+p, true) {
			i := strings.TrimPrefix(imp, module)
			if !within(i, "internal/commands") || shared[i] || within(i, group) {
				continue
			}
			t.Errorf("%s imports the command package %s: share the helper through internal/commands/cmdutil or lakecmd", p, i)
		}
	}
}

// mdName is a Markdown file named in a line; machinePath an absolute path
// below the root folders of a build machine (the users' example homes in
// docs, /home/..., are not one); climbing a relative path that goes up one
// folder or more to a Markdown file or a docs folder (a hostile path in a
// test's input leads to data, not to notes).
var (
	mdName      = regexp.MustCompile(`[A-Za-z0-9_-]+\.md\b`)
	machinePath = regexp.MustCompile(`(^|[\s"'(=:])/(work|root)/[A-Za-z0-9_.-]`)
	climbing    = regexp.MustCompile(`(\.\./)+([A-Za-z0-9_.-]+/)*?([A-Za-z0-9_-]+\.md\b|docs/)`)
)

// publicSpecs are Markdown files of public specifications that comments
// cite by name: the Parquet format's (github.com/apache/parquet-format).
var publicSpecs = map[string]bool{"LogicalTypes.md": true, "Encodings.md": true}

// leavesRepository reports whether up, a relative path written in a file
// of folder dir, leads outside root: from dir, or, where nothing is there,
// from root (the notation of a path from the repository's top).
func leavesRepository(root, dir, up string) bool {
	from := filepath.Join(dir, up)
	if rel, err := filepath.Rel(root, from); err != nil || strings.HasPrefix(rel, "..") {
		return true
	}
	if _, err := os.Stat(from); err == nil {
		return false
	}
	rel, err := filepath.Rel(root, filepath.Join(root, up))
	return err != nil || strings.HasPrefix(rel, "..")
}

// TestNoCitationsOutsideTheRepository: no comment, script or doc names a
// file a clone does not have (a Markdown file that is not in the
// repository, a relative path that leaves it) or a path of one machine;
// what the code relies on is written in docs/.
func TestNoCitationsOutsideTheRepository(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		path string
		no   int
		text string
	}
	var lines []line
	have := map[string]bool{} // base names of the repository's Markdown files
	n := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "dist", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || d.Name() == ".git" { // a worktree's .git file names its main checkout
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			have[d.Name()] = true
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.IndexByte(string(b[:min(len(b), 8000)]), 0) >= 0 {
			return nil // binary
		}
		n++
		for i, text := range strings.Split(string(b), "\n") {
			lines = append(lines, line{path, i + 1, text})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		rel, _ := filepath.Rel(root, l.path)
		var outside []string
		for _, name := range mdName.FindAllString(l.text, -1) {
			if !have[name] && !publicSpecs[name] {
				outside = append(outside, name)
			}
		}
		for _, up := range climbing.FindAllString(l.text, -1) {
			if leavesRepository(root, filepath.Dir(l.path), up) {
				outside = append(outside, up)
			}
		}
		if m := machinePath.FindString(l.text); m != "" {
			outside = append(outside, strings.TrimSpace(m))
		}
		if len(outside) > 0 {
			t.Errorf("%s:%d names %s, outside the repository: %s", rel, l.no, strings.Join(outside, ", "), strings.TrimSpace(l.text))
		}
	}
	if n < 100 {
		t.Fatalf("read %d files, want the whole repository", n)
	}
}
