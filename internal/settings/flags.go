package settings

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/timelake/timelake/internal/config"
)

// Bind adds to fs the flag of every setting that command binds, in
// registry order: its help text ends with the variables (" (env A, B)"),
// --help shows its default, and a value is parsed by the setting's kind
// when the flag is set (a bad one is a *ValueError inside pflag's error).
func Bind(fs *pflag.FlagSet, command Command) {
	for _, s := range all {
		if s.Flag == "" || !s.UsedBy(command) {
			continue
		}
		addFlag(fs, s)
	}
}

// BindSpecs adds to fs the flags of the settings given, as Bind does, for
// a command that reads settings of another command (the gateway's env
// check reads upload's --gateway and --prefix).
func BindSpecs(fs *pflag.FlagSet, specs ...*Spec) {
	for _, s := range specs {
		if s.Flag != "" {
			addFlag(fs, s)
		}
	}
}

func addFlag(fs *pflag.FlagSet, s *Spec) {
	fl := &pflag.Flag{Name: s.Flag, Usage: s.Help + EnvHelp(s.Env...), Value: s.newValue(), DefValue: s.Default}
	if s.isSwitch {
		fl.NoOptDefVal = "true"
	}
	fs.AddFlag(fl)
}

// Owner returns the setting whose flag fl is, or nil when fl was not bound
// from the registry (cobra's --help, --version).
func Owner(fl *pflag.Flag) *Spec {
	if b, ok := fl.Value.(bound); ok {
		return b.owner()
	}
	return nil
}

// bound is a flag value made by Bind.
type bound interface {
	owner() *Spec
	typed() any
}

// value is the pflag.Value of a setting of type T: Set parses with the
// kind, once; String is the text as given (or the default). A kind that
// combines values (Repeated) keeps every value given, in order.
type value[T any] struct {
	spec  *Spec
	kind  Kind[T]
	raw   string
	v     T
	given bool // Set was called
}

func (v *value[T]) String() string { return v.raw }
func (v *value[T]) Type() string   { return v.kind.Type }
func (v *value[T]) owner() *Spec   { return v.spec }
func (v *value[T]) typed() any     { return v.v }

func (v *value[T]) Set(s string) error {
	s = strings.TrimSpace(s)
	var t T
	if s != "" {
		var err error
		if t, err = v.kind.Parse(s); err != nil {
			return &ValueError{Spec: v.spec, From: config.Setting{Name: v.spec.Flag, Value: s, Source: config.FromFlag}, Err: err}
		}
	}
	if v.kind.Combine != nil && v.given {
		v.raw, v.v = v.raw+", "+s, v.kind.Combine(v.v, t)
		return nil
	}
	if v.spec.Once && v.given && s != v.raw {
		return &ValueError{Spec: v.spec, From: config.Setting{Name: v.spec.Flag, Value: s, Source: config.FromFlag},
			Err: fmt.Errorf("given twice (%q, then %q): it takes one value", v.raw, s)}
	}
	v.raw, v.v, v.given = s, t, true
	return nil
}

// switchValue is a boolean switch: pflag lets --flag stand alone.
type switchValue struct{ *value[bool] }

func (switchValue) IsBoolFlag() bool { return true }
