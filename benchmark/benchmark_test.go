package benchmark

import (
	"github.com/gtune/gtune/measure"
	"gonum.org/v1/gonum/stat"
	"math"
	"slices"
	"testing"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"

	"github.com/gtune/gtune/internal/shared"
)

func TestScoreHandComputed(t *testing.T) {
	sorted := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	// Median 5.5. Start: target 1+0.5·4.5 = 3.25, 3 values reach it;
	// round(11/(m+1)) <= 3 first at m = 3. End: target 1.18, 1 value;
	// round(11/(m+1)) <= 1 first at m = 7.
	if s, e := Window(sorted); s != 3 || e != 7 {
		t.Fatalf("window [%d, %d), want [3, 7)", s, e)
	}
	// Random baseline at m = 3, 4, 5, 6: ranks round(11/4)=3, round(11/5)=2,
	// round(11/6)=2, round(11/7)=2: values 3, 2, 2, 2.
	for m, want := range map[int]float64{3: 3, 4: 2, 5: 2, 6: 2, 1: 6, 10: 1} {
		if got := RandomBaseline(sorted, m); got != want {
			t.Errorf("RandomBaseline(m=%d) = %g, want %g", m, got, want)
		}
	}
	// Curve 4, 2, 2, 1, ...: m=3: (3−2)/(3−1) = 0.5; m=4,5,6: (2−1)/(2−1)
	// = 1. Mean 3.5/4.
	curve := []float64{4, 2, 2, 1, 1, 1, 1, 1}
	if got := Score(sorted, curve); math.Abs(got-0.875) > 1e-12 {
		t.Fatalf("score %g, want 0.875", got)
	}
	// A curve equal to random search scores 0.
	flat := []float64{6, 4, 3, 2, 2, 2, 2}
	if got := Score(sorted, flat); got != 0 {
		t.Fatalf("random-search curve scores %g, want 0", got)
	}
}

// subsets calls f with every m-subset of {0..n-1}.
func subsets(n, m int, f func([]int)) {
	cur := make([]int, 0, m)
	var rec func(start int)
	rec = func(start int) {
		if len(cur) == m {
			f(cur)
			return
		}
		for i := start; i < n; i++ {
			cur = append(cur, i)
			rec(i + 1)
			cur = cur[:len(cur)-1]
		}
	}
	rec(0)
}

func TestRandomCurveMatchesEnumeration(t *testing.T) {
	sorted := []float64{0.5, 1, 1, 2.5, 4, 7, 11}
	n := len(sorted)
	for m := 1; m <= n; m++ {
		sumV, sumR, count := 0.0, 0.0, 0
		subsets(n, m, func(s []int) {
			sumV += sorted[s[0]] // subsets are ascending: s[0] is the best
			sumR += float64(s[0] + 1)
			count++
		})
		if got, want := ExpectedRandomBest(sorted, m), sumV/float64(count); math.Abs(got-want) > 1e-12 {
			t.Errorf("m=%d: expected best %g, enumeration %g", m, got, want)
		}
		if got, want := ExpectedBestRank(n, m), sumR/float64(count); math.Abs(got-want) > 1e-12 {
			t.Errorf("m=%d: expected rank %g, enumeration %g", m, got, want)
		}
	}
}

// tiny is a one-parameter problem of five configurations.
func tiny(t *testing.T, times []float64) *Problem {
	t.Helper()
	vals := make([]expr.Value, len(times))
	for i := range vals {
		vals[i] = expr.Int(int64(i))
	}
	sp, err := space.Build([]space.Param{{Name: "x", Values: vals}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProblem("tiny", sp, times, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEvaluateBruteForce(t *testing.T) {
	p := tiny(t, []float64{3, math.NaN(), 2, 4, 1})
	curve, err := Run(p, "brute_force", nil, 1, 7)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{3, 3, 2, 2, 1, 1, 1}; !slices.Equal(curve, want) {
		t.Fatalf("curve %v, want %v", curve, want)
	}
	rs, err := Evaluate(Config{Problems: []*Problem{p}, Strategies: []string{"brute_force"}, Seeds: 3, Budgets: []int{1, 3, 5}, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if !slices.Equal(r.Fraction, []float64{1.0 / 3, 0.5, 1}) || !slices.Equal(r.Success, []float64{0, 0, 1}) {
		t.Fatalf("fraction %v success %v", r.Fraction, r.Success)
	}
	// Nothing valid yet counts 0.
	q := tiny(t, []float64{math.NaN(), 2, 1})
	rs, err = Evaluate(Config{Problems: []*Problem{q}, Strategies: []string{"brute_force"}, Seeds: 1, Budgets: []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rs[0].Fraction, []float64{0, 0.5}) {
		t.Fatalf("fraction %v", rs[0].Fraction)
	}
	if _, err := NewProblem("none", q.Space, []float64{math.NaN(), math.NaN(), math.NaN()}, nil); err == nil {
		t.Fatal("a problem without a valid time was accepted")
	}
}

func TestLoadProblemConvolutionA100(t *testing.T) {
	const c = "../../shared/datasets/benchmark_hub/convolution_milo_A100.json.gz"
	const specs = "../../shared/datasets/benchmark_hub/specs"
	shared.Need(t, c, specs)
	sp, err := FindSpec(c, []string{specs})
	if err != nil || sp != specs+"/convolution_milo.T1.json" {
		t.Fatalf("FindSpec: %q, %v", sp, err)
	}
	p, err := LoadProblem(c, sp)
	if err != nil {
		t.Fatal(err)
	}
	// The cache holds all 4362 configurations of the space; 161 failed
	// to compile or run.
	if p.Space.Len() != 4362 || len(p.Sorted) != 4201 || p.Missing != 0 || p.Optimum() != 0.5536000076681376 {
		t.Fatalf("%d configurations, %d valid, %d missing, optimum %v", p.Space.Len(), len(p.Sorted), p.Missing, p.Optimum())
	}
	if _, err := FindSpec("x/unknown_kernel_A100.json", []string{specs}); err == nil {
		t.Fatal("FindSpec found a spec for an unknown kernel")
	}
}

func TestTransferPriorsNeverTheEvaluatedCache(t *testing.T) {
	const hub = "../../shared/datasets/benchmark_hub/"
	shared.Need(t, hub+"convolution_milo_W6600.json.gz")
	dirs := []string{hub + "specs"}
	target := hub + "convolution_milo_W6600.json.gz"
	p, err := LoadProblem(target, hub+"specs/convolution_milo.T1.json")
	if err != nil {
		t.Fatal(err)
	}
	pool := []string{hub + "convolution_milo_A100.json.gz", target, hub + "dedispersion_milo_A100.json.gz",
		hub + "convolution_milo_MI250X.json.gz", "../../shared/datasets/../datasets/benchmark_hub/convolution_milo_W6600.json.gz",
		hub + "convolution_milo_A100.json.gz"}
	got, err := TransferPriors(p, pool, dirs)
	if err != nil {
		t.Fatal(err)
	}
	// The evaluated cache (under either path) and the other kernel are
	// left out; the duplicate A100 counted once.
	if want := []string{hub + "convolution_milo_A100.json.gz", hub + "convolution_milo_MI250X.json.gz"}; !slices.Equal(got, want) {
		t.Fatalf("priors %v, want %v", got, want)
	}
	// The guard: the evaluated cache among the priors is an error, in
	// Evaluate and in Run.
	for _, bad := range [][]string{{hub + "convolution_milo_A100.json.gz", target}, {"elsewhere/convolution_milo_W6600.json"}, nil} {
		if err := CheckPriors(p, bad); err == nil {
			t.Errorf("CheckPriors accepted %v", bad)
		}
		_, err := Evaluate(Config{Problems: []*Problem{p}, Strategies: []string{TransferName}, Seeds: 1, Budgets: []int{1},
			Priors: map[string][]string{p.Name: bad}})
		if err == nil {
			t.Errorf("Evaluate accepted priors %v", bad)
		}
		if _, err := Run(p, TransferName, map[string]any{"prior": bad}, 1, 1); err == nil {
			t.Errorf("Run accepted priors %v", bad)
		}
	}
	// With the priors found, transfer runs; its first proposal is a prior
	// device's optimum, so it does better than the median at once.
	rs, err := Evaluate(Config{Problems: []*Problem{p}, Strategies: []string{TransferName}, Seeds: 1, Budgets: []int{5},
		Priors: map[string][]string{p.Name: got}, Params: map[string]map[string]any{TransferName: {"bo_evals": 10}}})
	if err != nil {
		t.Fatal(err)
	}
	if f := rs[0].Fraction[0]; !(f > p.Optimum()/measure.Median(p.Sorted)) {
		t.Fatalf("fraction of optimum after 5: %v", f)
	}
}

// A multi-objective strategy runs on a cache: it is told time and energy
// (+Inf where a cache records no energy) as its objective vector, and
// visits every configuration of a small space.
func TestMultiObjectiveStrategyRuns(t *testing.T) {
	p := tiny(t, []float64{3, 1, 2, 5, 4, math.NaN()})
	curve, err := Run(p, "nsga2", map[string]any{"popsize": 2}, 1, 6)
	if err != nil {
		t.Fatal(err)
	}
	if curve[len(curve)-1] != 1 {
		t.Fatalf("curve %v, want it to reach the optimum 1", curve)
	}
}

// The exact random baseline against the subsets counted by hand: times
// 1, 2, invalid, 4. One draw: (1 + 1/2 + 0 + 1/4)/4; two: the six pairs
// give 1, 1, 1, 1/2, 1/2, 1/4; three: 1, 1, 1, 1/2 over four; four: 1.
func TestRandomFraction(t *testing.T) {
	p := tiny(t, []float64{2, math.NaN(), 1, 4})
	for _, c := range []struct {
		m    int
		want float64
	}{{0, 0}, {1, 1.75 / 4}, {2, 4.25 / 6}, {3, 3.5 / 4}, {4, 1}, {9, 1}} {
		if got := p.RandomFraction(c.m); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("m=%d: %v, want %v", c.m, got, c.want)
		}
	}
	if g := GapClosed(0.9, 0.8); math.Abs(g-0.5) > 1e-12 {
		t.Errorf("gap %v", g)
	}
	if g := GapClosed(0.7, 0.8); math.Abs(g+0.5) > 1e-12 {
		t.Errorf("below random: %v", g)
	}
	if !math.IsNaN(GapClosed(1, 1)) {
		t.Error("no gap: not NaN")
	}
}

// The random_sample strategy, replayed with 400 seeds on convolution's
// A100 cache, reaches the exact random baseline within three standard
// errors at 10 and 40 evaluations: the baseline is the strategy's own
// expectation.
func TestRandomFractionMatchesRandomSample(t *testing.T) {
	const c = "../../shared/datasets/benchmark_hub/convolution_milo_A100.json.gz"
	const specs = "../../shared/datasets/benchmark_hub/specs"
	shared.Need(t, c, specs)
	p, err := LoadProblem(c, specs+"/convolution_milo.T1.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []int{10, 40} {
		var xs []float64
		for k := range 400 {
			curve, err := Run(p, "random_sample", nil, Seed(p.Name, "random_sample", k), m)
			if err != nil {
				t.Fatal(err)
			}
			f := 0.0
			if b := curve[m-1]; !math.IsInf(b, 1) {
				f = p.Optimum() / b
			}
			xs = append(xs, f)
		}
		mean, sd := stat.MeanStdDev(xs, nil)
		want := p.RandomFraction(m)
		if se := sd / math.Sqrt(float64(len(xs))); math.Abs(mean-want) > 3*se {
			t.Errorf("m=%d: random_sample %.4f ± %.4f, exact %.4f", m, mean, se, want)
		}
	}
}

// FamilyMeans averages each kernel's caches apart, named after the
// kernel; one kernel gives none.
func TestFamilyMeans(t *testing.T) {
	r := func(p string, f float64) Result {
		return Result{Problem: p, Strategy: "s", Runs: 1, Budgets: []int{25}, Fraction: []float64{f}, Success: []float64{0},
			Random: []float64{0.5}, Gap: []float64{GapClosed(f, 0.5)}, Score: math.NaN()}
	}
	rs := []Result{r("conv_milo_A100", 0.6), r("conv_milo_A4000", 0.8), r("dedisp_milo_A100", 0.9)}
	ms := FamilyMeans(rs)
	if len(ms) != 2 || ms[0].Problem != "mean conv_milo" || ms[1].Problem != "mean dedisp_milo" ||
		math.Abs(ms[0].Fraction[0]-0.7) > 1e-12 || math.Abs(ms[0].Gap[0]-0.4) > 1e-12 || math.Abs(ms[1].Gap[0]-0.8) > 1e-12 {
		t.Fatalf("%+v", ms)
	}
	if FamilyMeans(rs[:2]) != nil || Family("plain") != "plain" {
		t.Fatal("one family: rows")
	}
}
