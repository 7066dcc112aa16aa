package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gtune/gtune/benchmark"
	"github.com/gtune/gtune/measure"
)

// BenchTable prints bench-strategies' results: per cache, strategy and
// budget the mean fraction of optimum and success rate, the methodology
// score, the means over caches, and how runs were seeded and budgeted.
func BenchTable(w io.Writer, problems []*benchmark.Problem, rs, means []benchmark.Result, seeds, runs, workers int, elapsed time.Duration, priors map[string][]string, noScore bool) {
	fmt.Fprintf(w, "%d caches, %d seeds, %d runs on %d workers, %.1f s\n", len(problems), seeds, runs, workers, elapsed.Seconds())
	fmt.Fprintf(w, "method: %s\n", benchSeedPolicy(noScore))
	fmt.Fprintf(w, "lacking: %s\n", benchMissingPolicy)
	fmt.Fprintf(w, "gap: %s\n", benchGapPolicy)
	for _, p := range problems {
		s, e := benchmark.Window(p.Sorted)
		fmt.Fprintf(w, "  %s: %d configurations, %d lacking, %d valid, optimum %.4g ms, score window [%d, %d)\n", p.Name, p.SpecLen, p.Missing, len(p.Sorted), p.Optimum(), s, e)
		if p.Missing > 0 {
			fmt.Fprintf(w, "    cache %s lacks %d of %d configurations of the spec's space: %d searched\n", p.Name, p.Missing, p.SpecLen, p.Space.Len())
		}
		if ps, ok := priors[p.Name]; ok {
			var names []string
			for _, c := range ps {
				names = append(names, benchmark.ProblemName(c))
			}
			fmt.Fprintf(w, "    transfer priors (other GPUs): %s\n", strings.Join(names, ", "))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "cache\tstrategy\t"
	for _, b := range rs[0].Budgets {
		head += fmt.Sprintf("frac@%d\t", b)
	}
	for _, b := range rs[0].Budgets {
		head += fmt.Sprintf("succ@%d\t", b)
	}
	for _, b := range rs[0].Budgets {
		head += fmt.Sprintf("gap@%d\t", b)
	}
	head += "score\tevals@95\treached\t"
	fmt.Fprintln(tw, head)
	row := func(r benchmark.Result) {
		line := r.Problem + "\t" + r.Strategy + "\t"
		for _, f := range r.Fraction {
			line += fmt.Sprintf("%.3f\t", f)
		}
		for _, f := range r.Success {
			line += fmt.Sprintf("%.2f\t", f)
		}
		for _, g := range r.Gap {
			line += fmtScore(g) + "\t"
		}
		line += fmtScore(r.Score) + "\t" + fmtReach(r.Reach, r.ReachWithin) + "\t" + fmt.Sprintf("%.2f", r.Reached) + "\t"
		fmt.Fprintln(tw, line)
	}
	for _, r := range rs {
		row(r)
	}
	for _, r := range means {
		row(r)
	}
	tw.Flush()
}

// BenchJSON prints bench-strategies' results as one JSON document (the
// caches, every result, the means, the seeding and budget policies).
func BenchJSON(w io.Writer, problems []*benchmark.Problem, rs, means []benchmark.Result, seeds, runs, workers int, elapsed time.Duration, priors map[string][]string, noScore bool) error {
	var ps []map[string]any
	for _, p := range problems {
		s, e := benchmark.Window(p.Sorted)
		m := map[string]any{"name": p.Name, "configurations": p.SpecLen, "missing": p.Missing, "searched": p.Space.Len(),
			"valid": len(p.Sorted), "optimum_ms": p.Optimum(), "median_ms": measure.Median(p.Sorted), "score_window": []int{s, e}}
		if pr, ok := priors[p.Name]; ok {
			m["transfer_priors"] = pr
		}
		ps = append(ps, m)
	}
	conv := func(rs []benchmark.Result) []map[string]any {
		var out []map[string]any
		for _, r := range rs {
			var score any
			if !math.IsNaN(r.Score) {
				score = r.Score
			}
			gap := make([]any, len(r.Gap))
			for k, g := range r.Gap {
				if !math.IsNaN(g) {
					gap[k] = g
				}
			}
			out = append(out, map[string]any{"problem": r.Problem, "strategy": r.Strategy, "runs": r.Runs,
				"budgets": r.Budgets, "fraction_of_optimum": r.Fraction, "success_rate": r.Success, "score": score,
				"random_fraction": r.Random, "gap_closed": gap,
				"evals_to_95": jsonReach(r.Reach), "reached_95": r.Reached, "reach_within": r.ReachWithin})
		}
		return out
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"seeds": seeds, "runs": runs, "workers": workers, "elapsed_s": elapsed.Seconds(),
		"method": benchSeedPolicy(noScore), "missing_policy": benchMissingPolicy, "gap_policy": benchGapPolicy,
		"problems": ps, "results": conv(rs), "mean": conv(means)})
}

// fmtReach prints a median count of evaluations to 95 % of the optimum:
// ">B" where more than half of the runs did not reach it within the
// longest run's B evaluations, "-" where there is none (the mean row).
func fmtReach(v float64, within int) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1):
		return fmt.Sprintf(">%d", within)
	}
	return fmt.Sprintf("%.1f", v)
}

// jsonReach is a count of evaluations for JSON: null where the median
// is censored or undefined (JSON has no infinity).
func jsonReach(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

func fmtScore(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.3f", v)
}

// benchGapPolicy says what gap@B is (benchmark.GapClosed).
const benchGapPolicy = "gap@B is the share of exact random search's gap to the optimum closed at B evaluations, (frac − random)/(1 − random), random being the expected fraction of B configurations drawn without replacement (benchmark.Problem.RandomFraction); 1 the optimum, 0 as random, below 0 worse; the mean row averages the caches where random search leaves a gap"

// benchMissingPolicy says how configurations a cache lacks are treated
// (benchmark.Problem).
const benchMissingPolicy = "configurations of the spec's space that a cache lacks are left out of the space searched on that cache before the runs: never proposed, never charged an evaluation"

// benchSeedPolicy says how the runs are seeded and budgeted
// (benchmark.Evaluate, benchmark.Seed).
func benchSeedPolicy(noScore bool) string {
	score := ", plus one run told the score window's end for the score"
	if noScore {
		score = " (no score: --no-score)"
	}
	return "each budget is a separate run told that budget" + score + "; run k of strategy S on cache C has seed benchmark.Seed(C, S, k) at every budget"
}
