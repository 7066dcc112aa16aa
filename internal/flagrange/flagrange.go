// Package flagrange holds gtune's command-line flag values that are
// checked where they are parsed: ints, floats and durations within a
// range, comma-separated lists without empty names, and flags that mean
// something only beside others.
package flagrange

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gtune/gtune/internal/badinput"
)

// Numeric flags are range-checked where they are parsed: a value out of
// range is a usage error naming the flag and the range (exit status 2),
// before any work. The default may lie outside the range: it then means
// "not given" (e.g. --iterations 0: the spec's).

// rangedInt is an int flag value within [min, max]; with a name for
// unset, the default value unset outside the range is shown and taken
// as that word (e.g. "auto"), so help never shows a default the flag
// refuses.
type rangedInt struct {
	p        *int
	min, max int
	unset    int
	name     string
}

func (v *rangedInt) String() string {
	if v.name != "" && *v.p == v.unset {
		return v.name
	}
	return strconv.Itoa(*v.p)
}
func (v *rangedInt) Type() string { return "int" }
func (v *rangedInt) Set(s string) error {
	if v.name != "" && strings.TrimSpace(s) == v.name {
		*v.p = v.unset
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("not an integer")
	}
	if n < v.min || n > v.max {
		err := rangeErr(strconv.Itoa(v.min), strconv.Itoa(v.max), v.max == math.MaxInt)
		if v.name != "" {
			err = fmt.Errorf("%v, or %s", err, v.name)
		}
		return err
	}
	*v.p = n
	return nil
}

// rangeErr says what a value must be.
func rangeErr(min, max string, open bool) error {
	if open {
		return fmt.Errorf("must be at least %s", min)
	}
	return fmt.Errorf("must be between %s and %s", min, max)
}

// Int adds an int flag whose values must lie in [min, max] (max
// math.MaxInt: no upper bound); def is its default.
func Int(fl *pflag.FlagSet, p *int, name string, def, min, max int, usage string) {
	*p = def
	fl.Var(&rangedInt{p: p, min: min, max: max}, name, usage)
}

// AutoInt adds an int flag whose values must lie in [min, max] or be
// the word auto, which leaves it at unset (a value outside the range:
// the caller decides), shown as its default.
func AutoInt(fl *pflag.FlagSet, p *int, name string, unset, min, max int, usage string) {
	*p = unset
	fl.Var(&rangedInt{p: p, min: min, max: max, unset: unset, name: "auto"}, name, usage)
}

// rangedFloat is a float64 flag value within [min, max], finite; above
// min strictly when open.
type rangedFloat struct {
	p        *float64
	min, max float64
	open     bool
}

func (v *rangedFloat) String() string { return strconv.FormatFloat(*v.p, 'g', -1, 64) }
func (v *rangedFloat) Type() string   { return "float" }
func (v *rangedFloat) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("not a finite number")
	}
	if f < v.min || f > v.max || (v.open && f == v.min) {
		if v.open {
			return fmt.Errorf("must be above %g and at most %g", v.min, v.max)
		}
		return fmt.Errorf("must be between %g and %g", v.min, v.max)
	}
	*v.p = f
	return nil
}

// Float adds a float64 flag whose values must lie in [min, max]
// ((min, max] when aboveMin).
func Float(fl *pflag.FlagSet, p *float64, name string, def, min, max float64, aboveMin bool, usage string) {
	*p = def
	fl.Var(&rangedFloat{p, min, max, aboveMin}, name, usage)
}

// rangedDuration is a duration flag value of at least min and, where
// max is above 0, at most max.
type rangedDuration struct {
	p        *time.Duration
	min, max time.Duration
}

func (v *rangedDuration) String() string { return v.p.String() }
func (v *rangedDuration) Type() string   { return "duration" }
func (v *rangedDuration) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("not a duration (e.g. 90s, 10m, 1h)")
	}
	if d < v.min {
		return fmt.Errorf("must be at least %v", v.min)
	}
	if v.max > 0 && d > v.max {
		return fmt.Errorf("must be at most %v", v.max)
	}
	*v.p = d
	return nil
}

// Duration adds a duration flag of at least min.
func Duration(fl *pflag.FlagSet, p *time.Duration, name string, def, min time.Duration, usage string) {
	*p = def
	fl.Var(&rangedDuration{p, min, 0}, name, usage)
}

// BoundedDuration adds a duration flag between min and max.
func BoundedDuration(fl *pflag.FlagSet, p *time.Duration, name string, def, min, max time.Duration, usage string) {
	*p = def
	fl.Var(&rangedDuration{p, min, max}, name, usage)
}

// listFlag is a string flag holding a comma-separated list: an empty
// value or an empty element is refused.
type listFlag struct{ p *string }

func (v *listFlag) String() string { return *v.p }
func (v *listFlag) Type() string   { return "list" }
func (v *listFlag) Set(s string) error {
	for _, e := range strings.Split(s, ",") {
		if strings.TrimSpace(e) == "" {
			return fmt.Errorf("an empty name in %q", s)
		}
	}
	*v.p = s
	return nil
}

// List adds a comma-separated list flag without empty names.
func List(fl *pflag.FlagSet, p *string, name, usage string) {
	fl.Var(&listFlag{p}, name, usage)
}

// OnlyWith refuses (bad input) any of the named flags given on cmd's
// command line: they mean something only with what (e.g. "a workload"),
// and a flag that means nothing must not pass silently.
func OnlyWith(cmd interface{ Flags() *pflag.FlagSet }, what string, names ...string) error {
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			return badinput.New("--%s applies only to %s", n, what)
		}
	}
	return nil
}

// GPUIndexes reads a flag's list of distinct GPU indexes 0..max
// separated by commas ("0,2,3": --devices, beside its "all"). Errors are
// bad input naming the flag: a part that is not such an index, an index
// named twice.
func GPUIndexes(flag, text string, max int) ([]int, error) {
	var idx []int
	for _, part := range strings.Split(text, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 0 || n > max {
			return nil, badinput.New("%s %q: want all, or GPU indexes 0-%d separated by commas, e.g. 0,2,3", flag, text, max)
		}
		for _, m := range idx {
			if m == n {
				return nil, badinput.New("%s %q: GPU %d is named twice", flag, text, n)
			}
		}
		idx = append(idx, n)
	}
	return idx, nil
}
