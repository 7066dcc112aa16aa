package strategy

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// bowlPrior is a prior device's times of the bowl space (bowl in
// search_test.go): f(x, y, z) ms; configurations for which f is NaN
// failed there, and those with skip true are missing (NaN too).
func bowlPrior(sp *space.Space, name string, f func(x, y, z float64) float64, skip func(i int) bool) PriorTimes {
	p := PriorTimes{Source: name, TimesMs: make([]float64, sp.Len())}
	for i := range p.TimesMs {
		ix := sp.Indexes(i)
		p.TimesMs[i] = f(float64(ix[0]), float64(ix[1]), float64(ix[2]))
		if skip != nil && skip(i) {
			p.TimesMs[i] = math.NaN()
		}
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
	prior := bowlPrior(sp, "bowl_prior.json", func(x, y, z float64) float64 {
		if x == 0 && y == 0 && z == 0 {
			return math.NaN()
		}
		return 2 * ((x-6)*(x-6) + (y-3)*(y-3) + (z-1)*(z-1) + 1)
	}, func(i int) bool { return i == miss })

	// Reading such times from a Kernel Tuner cache: cache.TestSpaceTimes.
	times := prior.TimesMs
	if !math.IsNaN(times[fail]) || !math.IsNaN(times[miss]) || times[popt] != 2 {
		t.Fatalf("times: failed %v, missing %v, optimum %v", times[fail], times[miss], times[popt])
	}
	f := priorFeature(times)
	// The worst valid time is at (0, 9, 4): 2·(36+36+9+1) = 164.
	worst, _ := sp.IndexOf([]int32{0, 9, 4})
	if f[popt] != 0 || f[worst] != 1 || f[fail] != 1 || f[miss] != 1 {
		t.Fatalf("features: optimum %v, worst %v, failed %v, missing %v", f[popt], f[worst], f[fail], f[miss])
	}
	one, _ := sp.IndexOf([]int32{6, 3, 2}) // time 4: log 4 / log 82 of the way
	if want := math.Log(2) / math.Log(82); math.Abs(f[one]-want) > 1e-12 {
		t.Fatalf("feature of (6,3,2) %v, want %v", f[one], want)
	}

	s, err := New("transfer", Options{Space: sp, Seed: 1, Params: map[string]any{"prior": []any{prior.Source}, "initial_samples": 4, "random_initial": 1},
		Priors: []PriorTimes{prior}})
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
	prior := bowlPrior(sp, "a.json", func(x, y, z float64) float64 { return 1 + x + y + z }, nil)
	priors := []PriorTimes{prior}
	// Exhausts the space without a repeat, and is deterministic per seed.
	run := func(seed uint64, budget int) []int {
		s, err := New("transfer", Options{Space: sp, Seed: seed, Params: map[string]any{"prior": prior.Source, "bo_evals": 40}, Priors: priors})
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
	// Told the batch (Options.Batch), it keeps that many outstanding
	// after its initial design, as bayes_opt does.
	for _, batch := range []int{1, 4} {
		s, err := New("transfer", Options{Space: sp, Seed: 1, Params: map[string]any{"prior": prior.Source}, Priors: priors, Batch: batch})
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		most := 0
		for told := 0; told < 40; {
			ids := s.Next(4 - len(out))
			out = append(out, ids...)
			if told >= 10 {
				most = max(most, len(out))
			}
			if len(ids) == 0 || len(out) == 4 {
				s.Tell(eval(out[0]))
				out, told = out[1:], told+1
			}
		}
		if most != batch {
			t.Errorf("transfer told a batch of %d: %d outstanding at most", batch, most)
		}
	}
	for _, bad := range []struct {
		params map[string]any
		priors []PriorTimes
		want   string
	}{
		{nil, nil, "prior is required"},
		{map[string]any{"prior": 3}, priors, "want a list of cache file paths"},
		{map[string]any{"prior": prior.Source, "random_initial": -1}, priors, "random_initial = -1"},
		{map[string]any{"prior": prior.Source, "xi": -1}, priors, "strategy transfer: hyperparameter xi"},
		{map[string]any{"prior": prior.Source, "nope": 1}, priors, `transfer has no hyperparameter "nope"`},
		{nil, []PriorTimes{{Source: "short.json", TimesMs: []float64{1}}}, "prior short.json has 1 times for a search space of"},
	} {
		_, err := New("transfer", Options{Space: sp, Params: bad.params, Priors: bad.priors})
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: err = %v, want %q", bad.params, err, bad.want)
		}
	}
	// Loading: a cache that cannot be read names itself (its matching to
	// the space: cache.TestSpaceTimes); another form of prior loads
	// nothing.
	_, err := LoadPriors([]any{"/no/such/cache.json"}, func(path string) ([]float64, error) { return nil, fmt.Errorf("open %s: no such file", path) })
	if err == nil || !strings.Contains(err.Error(), "/no/such/cache.json") || !strings.HasPrefix(err.Error(), "strategy transfer: prior ") {
		t.Errorf("missing prior: err = %v", err)
	}
	got, err := LoadPriors("a.json, b.json", func(path string) ([]float64, error) { return []float64{float64(len(path))}, nil })
	if err != nil || len(got) != 2 || got[1].Source != "b.json" || got[1].TimesMs[0] != 6 {
		t.Errorf("LoadPriors: %+v, %v", got, err)
	}
	if got, err := LoadPriors(3, nil); got != nil || err != nil {
		t.Errorf("LoadPriors(3): %v, %v", got, err)
	}
}

func TestARDFindsTheRelevantParameter(t *testing.T) {
	// y depends on the first coordinate only: its length scale must come
	// out shorter than the second's, which should be switched off.
	X, y := gridData(func(a, _ float64) float64 { return math.Sin(6 * a) })
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
	sp, err := space.Build([]space.Param{
		{Name: "a", Values: intValues(1, 2, 4, 8)},
		{Name: "b", Values: intValues(16, 32, 48, 64)},
		{Name: "c", Values: intValues(0, 1)},
		{Name: "d", Values: intValues(7)},
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
