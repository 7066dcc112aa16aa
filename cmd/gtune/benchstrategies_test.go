package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gtune/gtune/cache"

	"github.com/gtune/gtune/benchmark"
	"github.com/gtune/gtune/internal/shared"
)

// hubDedispersion is benchmark_hub's dedispersion cache of the A100 and
// the directory of its spec; the test is skipped where ../shared lacks
// them.
func hubDedispersion(t *testing.T) (cache, specDir string) {
	t.Helper()
	const c = "../../../shared/datasets/benchmark_hub/dedispersion_milo_A100.json.gz"
	shared.Need(t, c)
	return c, filepath.Dir(hubSpec(t, "dedispersion_milo.T1.json"))
}

func TestBenchStrategiesJSON(t *testing.T) {
	c, specs := hubDedispersion(t)
	var out, errb bytes.Buffer
	code := run([]string{"bench-strategies", "--cache", c, "--spec-dir", specs, "--strategy", "brute_force",
		"--strategy", "greedy_ils", "--seeds", "2", "--budgets", "25,100", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var doc struct {
		Problems []struct {
			Name  string `json:"name"`
			Valid int    `json:"valid"`
		} `json:"problems"`
		Results []struct {
			Strategy string    `json:"strategy"`
			Runs     int       `json:"runs"`
			Fraction []float64 `json:"fraction_of_optimum"`
			Success  []float64 `json:"success_rate"`
		} `json:"results"`
		Mean []json.RawMessage `json:"mean"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Problems) != 1 || doc.Problems[0].Name != "dedispersion_milo_A100" || doc.Problems[0].Valid != 11130 {
		t.Fatalf("problems %+v", doc.Problems)
	}
	if len(doc.Results) != 2 || doc.Results[0].Strategy != "brute_force" || doc.Results[0].Runs != 2 || len(doc.Results[1].Fraction) != 2 || len(doc.Mean) != 2 {
		t.Fatalf("results %+v", doc.Results)
	}
	// brute_force is the same for every seed: both runs agree, and its
	// best time only improves with the budget.
	f := doc.Results[0].Fraction
	if !(f[0] > 0 && f[0] <= f[1] && f[1] <= 1) {
		t.Fatalf("brute_force fractions %v", f)
	}
}

func TestBenchStrategiesBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string // in the message
	}{
		{[]string{"--budgets", "100,25"}, `--budgets "100,25": want ascending budgets`},
		{[]string{"--budgets", "a"}, `--budgets "a": want positive integers`},
		{[]string{"--seeds", "0"}, `invalid argument "0" for "--seeds"`},
		{[]string{"--strategy", "nope", "--cache", "x.json"}, `unknown strategy "nope"`},
		{[]string{"--strategy-param", "popsize=3", "--cache", "x.json"}, `--strategy-param "popsize=3": want STRATEGY.NAME=VALUE`},
		// A hyperparameter of a strategy the run does not replay was
		// silently ignored.
		{[]string{"--strategy", "random_sample", "--strategy-param", "bayes_opt.kappa=2", "--cache", "x.json"},
			"--strategy-param bayes_opt.kappa=2: bayes_opt is not among the strategies this run replays (random_sample)"},
		{[]string{"--strategy", "random_sample", "--strategy-param", "bayes_op.kappa=2", "--cache", "x.json"},
			"bayes_op is not among the strategies"},
		// A missing cache was reported as a missing spec.
		{[]string{"--strategy", "random_sample", "--cache", filepath.Join(dir, "gone_A100.json")},
			"--cache " + filepath.Join(dir, "gone_A100.json") + ": no such file or directory"},
		{[]string{"--strategy", "random_sample", "--cache", dir}, "--cache " + dir + " is a directory"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"bench-strategies"}, c.args...)
		if code := run(args, &out, &errb); code != exitBadInput || !strings.Contains(errb.String(), "gtune: ") || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", args, code, errb.String(), exitBadInput, c.want)
		}
	}
}

func TestBenchStrategiesTransferPriors(t *testing.T) {
	const hub = "../../../shared/datasets/benchmark_hub/"
	shared.Need(t, hub+"convolution_milo_A4000.json.gz")
	if slices.Contains(benchmark.DefaultStrategies(), "transfer") {
		t.Fatal("transfer is in the default (no-prior) strategy list")
	}
	var out, errb bytes.Buffer
	// The evaluated cache is in the prior pool too: it must not be used.
	code := run([]string{"bench-strategies", "--cache", hub + "convolution_milo_A4000.json.gz", "--spec-dir", hub + "specs",
		"--prior-cache", hub + "convolution_milo_A4000.json.gz", "--prior-cache", hub + "convolution_milo_A6000.json.gz",
		"--prior-cache", hub + "dedispersion_milo_A100.json.gz", "--strategy", "transfer", "--seeds", "1", "--budgets", "5",
		"--strategy-param", "transfer.bo_evals=10", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var doc struct {
		Problems []struct {
			Priors []string `json:"transfer_priors"`
		} `json:"problems"`
		Results []struct {
			Fraction []float64 `json:"fraction_of_optimum"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Problems) != 1 || !slices.Equal(doc.Problems[0].Priors, []string{hub + "convolution_milo_A6000.json.gz"}) {
		t.Fatalf("priors %+v", doc.Problems)
	}
	// A6000's optimum is A4000's third best, 1.1% slower: the first
	// proposal, so at least 1/1.011 of the optimum after 5.
	if f := doc.Results[0].Fraction[0]; f < 0.989 || f > 1 {
		t.Fatalf("fraction after 5: %v", f)
	}
}

// The configurations a cache lacks are counted per cache, said in the
// table and the JSON, and left out of the space searched: on the tiny
// cache brute force reaches the optimum within the 5 recorded
// configurations.
func TestBenchStrategiesLacking(t *testing.T) {
	args := []string{"bench-strategies", "--cache", "../../benchmark/testdata/tiny_gpu.json", "--spec-dir", "../../benchmark/testdata",
		"--strategy", "brute_force", "--seeds", "1", "--budgets", "5"}
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"tiny_gpu: 7 configurations, 2 lacking, 4 valid, optimum 2 ms",
		"cache tiny_gpu lacks 2 of 7 configurations of the spec's space: 5 searched",
		"lacking: configurations of the spec's space that a cache lacks are left out of the space searched on that cache before the runs: never proposed, never charged an evaluation",
		"method: each budget is a separate run told that budget",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run(append(args, "--json"), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var doc struct {
		Problems []struct {
			Configurations, Missing, Searched int
		} `json:"problems"`
		Results []struct {
			Fraction []float64 `json:"fraction_of_optimum"`
		} `json:"results"`
		MissingPolicy string `json:"missing_policy"`
		Runs          int    `json:"runs"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Problems) != 1 || doc.Problems[0].Configurations != 7 || doc.Problems[0].Missing != 2 || doc.Problems[0].Searched != 5 ||
		!strings.Contains(doc.MissingPolicy, "never charged") {
		t.Fatalf("%s", out.String())
	}
	// 5 evaluations cover the 5 recorded configurations, the optimum
	// among them: 1 (charging the lacking ones would leave it unfound).
	if doc.Results[0].Fraction[0] != 1 {
		t.Fatalf("fraction after 5: %v", doc.Results[0].Fraction)
	}

	// A convolution cache cut short lacks the configurations after the cut.
	conv := hubFile(t, "convolution_milo_A100.json.gz")
	specs := filepath.Dir(hubSpec(t, "convolution_milo.T1.json"))
	partial := filepath.Join(t.TempDir(), "convolution_milo_cut.json")
	writeCutCache(t, conv, partial, "\n\"64,1,1,1,0,0,0,1,15,15\"")
	c, err := cache.Load(partial)
	if err != nil {
		t.Fatal(err)
	}
	missing := 4362 - len(c.Entries)
	if missing <= 0 || missing >= 4362 {
		t.Fatalf("the cut cache holds %d entries", len(c.Entries))
	}
	out.Reset()
	code := run([]string{"bench-strategies", "--cache", partial, "--spec-dir", specs, "--strategy", "random_sample", "--seeds", "1", "--budgets", "5"}, &out, &errb)
	if want := fmt.Sprintf("cache convolution_milo_cut lacks %d of 4362 configurations of the spec's space: %d searched", missing, 4362-missing); code != 0 || !strings.Contains(out.String(), want) {
		t.Fatalf("exit %d, want %q in:\n%s%s", code, want, out.String(), errb.String())
	}
}

// writeCutCache writes the gzip cache src, decompressed and cut before
// marker, to dst: a cache still being written.
func writeCutCache(t *testing.T, src, dst, marker string) {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	cut := bytes.Index(b, []byte(marker))
	if cut < 0 {
		t.Fatalf("%q not found in %s", marker, src)
	}
	if err := os.WriteFile(dst, b[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
}

// --quick: 10 seeds at 25 and 100 evaluations, said first with the work
// to replay; the exact random baseline and the gap closed in the JSON
// (brute force in a fixed order: its gap is what its fraction says).
func TestBenchStrategiesQuick(t *testing.T) {
	c, specs := hubDedispersion(t)
	var out, errb bytes.Buffer
	code := run([]string{"bench-strategies", "--quick", "--cache", c, "--spec-dir", specs, "--strategy", "brute_force", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	first, _, _ := strings.Cut(errb.String(), "\n")
	if !strings.HasPrefix(first, "gtune: bench-strategies: 30 runs, ") || !strings.Contains(first, "(1 caches × 1 strategies × 10 seeds × 2 budgets and the score run)") {
		t.Errorf("first line %q", first)
	}
	var doc struct {
		Seeds   int `json:"seeds"`
		Results []struct {
			Budgets  []int     `json:"budgets"`
			Fraction []float64 `json:"fraction_of_optimum"`
			Random   []float64 `json:"random_fraction"`
			Gap      []float64 `json:"gap_closed"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	r := doc.Results[0]
	if doc.Seeds != 10 || !slices.Equal(r.Budgets, []int{25, 100}) || len(r.Random) != 2 || len(r.Gap) != 2 {
		t.Fatalf("seeds %d, result %+v", doc.Seeds, r)
	}
	for k := range r.Budgets {
		if want := (r.Fraction[k] - r.Random[k]) / (1 - r.Random[k]); !(r.Random[k] > 0 && r.Random[k] < 1) || r.Gap[k]-want > 1e-12 || want-r.Gap[k] > 1e-12 {
			t.Errorf("budget %d: fraction %v, random %v, gap %v", r.Budgets[k], r.Fraction[k], r.Random[k], r.Gap[k])
		}
	}
}

// TestBenchStrategiesNoScore: --no-score makes only the budgets' runs (the
// JSON's runs count, the first stderr line), leaves the score out (null)
// and says so in the method.
func TestBenchStrategiesNoScore(t *testing.T) {
	c, specs := hubDedispersion(t)
	var out, errb bytes.Buffer
	code := run([]string{"bench-strategies", "--cache", c, "--spec-dir", specs, "--strategy", "random_sample",
		"--seeds", "3", "--budgets", "5,10", "--json", "--no-score"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var doc struct {
		Method  string `json:"method"`
		Runs    int    `json:"runs"`
		Results []struct {
			Score *float64 `json:"score"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Runs != 6 || len(doc.Results) != 1 || doc.Results[0].Score != nil || !strings.Contains(doc.Method, "no score") {
		t.Fatalf("runs %d, results %d, score %v, method %q: want 6 runs (3 seeds × 2 budgets), no score", doc.Runs, len(doc.Results), doc.Results, doc.Method)
	}
	if want := "6 runs, 45 evaluations to replay (1 caches × 1 strategies × 3 seeds × 2 budgets)"; !strings.Contains(errb.String(), want) {
		t.Fatalf("stderr %q lacks %q", errb.String(), want)
	}
}
