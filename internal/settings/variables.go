package settings

import (
	"fmt"
	"maps"
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

// typoPrefixes start the variables of the registry that are not
// timelake's own (AWS_ENDPOINT_URL_S3, AWS_SECRET_ACCESS_KEY,
// LANDING_BUCKET): an unknown name with one of these prefixes is reported
// only when it is one or two edits from one of them (AWS_REGOIN,
// LANDING_BUCKT), since environments and env files hold many variables
// timelake has no business with.
var typoPrefixes = []string{"AWS_", "LANDING_"}

// sdkVariables are variables of the AWS SDKs and CLI that timelake does
// not read but that are never typos of the ones it does, some of them
// within two edits of one (AWS_ACCESS_KEY, AWS_SECRET_KEY: the old names
// of the keys). The per-service endpoints (AWS_ENDPOINT_URL_STS,
// AWS_ENDPOINT_URL_SQS) are left out by their prefix.
var sdkVariables = map[string]bool{
	"AWS_ACCESS_KEY": true, "AWS_SECRET_KEY": true, "AWS_SECURITY_TOKEN": true,
	"AWS_DEFAULT_PROFILE": true, "AWS_DEFAULT_OUTPUT": true, "AWS_CONFIG_FILE": true,
	"AWS_SHARED_CREDENTIALS_FILE": true, "AWS_CA_BUNDLE": true, "AWS_ROLE_ARN": true,
	"AWS_ROLE_SESSION_NAME": true, "AWS_WEB_IDENTITY_TOKEN_FILE": true, "AWS_SDK_LOAD_CONFIG": true,
	"AWS_MAX_ATTEMPTS": true, "AWS_RETRY_MODE": true, "AWS_ACCOUNT_ID": true, "AWS_APP_ID": true,
	"AWS_PAGER": true, "AWS_EXECUTION_ENV": true, "AWS_SESSION_EXPIRATION": true,
	"AWS_CREDENTIAL_EXPIRATION": true, "AWS_EC2_METADATA_DISABLED": true,
}

// UnknownVariable is a TIMELAKE_* variable that no setting has, or an
// AWS_* or LANDING_* variable one or two edits from one the registry
// reads: most often a misspelling (TIMELAKE_CSV_DELIMTER,
// AWS_SECRET_ACCES_KEY), which would otherwise be ignored without a word.
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
	if !strings.HasPrefix(u.Name, VariablePrefix) {
		return fmt.Sprintf("%s (%s) is not a variable timelake reads; did you mean %s?", u.Name, u.Source, u.Meant)
	}
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
// (TIMELAKE_TEST_*, ...) are left out. An AWS_* or LANDING_* variable no
// setting reads is returned only when it is a near miss of one that a
// setting reads (nearMiss); every other name is left alone. A name set in
// both is reported once, as coming from the environment. Sorted by name.
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
		if seen[name] || known[name] || isTooling(name) {
			return
		}
		if !strings.HasPrefix(name, VariablePrefix) {
			if meant := nearMiss(name, known); meant != "" {
				seen[name] = true
				out = append(out, UnknownVariable{Name: name, Source: src, Meant: meant})
			}
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

// nearMiss returns the variable of known that name, a variable no
// setting reads, most likely misspells: one sharing its prefix (AWS_,
// LANDING_) within one edit (Levenshtein distance, compared without the
// prefix) for a name of up to four letters after it, within two for a
// longer one (AWS_REGOIN: AWS_REGION). "" for a name of another prefix,
// of the AWS SDKs' own (sdkVariables, AWS_ENDPOINT_URL_<service>), or
// near none.
func nearMiss(name string, known map[string]bool) string {
	i := slices.IndexFunc(typoPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
	if i < 0 || sdkVariables[name] {
		return ""
	}
	prefix := typoPrefixes[i]
	const serviceEndpoint = "AWS_ENDPOINT_URL_"
	if svc, ok := strings.CutPrefix(name, serviceEndpoint); ok && levenshtein.ComputeDistance(svc, "S3") > 1 {
		return "" // another service's endpoint (AWS_ENDPOINT_URL_STS)
	}
	bare := strings.TrimPrefix(name, prefix)
	best := 2
	if len(bare) > 4 {
		best = 3
	}
	meant := ""
	for _, v := range slices.Sorted(maps.Keys(known)) {
		b, ok := strings.CutPrefix(v, prefix)
		if !ok {
			continue
		}
		if d := levenshtein.ComputeDistance(bare, b); d < best {
			meant, best = v, d
		}
	}
	return meant
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
	// One edit in a short name, two in one of more than four letters (a
	// transposition, TIMELAKE_TABEL, is two), three in a long one.
	best := min(3, len(bare)/4) + 1
	if len(bare) > 4 {
		best = max(best, 3)
	}
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
