package strategy

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// writeBowlCache writes a Kernel Tuner cache of the bowl space (bowl in
// search_test.go) whose times are f(x, y, z); configurations for which f
// is NaN are recorded as failed, and those with skip true are left out.
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

func TestPriorFeatureAndDesign(t *testing.T) {
	sp, eval := bowl(t)
	// A prior device whose optimum is at (6, 3, 1), next to this one's
	// (6, 3, 2); (0, 0, 0) failed there and (9, 9, 4) is missing.
	fail, _ := sp.IndexOf([]int32{0, 0, 0})
	miss, _ := sp.IndexOf([]int32{9, 9, 4})
	popt, _ := sp.IndexOf([]int32{6, 3, 1})
	prior := writeBowlCache(t, sp, "bowl_prior.json", func(x, y, z float64) float64 {
		if x == 0 && y == 0 && z == 0 {
			return math.NaN()
		}
		return 2 * ((x-6)*(x-6) + (y-3)*(y-3) + (z-1)*(z-1) + 1)
	}, func(i int) bool { return i == miss })

	times, err := PriorTimes(sp, prior)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(times[fail]) || !math.IsNaN(times[miss]) || times[popt] != 2 {
		t.Fatalf("times: failed %v, missing %v, optimum %v", times[fail], times[miss], times[popt])
	}
	f, err := priorFeature(sp, prior)
	if err != nil {
		t.Fatal(err)
	}
	// The worst valid time is at (0, 9, 4): 2·(36+36+9+1) = 164.
	worst, _ := sp.IndexOf([]int32{0, 9, 4})
	if f[popt] != 0 || f[worst] != 1 || f[fail] != 1 || f[miss] != 1 {
		t.Fatalf("features: optimum %v, worst %v, failed %v, missing %v", f[popt], f[worst], f[fail], f[miss])
	}
	one, _ := sp.IndexOf([]int32{6, 3, 2}) // time 4: log 4 / log 82 of the way
	if want := math.Log(2) / math.Log(82); math.Abs(f[one]-want) > 1e-12 {
		t.Fatalf("feature of (6,3,2) %v, want %v", f[one], want)
	}

	s, err := New("transfer", Options{Space: sp, Seed: 1, Params: map[string]any{"prior": []any{prior}, "initial_samples": 4, "random_initial": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "transfer" {
		t.Fatalf("name %q", s.Name())
	}
	// The design: the prior's optimum, one uniform configuration, then the
	// prior's next best (its neighbours at distance 1).
	d := s.Next(8)
	if len(d) != 4 || d[0] != popt {
		t.Fatalf("design %v, want 4 starting with %d", d, popt)
	}
	for _, i := range d[2:] {
		if ix := sp.Indexes(i); times[i] != 4 {
			t.Fatalf("design %v: %v has prior time %v, want 4", d, ix, times[i])
		}
	}
	// The search then finds this device's optimum, next to the prior's,
	// within a few evaluations.
	opt, _ := sp.IndexOf([]int32{6, 3, 2})
	for _, i := range d {
		s.Tell(eval(i))
	}
	got := slices.Concat(d, driveSearch(t, s, eval, 8, 8))
	if !slices.Contains(got, opt) {
		t.Fatalf("optimum %d not among the first 12 proposals %v", opt, got)
	}
}

func TestTransferSearchAndErrors(t *testing.T) {
	sp, eval := bowl(t)
	prior := writeBowlCache(t, sp, "a.json", func(x, y, z float64) float64 { return 1 + x + y + z }, nil)
	// Exhausts the space without a repeat, and is deterministic per seed.
	run := func(seed uint64, budget int) []int {
		s, err := New("transfer", Options{Space: sp, Seed: seed, Params: map[string]any{"prior": prior, "bo_evals": 40}})
		if err != nil {
			t.Fatal(err)
		}
		return driveSearch(t, s, eval, 5, budget)
	}
	all := run(3, 10*sp.Len())
	seen := map[int]bool{}
	for _, i := range all {
		if seen[i] {
			t.Fatalf("configuration %d proposed twice", i)
		}
		seen[i] = true
	}
	if len(all) != sp.Len() {
		t.Fatalf("proposed %d of %d", len(all), sp.Len())
	}
	if a, b, c := run(1, 60), run(1, 60), run(2, 60); !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Fatal("not deterministic per seed")
	}
	for _, bad := range []struct {
		params map[string]any
		want   string
	}{
		{nil, "prior is required"},
		{map[string]any{"prior": 3}, "want a list of cache file paths"},
		{map[string]any{"prior": []any{"/no/such/cache.json"}}, "/no/such/cache.json"},
		{map[string]any{"prior": prior, "random_initial": -1}, "random_initial = -1"},
		{map[string]any{"prior": prior, "xi": -1}, "strategy transfer: hyperparameter xi"},
		{map[string]any{"prior": prior, "nope": 1}, `transfer has no hyperparameter "nope"`},
	} {
		_, err := New("transfer", Options{Space: sp, Params: bad.params})
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: err = %v, want %q", bad.params, err, bad.want)
		}
	}
	// A prior without a parameter of the space.
	other, err := space.Build([]space.Param{{Name: "w", Values: []expr.Value{expr.Int(0), expr.Int(1)}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New("transfer", Options{Space: other, Params: map[string]any{"prior": prior}}); err == nil || !strings.Contains(err.Error(), `no tunable parameter "w"`) {
		t.Errorf("foreign prior: err = %v", err)
	}
}

func TestARDFindsTheRelevantParameter(t *testing.T) {
	// y depends on the first coordinate only: its length scale must come
	// out shorter than the second's, which should be switched off.
	var X [][]float64
	var y []float64
	for i := 0; i < 8; i++ {
		for j := 0; j < 5; j++ {
			a, b := float64(i)/7, float64(j)/4
			X = append(X, []float64{a, b})
			y = append(y, math.Sin(6*a))
		}
	}
	m, sd := meanSD(y)
	for k := range y {
		y[k] = (y[k] - m) / sd
	}
	h, ok := fitHyper(X, y, 2)
	if !ok {
		t.Fatal("no fit")
	}
	if !(h.ls[0] < h.ls[1]) || h.ls[1] < 3 {
		t.Fatalf("length scales %v: want the second long (≥ 3) and the first shorter", h.ls)
	}
	iso, _ := fitHyper(X, y, 0)
	if iso.ls[0] != iso.ls[1] {
		t.Fatalf("isotropic fit %v", iso.ls)
	}
	// The fitted GP interpolates: at an observed point the mean is the
	// observation (noise is small against the signal).
	g, _ := fitGP(X, y, h.inv(), h.noise)
	mu, s := g.predict(X[7], make([]float64, len(X)))
	if math.Abs(mu-y[7]) > 0.1 || s > 0.35 {
		t.Fatalf("at an observation: mean %v (want %v), sd %v", mu, y[7], s)
	}
}

func TestFeatureMapScaling(t *testing.T) {
	ints := func(vs ...int64) []expr.Value {
		out := make([]expr.Value, len(vs))
		for i, v := range vs {
			out[i] = expr.Int(v)
		}
		return out
	}
	sp, err := space.Build([]space.Param{
		{Name: "a", Values: ints(1, 2, 4, 8)},
		{Name: "b", Values: ints(16, 32, 48, 64)},
		{Name: "c", Values: ints(0, 1)},
		{Name: "d", Values: ints(7)},
		{Name: "e", Values: []expr.Value{expr.Str("x"), expr.Str("y"), expr.Str("z")}},
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	i, _ := sp.IndexOf([]int32{1, 1, 1, 0, 1}) // a=2, b=32, c=1, e="y"
	lin := newFeatureMap(sp, "index").at(i, nil)
	lg := newFeatureMap(sp, "log").at(i, nil)
	// d has one value and no coordinate; c (0 and 1) and e (strings) are
	// placed by index either way.
	if want := []float64{1.0 / 3, 1.0 / 3, 1, 0.5}; !slices.Equal(lin, want) {
		t.Fatalf("index features %v, want %v", lin, want)
	}
	// log: a = 2 is 1/3 of the way from 1 to 8 either way; b = 32 is half
	// way from 16 to 64.
	if want := []float64{1.0 / 3, 0.5, 1, 0.5}; !approxEqual(lg, want) {
		t.Fatalf("log features %v, want %v", lg, want)
	}
	j, _ := sp.IndexOf([]int32{0, 2, 0, 0, 2}) // b = 48: log 3 / log 4 of the way
	if got := newFeatureMap(sp, "log").at(j, nil); !approxEqual(got, []float64{0, math.Log(3) / math.Log(4), 0, 1}) {
		t.Fatalf("log features %v", got)
	}
}

func approxEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if math.Abs(a[k]-b[k]) > 1e-12 {
			return false
		}
	}
	return true
}
