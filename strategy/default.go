package strategy

import "fmt"

// BruteForceMax is the largest search space (valid configurations) that
// gtune tunes exhaustively when no strategy is named. Above it, the best
// measured strategy (DefaultSearch) reaches about 0.99 of the optimum in
// DefaultSearchBudget evaluations (BENCHMARKS.md, "Search at 25
// evaluations"), so brute force would cost over 2.5× as many evaluations
// for the last percent.
const BruteForceMax = 1000

// DefaultSearch is the strategy gtune uses when none is named and the
// space is larger than BruteForceMax: the best of the replayed comparison
// at 25, 100 and 400 evaluations (issue 35).
const DefaultSearch = "bayes_opt"

// DefaultSearchBudget is the evaluations DefaultSearch is given when the
// run sets no budget of its own (no --max-evals, time limit or spec
// Budget): 0.995 of the optimum on average over the replayed caches
// (BENCHMARKS.md, "bayes_opt turns local by measured progress").
const DefaultSearchBudget = 400

// DefaultTransfer is the strategy gtune uses when none is named, the
// space is larger than BruteForceMax and the results database holds the
// kernel's results on another GPU (MinPriorValid valid configurations or
// more): bayes_opt learning from them (transfer, prior "database"), with
// the same DefaultSearchBudget. On the replayed caches, with the other
// GPUs' results from runs of 100 evaluations, it closes 0.77 / 0.86 / 0.97
// of random search's gap at 25 / 100 / 400 evaluations where bayes_opt
// alone closes 0.40 / 0.66 / 0.94 (BENCHMARKS.md, "Transfer from the
// results database" and, with thread-block reshapes, "Side by side with
// Kernel Tuner 1.4 at 100 seeds").
const DefaultTransfer = "transfer"

// MinPriorValid is the valid configurations of the search space a GPU's
// results must hold to be a prior of transfer from the results database.
// Runs of 25 evaluations on the other GPUs were measured to be priors
// worth having (0.67 of random search's gap closed at 25 evaluations
// against bayes_opt's 0.40, BENCHMARKS.md); shorter ones were not
// measured, and are left out.
const MinPriorValid = 20

// Default picks the strategy of a run that names none. size is the
// search space's configurations; budget the run's own limit on
// evaluations (0: none); limited says whether the run has any other limit
// (a time limit, the spec's Budget duration); priors the GPUs of the
// results database whose results of this kernel can be transfer's priors
// (at least MinPriorValid valid configurations each). It returns the
// strategy, the evaluations to cap the run at (0: leave the run's own)
// and a sentence saying why, for the user.
func Default(size, budget int, limited bool, priors int) (name string, maxEvals int, why string) {
	switch {
	case size <= BruteForceMax:
		return "brute_force", 0, fmt.Sprintf("strategy brute_force: the search space has %d configurations, at most %d (over that, gtune searches with %s)", size, BruteForceMax, DefaultSearch)
	case budget >= size:
		return "brute_force", 0, fmt.Sprintf("strategy brute_force: the budget of %d evaluations covers the search space's %d configurations", budget, size)
	}
	name, maxEvals = DefaultSearch, DefaultSearchBudget
	from := ""
	if priors > 0 {
		name = DefaultTransfer
		from = fmt.Sprintf(", learning from this kernel's results on %d other GPU%s in the results database", priors, map[bool]string{true: "s"}[priors > 1])
	}
	if budget > 0 || limited {
		return name, 0, fmt.Sprintf("strategy %s%s: the search space has %d configurations, over %d (--strategy brute_force to try them all)", name, from, size, BruteForceMax)
	}
	return name, maxEvals, fmt.Sprintf("strategy %s with %d evaluations%s: the search space has %d configurations, over %d (--max-evals N for another budget, --strategy brute_force to try them all)", name, maxEvals, from, size, BruteForceMax)
}
