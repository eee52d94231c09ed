package settings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"

	"github.com/timelake/timelake/internal/config"
)

// VariablePrefix starts every variable of timelake's own (the others are
// the AWS chain's and LANDING_BUCKET of the public Timelake docs).
const VariablePrefix = "TIMELAKE_"

// toolingPrefixes are the TIMELAKE_* variables of the project's test and
// benchmark tooling, which the binary never reads and never reports:
// TIMELAKE_TEST_* (the test suite's S3 server, scripts/test.sh),
// TIMELAKE_FAULTS_* (the fault suite), TIMELAKE_ICEBIRD_* (the interop
// harness) and TIMELAKE_TOOLS_DIR (where scripts install their tools).
// docs/configuration.md, "Unknown variables", lists them.
var toolingPrefixes = []string{"TIMELAKE_TEST_", "TIMELAKE_FAULTS_", "TIMELAKE_ICEBIRD_", "TIMELAKE_TOOLS_DIR"}

// UnknownVariable is a TIMELAKE_* variable that no setting has: most often
// a misspelling (TIMELAKE_CSV_DELIMTER), which would otherwise be ignored
// without a word.
type UnknownVariable struct {
	Name   string
	Source config.Source // FromEnv or FromEnvFile
	// Meant is the variable it most likely stands for; "" when none is
	// near.
	Meant string
	// Flag is set when Name spells a per-run flag, which has no variable
	// (GroupPerRun): "dry-run".
	Flag string
}

// String says what is wrong and what was meant: "TIMELAKE_CSV_DELIMTER
// (env file) is not a timelake variable; did you mean
// TIMELAKE_CSV_DELIMITER?".
func (u UnknownVariable) String() string {
	s := fmt.Sprintf("%s (%s) is not a timelake variable", u.Name, u.Source)
	switch {
	case u.Flag != "":
		s += fmt.Sprintf("; --%s has no variable on purpose (it says what one run does): pass the flag", u.Flag)
	case u.Meant != "":
		s += "; did you mean " + u.Meant + "?"
	}
	return s
}

// UnknownVariables returns the TIMELAKE_* variables that the env file and
// environ (the process environment, "KEY=value" as os.Environ gives it;
// nil for none) set and that no setting of the registry reads, each with
// the variable it most likely stands for; the tooling variables
// (TIMELAKE_TEST_*, ...) are left out. A name set in both is reported
// once, as coming from the environment. Sorted by name.
func UnknownVariables(env *config.Env, environ []string) []UnknownVariable {
	known := map[string]bool{}
	for _, s := range all {
		for _, v := range s.Env {
			known[v] = true
		}
	}
	seen := map[string]bool{}
	var out []UnknownVariable
	add := func(name string, src config.Source) {
		if seen[name] || known[name] || !strings.HasPrefix(name, VariablePrefix) || isTooling(name) {
			return
		}
		seen[name] = true
		out = append(out, describeUnknown(name, src))
	}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		add(name, config.FromEnv)
	}
	if env != nil {
		for _, name := range env.FileKeys() {
			add(name, config.FromEnvFile)
		}
	}
	slices.SortFunc(out, func(a, b UnknownVariable) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func isTooling(name string) bool {
	for _, p := range toolingPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// describeUnknown finds what an unknown variable stands for: a per-run
// flag of the same name (TIMELAKE_DRY_RUN), the variable of a flag of the
// same name (TIMELAKE_ENDPOINT: AWS_ENDPOINT_URL_S3), a variable that is
// the name without its prefix (TIMELAKE_LANDING_BUCKET: LANDING_BUCKET), or
// the nearest variable within a few edits (Levenshtein distance, compared
// without the TIMELAKE_ prefix: one edit for a short name, up to three
// for a long one).
func describeUnknown(name string, src config.Source) UnknownVariable {
	u := UnknownVariable{Name: name, Source: src}
	bare := strings.TrimPrefix(name, VariablePrefix)
	flag := strings.ToLower(strings.ReplaceAll(bare, "_", "-"))
	var meant []string
	for _, s := range all {
		switch {
		case s.Flag != flag:
		case len(s.Env) == 0:
			u.Flag = s.Flag
		default:
			meant = append(meant, s.Env[0]) // --prefix is three settings
		}
	}
	if len(meant) > 0 {
		u.Meant, u.Flag = strings.Join(meant, " or "), ""
		return u
	}
	if u.Flag != "" {
		return u
	}
	best := min(3, len(bare)/4) + 1
	for _, s := range all {
		for _, v := range s.Env {
			d := levenshtein.ComputeDistance(bare, strings.TrimPrefix(v, VariablePrefix))
			if d < best {
				u.Meant, best = v, d
			}
		}
	}
	return u
}
