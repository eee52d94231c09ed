package settings

import (
	"fmt"
	"io/fs"
	"runtime"
	"strings"

	"github.com/timelake/timelake/internal/config"
)

// Exposure is an env file that holds a secret and that other users can
// read: its mode gives read access to its group or to others (mode & 077
// reads, writes or runs are all reported; only the owner needs access).
type Exposure struct {
	Path    string
	Mode    fs.FileMode
	Secrets []string // the secret variables the file sets
}

// CheckEnvFile returns the Exposure of env's file, or nil when there is no
// env file, it holds no secret (Sensitivity Secret or SecretURL), or only its owner has
// access. File modes are not checked on Windows, where they do not say who
// can read a file.
func CheckEnvFile(env *config.Env) *Exposure {
	if env == nil || env.FilePath == "" || env.FileMode&0o077 == 0 || runtime.GOOS == "windows" {
		return nil
	}
	var secrets []string
	for _, s := range all {
		if s.Sensitivity != Secret && s.Sensitivity != SecretURL {
			continue
		}
		for _, k := range s.Env {
			if env.InFile(k) {
				secrets = append(secrets, k)
			}
		}
	}
	if len(secrets) == 0 {
		return nil
	}
	return &Exposure{Path: env.FilePath, Mode: env.FileMode, Secrets: secrets}
}

// Problem says what is wrong, e.g. "env file timelake.env holds
// AWS_SECRET_ACCESS_KEY and is readable by other users (mode 0644)".
func (e *Exposure) Problem() string {
	return fmt.Sprintf("env file %s holds %s and is open to %s (mode %04o)", e.Path, strings.Join(e.Secrets, ", "),
		whoOf(e.Mode, 0o070, 0o007), e.Mode)
}

// whoOf names who of the group and other users mode gives the bits of
// group and others: "its group", "other users", or both.
func whoOf(mode, group, others fs.FileMode) string {
	switch {
	case mode&group != 0 && mode&others != 0:
		return "its group and other users"
	case mode&others != 0:
		return "other users"
	}
	return "its group"
}

// Fix is the command that closes the file to everyone but its owner.
func (e *Exposure) Fix() string { return "chmod 600 " + e.Path }

// WritableEnvFile is an env file that its group or other users can write
// (mode & 022 not zero). It is refused, as ssh refuses a private key
// others can change: whoever can write it decides where timelake reads and
// deletes files, which endpoint gets the credentials, and which keys it
// uses. A usage error (exit 2) with its fix (FixHint).
type WritableEnvFile struct {
	Path string
	Mode fs.FileMode
}

// CheckEnvFileWritable returns a *WritableEnvFile for an env file that its
// group or other users can write, else nil (also on Windows, where file
// modes do not say who can write a file).
func CheckEnvFileWritable(env *config.Env) error {
	if env == nil || env.FilePath == "" || env.FileMode&0o022 == 0 || runtime.GOOS == "windows" {
		return nil
	}
	return &WritableEnvFile{Path: env.FilePath, Mode: env.FileMode}
}

func (e *WritableEnvFile) Error() string {
	return fmt.Sprintf("env file %s is refused: %s can change it (mode %04o), and with it where timelake reads and deletes files and which keys it sends",
		e.Path, whoOf(e.Mode, 0o020, 0o002), e.Mode)
}

// FixHint is the command that makes the file its owner's alone.
func (e *WritableEnvFile) FixHint() string { return "chmod 600 " + e.Path }
