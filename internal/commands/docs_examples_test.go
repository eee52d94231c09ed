package commands_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/commands/gateway"
	"github.com/timelake/timelake/internal/iostreams"
)

// The docs' command lines are executable: TestDocsExamples reads every
// `timelake ...` command of README.md and docs/*.md and runs it through the
// command tree with every run function stubbed (flags parsed, settings
// resolved, nothing done).
//
//   - A command line of a code block (sh, bash, shell, cron, ini: every
//     line; a block without a language or of console or text: the lines
//     after a "$ " prompt) must run: the command exists, every flag exists
//     and its value parses, the arguments fit, and the settings the
//     command requires are given, by a flag, by a VAR=value before it (or
//     an export or assignment earlier in the block), by --env-file (or an
//     env file sourced earlier in the block: `. ./timelake.env`), or by
//     the marker envMarker on the line before the block: the example's
//     settings come from the env file, as the text around it says. The env
//     file is the test's own, holding a landing, a warehouse, a table and a
//     gateway (whatever path the example names). A "$ " line whose output
//     shows an Error: line demonstrates a refusal and is not run.
//   - A command in an inline code span, or a synopsis line with [optional]
//     parts or placeholders (<command>, ...), must name an existing
//     command and only flags it has.
const envMarker = "<!-- settings from the env file -->"

// docCommand is one timelake command line of a doc.
type docCommand struct {
	file    string
	line    int
	args    []string          // after the command word
	env     map[string]string // VAR=value given before it or in the block
	envFile bool              // --env-file, a sourced env file, or the marker
	lenient bool              // an inline span or a synopsis: command and flag names only
	gateway bool              // timelake-gateway: run through its own command tree
}

func (c docCommand) String() string {
	name := "timelake"
	if c.gateway {
		name = "timelake-gateway"
	}
	return fmt.Sprintf("%s:%d: %s %s", c.file, c.line, name, strings.Join(c.args, " "))
}

func TestDocsExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join("..", "..", "README.md")}, files...)
	var cmds []docCommand
	for _, f := range files {
		cmds = append(cmds, docCommands(t, f)...)
	}

	dir := t.TempDir()
	t.Chdir(dir)
	envFile := filepath.Join(dir, "docs-example.env")
	body := "LANDING_BUCKET=" + filepath.Join(dir, "landing") + "\nTIMELAKE_WAREHOUSE=" + filepath.Join(dir, "lake") +
		"\nTIMELAKE_TABLE=iot.readings\nTIMELAKE_GATEWAY=gateway-7\n"
	if err := os.WriteFile(envFile, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	strict := 0
	for _, c := range cmds {
		if c.gateway && len(c.args) > 0 && !strings.HasPrefix(c.args[0], "-") && !slices.Contains([]string{"upload", "env", "help", "completion"}, c.args[0]) {
			t.Errorf("%s\n\ttimelake-gateway has no command %s", c, c.args[0])
			continue
		}
		if testing.Verbose() {
			t.Logf("%s (lenient %v, env file %v, env %v)", c, c.lenient, c.envFile, c.env)
		}
		if c.lenient {
			if slices.Contains(refusals, strings.Join(c.args, " ")) {
				continue
			}
			if msg := checkNames(c.args, c.gateway); msg != "" {
				t.Errorf("%s\n\t%s", c, msg)
			}
			continue
		}
		strict++
		if msg := runStubbed(c, envFile); msg != "" {
			t.Errorf("%s\n\t%s", c, msg)
		}
	}
	// The docs hold dozens of examples; finding few means the reader broke.
	if strict < 60 || len(cmds)-strict < 40 {
		t.Fatalf("%d command lines and %d inline commands found: the extraction is broken", strict, len(cmds)-strict)
	}
}

// runStubbed runs c through the command tree with stubbed run functions
// and returns what is wrong, or "".
func runStubbed(c docCommand, envFile string) string {
	env := map[string]string{}
	for k, v := range c.env {
		env[k] = v
	}
	args := append([]string{}, c.args...)
	for i := 0; i < len(args); i++ { // whatever env file the example names, the test's
		switch {
		case args[i] == "--env-file" && i+1 < len(args):
			args[i+1] = envFile
		case strings.HasPrefix(args[i], "--env-file="):
			args[i] = "--env-file=" + envFile
		}
	}
	if _, ok := env["TIMELAKE_ENV_FILE"]; ok || c.envFile {
		env["TIMELAKE_ENV_FILE"] = envFile
	}
	ios, _, _ := iostreams.Test()
	f := &cmdutil.Factory{IO: ios, Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	root := stubbedRoot(f, c.gateway)
	root.SetArgs(args)
	_, err := root.ExecuteContextC(context.Background())
	switch {
	case err == nil:
		return ""
	case cmdutil.IsUsage(err) && strings.Contains(err.Error(), "missing "):
		return fmt.Sprintf("%v: give it in the example, or put %q before its block and say so in the text", err, envMarker)
	case cmdutil.IsUsage(err):
		return err.Error()
	}
	return "" // not a usage error: the line itself is right (e.g. a file the example names is not here)
}

// stubbedRoot is the command tree of timelake, or of timelake-gateway, with
// every run function stubbed.
func stubbedRoot(f *cmdutil.Factory, gatewayBinary bool) *cobra.Command {
	stub := func(context.Context, any) error { return nil }
	if gatewayBinary {
		return gateway.NewRootCmdStubbed(f, stub)
	}
	return commands.NewRootCmdStubbed(f, stub)
}

// checkNames reports an unknown command or flag of a lenient command.
func checkNames(args []string, gatewayBinary bool) string {
	ios, _, _ := iostreams.Test()
	root := stubbedRoot(&cmdutil.Factory{IO: ios, Getenv: func(string) (string, bool) { return "", false }}, gatewayBinary)
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		words = append(words, a)
	}
	for i, w := range words {
		if placeholder(w) {
			words = words[:i]
			break
		}
	}
	cmd, rest, err := root.Find(words)
	if err != nil {
		return err.Error()
	}
	if cmd.HasSubCommands() && len(rest) > 0 { // a group takes no arguments
		return fmt.Sprintf("unknown command %q for %q", rest[0], cmd.CommandPath())
	}
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "["), "=")
		name = strings.TrimRight(name, "]")
		if !strings.HasPrefix(name, "--") || placeholder(name) {
			continue
		}
		if lookupFlag(cmd, strings.TrimPrefix(name, "--")) == nil {
			return fmt.Sprintf("%s has no flag %s", cmd.CommandPath(), name)
		}
	}
	return ""
}

func lookupFlag(cmd *cobra.Command, name string) any {
	if name == "help" || (name == "version" && !cmd.HasParent()) {
		return true
	}
	for c := cmd; c != nil; c = c.Parent() {
		if fl := c.Flags().Lookup(name); fl != nil {
			return fl
		}
		if fl := c.PersistentFlags().Lookup(name); fl != nil {
			return fl
		}
	}
	return nil
}

// refusals are the commands the docs show as mistakes, to explain the
// error they get.
var refusals = []string{"tables bogus"}

var placeholderRe = regexp.MustCompile(`[<>]|\.\.\.|^[A-Z]+(\.\.\.)?$`)

// placeholder reports a synopsis word: <command>, KEY..., NAME, ...
func placeholder(w string) bool { return placeholderRe.MatchString(w) }

var fenceRe = regexp.MustCompile("^\\s*(```|~~~)\\s*([A-Za-z0-9_-]*)")

// docCommands reads the timelake commands of one doc.
func docCommands(t *testing.T, path string) []docCommand {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var lines []string
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(path)
	if name != "README.md" {
		name = "docs/" + name
	}
	var out []docCommand
	for i := 0; i < len(lines); i++ {
		m := fenceRe.FindStringSubmatch(lines[i])
		if m == nil {
			out = append(out, inlineCommands(name, i+1, lines[i])...)
			continue
		}
		fence, lang := m[1], strings.ToLower(m[2])
		marked := false
		for j := i - 1; j >= 0; j-- {
			if s := strings.TrimSpace(lines[j]); s != "" {
				marked = s == envMarker
				break
			}
		}
		start := i + 1
		end := start
		for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), fence) {
			end++
		}
		out = append(out, blockCommands(name, start, lines[start:end], lang, marked)...)
		i = end
	}
	return out
}

// blockCommands reads the commands of a fenced block whose first line is
// line start of the file.
func blockCommands(file string, start int, lines []string, lang string, marked bool) []docCommand {
	prompted := lang == "" || lang == "console" || lang == "text"
	blockEnv := map[string]string{}
	sourced := marked
	var out []docCommand
	for i := 0; i < len(lines); i++ {
		line, n := lines[i], start+i+1
		if prompted {
			l := strings.TrimSpace(line)
			if !strings.HasPrefix(l, "$ ") {
				continue
			}
			line = strings.TrimPrefix(l, "$ ")
			refused := false
			for j := i + 1; j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), "$ "); j++ {
				refused = refused || strings.HasPrefix(strings.TrimSpace(lines[j]), "Error:")
			}
			if refused {
				continue
			}
		}
		if strings.HasPrefix(strings.TrimSpace(line), "EnvironmentFile=") { // a systemd unit's env file
			sourced = true
			continue
		}
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(lines[i])
		}
		for _, seg := range shellSegments(line) {
			if len(seg) > 0 && (seg[0] == "." || seg[0] == "source") {
				sourced = true
				continue
			}
			c, ok := commandOf(seg)
			if !ok {
				for _, w := range seg { // export A=b, or A=b alone
					if k, v, ok := strings.Cut(w, "="); ok && isVar(k) {
						blockEnv[k] = v
					}
				}
				continue
			}
			c.file, c.line = file, n
			for k, v := range blockEnv {
				if _, set := c.env[k]; !set {
					c.env[k] = v
				}
			}
			c.envFile = c.envFile || sourced
			for _, a := range c.args {
				if strings.HasPrefix(a, "[") || placeholder(a) && !strings.Contains(a, "=") {
					c.lenient = true
				}
			}
			out = append(out, c)
		}
	}
	return out
}

var inlineRe = regexp.MustCompile("`([^`]+)`")

// inlineCommands reads the commands of the inline code spans of a line.
func inlineCommands(file string, n int, line string) []docCommand {
	var out []docCommand
	for _, m := range inlineRe.FindAllStringSubmatch(line, -1) {
		for _, seg := range shellSegments(m[1]) {
			if c, ok := commandOf(seg); ok && len(c.args) > 0 { // not the program's name alone
				c.file, c.line, c.lenient = file, n, true
				out = append(out, c)
			}
		}
	}
	return out
}

var varRe = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

func isVar(s string) bool { return varRe.MatchString(s) }

// commandOf finds the timelake command of a segment: the command word
// (timelake, a path ending in /timelake, ExecStart=...timelake) first, after
// VAR=value words, shell keywords (if, then, !, exec, sudo) and flock or
// timeout with their arguments; the VAR=value words; and its arguments
// without redirections.
func commandOf(seg []string) (docCommand, bool) {
	at := 0
	for at < len(seg) {
		w := seg[at]
		switch k, _, ok := strings.Cut(w, "="); {
		case ok && isVar(k), w == "if" || w == "then" || w == "do" || w == "!" || w == "exec" || w == "sudo":
			at++
		case w == "flock" || w == "timeout": // and their options and first argument
			at++
			for at < len(seg) && strings.HasPrefix(seg[at], "-") {
				at++
			}
			at++
		default:
			goto found
		}
	}
	return docCommand{}, false
found:
	w := strings.TrimPrefix(seg[at], "ExecStart=")
	gateway := w == "timelake-gateway" || strings.HasSuffix(w, "/timelake-gateway")
	if w != "timelake" && !strings.HasSuffix(w, "/timelake") && !gateway {
		return docCommand{}, false
	}
	c := docCommand{env: map[string]string{}, gateway: gateway}
	for i := at - 1; i >= 0; i-- {
		k, v, ok := strings.Cut(seg[i], "=")
		if !ok || !isVar(k) {
			break
		}
		c.env[k] = v
	}
	for i := at + 1; i < len(seg); i++ {
		w := seg[i]
		switch {
		case w == ">" || w == ">>" || w == "2>" || w == "<":
			i++ // and its target
		case redirectRe.MatchString(w):
		case w == "}" || w == ")":
		default:
			c.args = append(c.args, w)
		}
	}
	for _, a := range c.args {
		if a == "--env-file" || strings.HasPrefix(a, "--env-file=") {
			c.envFile = true
		}
	}
	if _, ok := c.env["TIMELAKE_ENV_FILE"]; ok {
		c.envFile = true
	}
	return c, true
}

var redirectRe = regexp.MustCompile(`^\d*(>>?|<)(&\d+|\S+)$`)

// shellSegments splits a shell line into the words of each simple command
// (separated by ;, &&, ||, | and &, outside quotes), without comments;
// quotes are removed from the words.
func shellSegments(line string) [][]string {
	var segs [][]string
	var words []string
	var cur strings.Builder
	inWord := false
	flushWord := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	flushSeg := func() {
		flushWord()
		if len(words) > 0 {
			segs = append(segs, words)
		}
		words = nil
	}
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\'' || ch == '"': // to the closing quote, the words inside kept as one
			j := strings.IndexByte(line[i+1:], ch)
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case ch == '\\' && i+1 < len(line):
			cur.WriteByte(line[i+1])
			inWord, i = true, i+1
		case ch == '#' && !inWord:
			flushSeg()
			return segs
		case ch == ';' || ch == '|' || ch == '&' && !(i > 0 && line[i-1] == '>'): // not the & of 2>&1
			flushSeg()
		case ch == ' ' || ch == '\t':
			flushWord()
		case ch == '{' && !inWord && (i+1 == len(line) || line[i+1] == ' '):
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	flushSeg()
	return segs
}
