// Package badinput marks an error as the user's: a request that names
// something unknown, a value out of range, a file that is not what it
// should be. The commands exit with their bad-input status on it, and
// with their runtime status on any other error. Packages below the
// commands (the backend registry, projection) return it, so that the
// commands need not know each package's error types.
package badinput

import (
	"errors"
	"fmt"
)

// Error is an error the user's input caused.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// New is fmt.Errorf's error, marked as bad input.
func New(format string, a ...any) error { return &Error{fmt.Errorf(format, a...)} }

// Wrap marks err as bad input; nil stays nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &Error{err}
}

// Is says whether err, or an error it wraps, is marked as bad input.
func Is(err error) bool {
	_, ok := errors.AsType[*Error](err)
	return ok
}
