package badinput

import (
	"errors"
	"fmt"
	"testing"
)

func TestIs(t *testing.T) {
	e := New("--x %d: out of range", 3)
	if !Is(e) || e.Error() != "--x 3: out of range" {
		t.Errorf("%v", e)
	}
	if w := fmt.Errorf("loading: %w", e); !Is(w) {
		t.Errorf("wrapped: %v", w)
	}
	if Is(errors.New("disk full")) || Wrap(nil) != nil || !Is(Wrap(errors.New("x"))) {
		t.Error("plain errors are not bad input; Wrap(nil) is nil")
	}
}
