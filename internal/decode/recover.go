package decode

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// PanicError is the cause (FileError.Err) of the refusal of a file whose
// reading panicked in a library (arrow-go's Parquet or CSV reader, a
// writer) instead of returning an error: the file fails alone. Value is
// what the panic carried; Stack is the stack of the goroutine that
// panicked, for a debug log line, never for the file's reason.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Recovered is the refusal of the file of key after a panic v of who
// ("the reader", "the writer") recovered while doing what doing says
// ("decoding the file", "writing its data files"); where says where in the
// file, when known ("row group 2 of 5", "" when not). Call
// it in the deferred function that recovered, so that the stack is the
// panicking goroutine's. The file is unreadable (IsUnreadable) and the
// refusal IsPanic.
func Recovered(key, who, doing, where string, v any) *FileError {
	reason := who + " crashed while " + doing
	if where != "" {
		reason += " (" + where + ")"
	}
	return &FileError{Key: key, Reason: reason, Err: &PanicError{Value: v, Stack: debug.Stack()}, unreadable: true}
}

// PanicRefusal is the refusal of the file of key after a panic recovered
// on another goroutine (a data file writer's), reason saying what crashed
// while doing what ("the writer crashed while writing its data files"):
// err wraps its *PanicError. The file is unreadable and the refusal
// IsPanic.
func PanicRefusal(key, reason string, err error) *FileError {
	return &FileError{Key: key, Reason: reason, Err: err, unreadable: true}
}

// IsPanic reports whether err refuses a file whose reading panicked
// (Recovered).
func IsPanic(err error) bool {
	var pe *PanicError
	return errors.As(err, &pe)
}

// PanicStack is the stack of the panic that refused a file (IsPanic),
// nil for other errors.
func PanicStack(err error) []byte {
	var pe *PanicError
	if errors.As(err, &pe) {
		return pe.Stack
	}
	return nil
}

// decodeHook, set only by tests, is called with the key of every file
// decodeFile reads, once its reader is open: a test makes it panic to
// stand for a reader that panics on the file.
var decodeHook func(key string)

// recoverTo turns a panic of the calling goroutine into *err, the refusal
// of the file of key (Recovered, a panic of the reader). It must be deferred directly.
func recoverTo(err *error, key, doing string, where func() string) {
	v := recover()
	if v == nil {
		return
	}
	w := ""
	if where != nil {
		w = safeWhere(where)
	}
	*err = Recovered(key, "the reader", doing, w, v)
}

// safeWhere calls where, which looks at a reader that has just panicked:
// a panic of its own leaves the place unknown.
func safeWhere(where func() string) (w string) {
	defer func() {
		if recover() != nil {
			w = ""
		}
	}()
	return where()
}
