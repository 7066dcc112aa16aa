package cache

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// bowlSpace is the transfer strategy's test space without its
// restriction: x, y in 0..9, z in 0..4.
func bowlSpace(t *testing.T) *space.Space {
	t.Helper()
	axis := func(name string, n int64) space.Param {
		p := space.Param{Name: name}
		for v := range n {
			p.Values = append(p.Values, expr.Int(v))
		}
		return p
	}
	sp, err := space.Build([]space.Param{axis("x", 10), axis("y", 10), axis("z", 5)}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// writeBowlCache writes a Kernel Tuner cache of the bowl space whose times
// are f(x, y, z); configurations for which f is NaN are recorded as
// failed, and those with skip true are left out.
func writeBowlCache(t *testing.T, sp *space.Space, name string, f func(x, y, z float64) float64, skip func(i int) bool) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"device_name": "test", "kernel_name": "bowl", "tune_params_keys": ["x", "y", "z"], ` +
		`"tune_params": {"x": [0,1,2,3,4,5,6,7,8,9], "y": [0,1,2,3,4,5,6,7,8,9], "z": [0,1,2,3,4]}, "objective": "time", "cache": {`)
	first := true
	for i := 0; i < sp.Len(); i++ {
		if skip != nil && skip(i) {
			continue
		}
		ix := sp.Indexes(i)
		v := f(float64(ix[0]), float64(ix[1]), float64(ix[2]))
		if !first {
			b.WriteString(", ")
		}
		first = false
		tm := fmt.Sprint(v)
		if math.IsNaN(v) {
			tm = `"CompilationFailedConfig"`
		}
		fmt.Fprintf(&b, `"%d,%d,%d": {"x": %d, "y": %d, "z": %d, "time": %s}`, ix[0], ix[1], ix[2], ix[0], ix[1], ix[2], tm)
	}
	b.WriteString("}}")
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A prior device's cache: a failed and a missing configuration have no
// time, the others their recorded one; a cache without a parameter of the
// space, or no cache at all, is an error naming it.
func TestSpaceTimes(t *testing.T) {
	sp := bowlSpace(t)
	fail, _ := sp.IndexOf([]int32{0, 0, 0})
	miss, _ := sp.IndexOf([]int32{9, 9, 4})
	popt, _ := sp.IndexOf([]int32{6, 3, 1})
	prior := writeBowlCache(t, sp, "bowl_prior.json", func(x, y, z float64) float64 {
		if x == 0 && y == 0 && z == 0 {
			return math.NaN()
		}
		return 2 * ((x-6)*(x-6) + (y-3)*(y-3) + (z-1)*(z-1) + 1)
	}, func(i int) bool { return i == miss })

	times, err := LoadSpaceTimes(prior, sp)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(times[fail]) || !math.IsNaN(times[miss]) || times[popt] != 2 {
		t.Fatalf("times: failed %v, missing %v, optimum %v", times[fail], times[miss], times[popt])
	}
	one, _ := sp.IndexOf([]int32{6, 3, 2})
	if worst, _ := sp.IndexOf([]int32{0, 9, 4}); times[one] != 4 || times[worst] != 164 || len(times) != sp.Len() {
		t.Fatalf("times: (6,3,2) %v, (0,9,4) %v, %d of %d", times[one], times[worst], len(times), sp.Len())
	}

	if _, err := LoadSpaceTimes("/no/such/cache.json", sp); err == nil || !strings.Contains(err.Error(), "/no/such/cache.json") {
		t.Errorf("missing cache: err = %v", err)
	}
	// A prior without a parameter of the space.
	other, err := space.Build([]space.Param{{Name: "w", Values: []expr.Value{expr.Int(0), expr.Int(1)}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSpaceTimes(prior, other); err == nil || !strings.Contains(err.Error(), `no tunable parameter "w"`) {
		t.Errorf("foreign prior: err = %v", err)
	}
}
