package backend

import (
	"testing"

	"github.com/gtune/gtune/internal/badinput"
)

// CheckCompilerOptions takes NVRTC's option forms and refuses the rest as
// bad input, naming the option.
func TestCheckCompilerOptions(t *testing.T) {
	if err := CheckCompilerOptions([]string{"-ftz=true", "--use_fast_math", "-DNAME=VALUE"}); err != nil {
		t.Errorf("good options: %v", err)
	}
	for _, o := range []string{"", " -O3", "O3", "-", "--", "-D\x01"} {
		err := CheckCompilerOptions([]string{"-O3", o})
		if err == nil || !badinput.Is(err) {
			t.Errorf("%q: %v", o, err)
		}
	}
}
