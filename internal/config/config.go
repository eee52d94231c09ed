// Package config resolves timelake's settings in the order flags >
// environment > --env-file, and names where each value came from.
//
// The env file is the shell KEY=value form the public Timelake docs use for
// timelake.env (comments, blank lines, single or double quotes and an
// optional "export " prefix), so `set -a; . ./timelake.env; set +a` and
// `--env-file timelake.env` give the same settings.
package config

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/joho/godotenv"
)

// Source says where a setting's value came from.
type Source string

// Sources of a value, from strongest to weakest.
const (
	// FromRoute is an option of a rule of --route or TIMELAKE_ROUTES
	// (Key: the rule), which wins over the rest for the tables the rule
	// names (settings.Resolver.ForRoute).
	FromRoute   Source = "route"
	FromFlag    Source = "flag"
	FromEnv     Source = "environment"
	FromEnvFile Source = "env file"
	FromDefault Source = "default"
)

// Env looks settings up in the process environment, then in an env file.
type Env struct {
	getenv   func(string) (string, bool)
	file     map[string]string
	FilePath string      // the env file read, or ""
	FileMode fs.FileMode // its permission bits (0 when there is none)
}

// LoadEnv reads envFile (if not empty) and returns the lookup. getenv is
// usually os.LookupEnv; tests pass a map.
func LoadEnv(envFile string, getenv func(string) (string, bool)) (*Env, error) {
	e := &Env{getenv: getenv, file: map[string]string{}, FilePath: envFile}
	if envFile == "" {
		return e, nil
	}
	f, err := os.Open(envFile)
	if err != nil {
		return nil, fmt.Errorf("env file: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		e.FileMode = st.Mode().Perm()
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("env file %s: %w", envFile, err)
	}
	m, err := godotenv.UnmarshalBytes(b)
	if err != nil {
		// The parser's message quotes the file, secrets included: name
		// the line instead.
		return nil, fmt.Errorf("env file %s: cannot parse line %d (expected KEY=value, with matching quotes)", envFile, badLine(b))
	}
	e.file = m
	return e, nil
}

// Lookup returns the first non-empty value of keys, trying the environment
// before the env file for each key in turn.
func (e *Env) Lookup(keys ...string) (value string, key string, src Source) {
	for _, k := range keys {
		if v, ok := e.getenv(k); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), k, FromEnv
		}
		if v, ok := e.file[k]; ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), k, FromEnvFile
		}
	}
	return "", "", ""
}

// FileKeys returns the variables the env file sets (blank or not), sorted.
func (e *Env) FileKeys() []string { return slices.Sorted(maps.Keys(e.file)) }

// InFile reports whether the env file sets key to a non-blank value.
func (e *Env) InFile(key string) bool { return strings.TrimSpace(e.file[key]) != "" }

// Get is Lookup without the provenance.
func (e *Env) Get(keys ...string) string {
	v, _, _ := e.Lookup(keys...)
	return v
}

// Setting is one resolved value as given (before parsing) and its origin,
// for messages and `env show`. Source "" means nothing set it.
type Setting struct {
	Name   string // flag name (the variable for a setting without flag)
	Value  string
	Source Source
	Key    string // environment variable, when Source is env or env file
}

// Describe renders where a setting came from, e.g. "AWS_ENDPOINT (env file)".
func (s Setting) Describe() string {
	switch s.Source {
	case FromFlag:
		return "--" + s.Name
	case FromEnv, FromEnvFile:
		return s.Key + " (" + string(s.Source) + ")"
	case FromRoute:
		return "option " + s.Name + " of route " + s.Key
	case "":
		return "not set"
	}
	return string(s.Source)
}

// badLine finds the first line at which the env file stops parsing.
func badLine(b []byte) int {
	lines := bytes.Split(b, []byte("\n"))
	for i := range lines {
		if _, err := godotenv.UnmarshalBytes(bytes.Join(lines[:i+1], []byte("\n"))); err != nil {
			// A quote opened here may close later: only blame this line
			// if the file up to the next line fails too.
			if i+1 < len(lines) {
				if _, err := godotenv.UnmarshalBytes(bytes.Join(lines[:i+2], []byte("\n"))); err == nil {
					continue
				}
			}
			return i + 1
		}
	}
	return len(lines)
}
