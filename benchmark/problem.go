// Package benchmark compares search strategies on recorded search spaces
// (Kernel Tuner caches replayed without a GPU and without the store): each
// strategy runs many times, with different seeds, through the ask/tell
// interface against the cache, and the best time found after each number
// of evaluations gives the fraction of the optimum (Schoonhoven et al.,
// "Benchmarking optimization algorithms for auto-tuning GPU kernels",
// IEEE TEC 2022), the success rate, and the performance score of the
// AutoTuningAssociation methodology (Willemsen et al., "A Methodology for
// Comparing Optimization Algorithms for Auto-Tuning", FGCS 2024;
// github.com/AutoTuningAssociation/autotuning_methodology).
package benchmark

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/workload"
)

// Problem is one search space with a recorded time (ms) per configuration.
//
// Configurations of the spec's space that the cache does not hold are not
// part of Space: LoadProblem leaves them out before any run, so a strategy
// can never propose one and none is charged an evaluation. Their outcome
// is unknown; scoring them as failures would invent results (and hide a
// possibly better optimum), and Kernel Tuner's simulation mode refuses
// such a configuration outright (ValueError "in simulation mode, all
// configurations must be present in the cache"). Missing counts them.
type Problem struct {
	Name  string // e.g. convolution_milo_A100
	Space *space.Space
	// Times[i] is the time (ms) of configuration i; NaN when it is invalid
	// (failed to compile or run).
	Times []float64
	// Energy[i] is the energy (J) of configuration i when the cache has
	// it, else NaN.
	Energy []float64
	// Sorted are the valid times, ascending; Sorted[0] is the optimum.
	Sorted []float64
	// Missing is the number of configurations of the spec's space the
	// cache does not hold; SpecLen is the size of the spec's space, so
	// Space.Len() == SpecLen - Missing.
	Missing, SpecLen int
	// Path is the cache file the problem was loaded from and Spec the T1
	// spec its space was built from ("" for a problem made in memory).
	Path, Spec string
}

// NewProblem makes a problem from times (ms, NaN invalid), one per
// configuration of sp. Errors: a length mismatch, no valid time.
func NewProblem(name string, sp *space.Space, times, energy []float64) (*Problem, error) {
	if len(times) != sp.Len() {
		return nil, fmt.Errorf("benchmark %s: %d times for %d configurations", name, len(times), sp.Len())
	}
	if energy == nil {
		energy = make([]float64, len(times))
		for i := range energy {
			energy[i] = math.NaN()
		}
	}
	p := &Problem{Name: name, Space: sp, Times: times, Energy: energy, SpecLen: sp.Len()}
	for _, t := range times {
		if !math.IsNaN(t) {
			p.Sorted = append(p.Sorted, t)
		}
	}
	if len(p.Sorted) == 0 {
		return nil, fmt.Errorf("benchmark %s: no valid configuration", name)
	}
	sort.Float64s(p.Sorted)
	return p, nil
}

// Optimum is the best valid time (ms).
func (p *Problem) Optimum() float64 { return p.Sorted[0] }

// LoadProblem reads a Kernel Tuner cache (cache.Load) and builds its
// search space from the T1 spec at specPath, whose restrictions decide the
// valid configurations. Configurations the cache records as failed are
// invalid (each costs the evaluation that finds it out); those of the
// spec's space the cache does not hold are left out of the space (see
// Problem), counted in Missing. The name is the cache file's base name
// without .json/.json.gz. Errors: unreadable cache or spec, a tunable
// parameter of the spec the cache lacks, no valid time, a space too large
// to leave the missing configurations out of (more than 2^24 raw
// configurations).
func LoadProblem(cachePath, specPath string) (*Problem, error) {
	c, err := cache.Load(cachePath)
	if err != nil {
		return nil, err
	}
	full, consts, err := loadSpace(specPath)
	if err != nil {
		return nil, err
	}
	entries, err := c.BySpace(full)
	if err != nil {
		return nil, fmt.Errorf("benchmark: spec %s: %w", specPath, err)
	}
	sp := full
	missing := 0
	for _, e := range entries {
		if e == nil {
			missing++
		}
	}
	if missing > 0 {
		keep := make([]bool, len(entries))
		for i, e := range entries {
			keep[i] = e != nil
		}
		if sp, err = Restrict(full, keep, consts); err != nil {
			return nil, fmt.Errorf("benchmark: cache %s lacks %d of the %d configurations of spec %s: %w", cachePath, missing, full.Len(), specPath, err)
		}
		if entries, err = c.BySpace(sp); err != nil {
			return nil, fmt.Errorf("benchmark: spec %s: %w", specPath, err)
		}
	}
	n := sp.Len()
	times, energy := make([]float64, n), make([]float64, n)
	for i, e := range entries {
		times[i], energy[i] = math.NaN(), math.NaN()
		if e == nil {
			return nil, fmt.Errorf("benchmark: configuration %s of the restricted space is not in cache %s", sp.Key(i), cachePath)
		}
		if e.Valid() && !math.IsNaN(e.Time) {
			times[i] = e.Time
			if en, ok := e.Extra["energy"]; ok {
				energy[i] = en
			}
		}
	}
	p, err := NewProblem(ProblemName(cachePath), sp, times, energy)
	if err != nil {
		return nil, err
	}
	p.Missing, p.SpecLen = missing, full.Len()
	p.Path, p.Spec = cachePath, specPath
	return p, nil
}

// loadSpace builds the search space a cache is replayed over: a T1
// spec's, or a workload file's combined space (workload.Set.Space:
// several kernels run together, their parameters prefixed with the
// kernel's name, as gtune export writes such a run's cache), with the
// constants its restrictions read.
func loadSpace(path string) (*space.Space, expr.Env, error) {
	if workload.IsFile(path) {
		set, err := workload.Load(path)
		if err != nil {
			return nil, nil, err
		}
		sp, _, err := set.Space(context.Background(), false, space.BuildOptions{})
		if err != nil {
			return nil, nil, err
		}
		return sp, set.Constants(), nil
	}
	s, err := spec.LoadWith(path, spec.LoadOptions{NoSource: true})
	if err != nil {
		return nil, nil, err
	}
	sp, err := s.BuildSpace()
	if err != nil {
		return nil, nil, err
	}
	return sp, s.Constants, nil
}

// maxRestrictRaw bounds the Cartesian product Restrict encodes: its
// restriction holds one bit per raw configuration.
const maxRestrictRaw = 1 << 24

// restrictBits keeps every word of Restrict's bitmap a positive int64.
const restrictBits = 62

// Restrict gives the space of sp's parameters and restrictions with one
// more restriction that admits configuration i of sp only where keep[i]:
// a bitmap over the mixed-radix number of each raw configuration (first
// parameter most significant), written as an expression, the form the
// cache package's T1 uses for a replay without a spec. consts are the
// constants sp's restrictions were built with. Configurations keep the
// relative order they had in sp. Errors: len(keep) != sp.Len(), more than
// 2^24 raw configurations, nothing kept.
func Restrict(sp *space.Space, keep []bool, consts expr.Env) (*space.Space, error) {
	if len(keep) != sp.Len() {
		return nil, fmt.Errorf("benchmark: Restrict: %d flags for %d configurations", len(keep), sp.Len())
	}
	params := sp.Params()
	// The first equal value stands for a value, as space.IndexesOf decides.
	canon := make([][]int, len(params))
	radix := make([]int, len(params))
	raw := 1
	for p := len(params) - 1; p >= 0; p-- {
		vs := params[p].Values
		canon[p] = make([]int, len(vs))
		for j, v := range vs {
			canon[p][j] = j
			for k := 0; k < j; k++ {
				if vs[k].Equal(v) {
					canon[p][j] = k
					break
				}
			}
		}
		radix[p] = raw
		if raw > maxRestrictRaw/len(vs) {
			return nil, fmt.Errorf("more than %d raw configurations: cannot leave configurations out", maxRestrictRaw)
		}
		raw *= len(vs)
	}
	words := make([]int64, (raw+restrictBits-1)/restrictBits)
	kept := 0
	for i, k := range keep {
		if !k {
			continue
		}
		code := 0
		for p, ix := range sp.Indexes(i) {
			code += canon[p][ix] * radix[p]
		}
		words[code/restrictBits] |= 1 << (code % restrictBits)
		kept++
	}
	if kept == 0 {
		return nil, fmt.Errorf("no configuration is kept")
	}
	var terms []string
	for p, prm := range params {
		if len(prm.Values) == 1 {
			continue
		}
		var idx strings.Builder
		idx.WriteByte('(')
		for j, v := range prm.Values[:len(prm.Values)-1] {
			if canon[p][j] == j {
				fmt.Fprintf(&idx, "%d if %s == %s else ", j, prm.Name, v.String())
			}
		}
		fmt.Fprintf(&idx, "%d)", canon[p][len(prm.Values)-1])
		terms = append(terms, fmt.Sprintf("%s*%d", idx.String(), radix[p]))
	}
	code := "0"
	if len(terms) > 0 {
		code = strings.Join(terms, " + ")
	}
	w := make([]string, len(words))
	for i, x := range words {
		w[i] = strconv.FormatInt(x, 10)
	}
	src := fmt.Sprintf("([%s][(%s) // %d] >> ((%s) %% %d)) & 1 == 1", strings.Join(w, ", "), code, restrictBits, code, restrictBits)
	e, err := expr.Parse(src)
	if err != nil {
		return nil, err
	}
	rs := append(slices.Clone(sp.Restrictions()), space.Restriction{Expr: e, Source: "configurations the cache holds"})
	out, err := space.Build(params, rs, consts)
	if err != nil {
		return nil, err
	}
	if out.Len() != kept {
		return nil, fmt.Errorf("the restricted space has %d configurations, want %d", out.Len(), kept)
	}
	return out, nil
}

// ProblemName is a cache file's base name without .json or .json.gz.
func ProblemName(path string) string {
	b := filepath.Base(path)
	b = strings.TrimSuffix(b, ".gz")
	return strings.TrimSuffix(b, ".json")
}

// DefaultSpecDir is where FindSpec looks when given no directories: the
// T1 specs of the shared benchmark_hub datasets, relative to the
// repository root (the working directory of a run from there).
const DefaultSpecDir = "../shared/datasets/benchmark_hub/specs"

// FindSpec gives the T1 spec for a cache: in dirs (DefaultSpecDir when
// none), the file NAME.T1.json with the longest NAME that prefixes the
// cache's problem name followed by "_" (convolution_milo_A100 →
// convolution_milo.T1.json). Error when none matches, naming the cache and
// the directories searched.
func FindSpec(cachePath string, dirs []string) (string, error) {
	if len(dirs) == 0 {
		dirs = []string{DefaultSpecDir}
	}
	name := ProblemName(cachePath)
	best := ""
	bestLen := -1
	for _, d := range dirs {
		ms, _ := filepath.Glob(filepath.Join(d, "*.T1.json"))
		slices.Sort(ms)
		for _, m := range ms {
			k := strings.TrimSuffix(filepath.Base(m), ".T1.json")
			if strings.HasPrefix(name, k+"_") && len(k) > bestLen {
				best, bestLen = m, len(k)
			}
		}
	}
	if best == "" {
		return "", fmt.Errorf("benchmark: no T1 spec for cache %s (looked for NAME.T1.json with %s starting with NAME_ in %s)", cachePath, name, strings.Join(dirs, ", "))
	}
	return best, nil
}

// TransferPriors gives the caches the transfer strategy may learn from
// when it tunes p: those of pool whose T1 spec (FindSpec in specDirs) is
// p's — the same kernel and search space on other GPUs — less p's own
// cache. Errors: p was not loaded from a cache, or a pool cache has no spec.
func TransferPriors(p *Problem, pool, specDirs []string) ([]string, error) {
	if p.Path == "" || p.Spec == "" {
		return nil, fmt.Errorf("benchmark: problem %s was not loaded from a cache: no transfer priors", p.Name)
	}
	var out []string
	for _, c := range pool {
		if isSameCache(p, c) || slices.Contains(out, c) {
			continue
		}
		s, err := FindSpec(c, specDirs)
		if err != nil {
			return nil, err
		}
		if sameFile(s, p.Spec) {
			out = append(out, c)
		}
	}
	return out, nil
}

// CheckPriors is the guard of every transfer run: the evaluated cache
// must not be among its priors (that would be tuning with the answers).
// Error naming the problem and the offending prior; also none given.
func CheckPriors(p *Problem, priors []string) error {
	if len(priors) == 0 {
		return fmt.Errorf("benchmark %s: transfer needs prior caches of the same kernel on other GPUs; there are none", p.Name)
	}
	for _, c := range priors {
		if isSameCache(p, c) {
			return fmt.Errorf("benchmark %s: prior cache %s is the evaluated cache itself", p.Name, c)
		}
	}
	return nil
}

// isSameCache: path is p's cache file, or a cache of the same problem
// name (the same kernel on the same GPU, e.g. a copy or its .json twin).
func isSameCache(p *Problem, path string) bool {
	return ProblemName(path) == p.Name || p.Path != "" && sameFile(path, p.Path)
}

func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}
