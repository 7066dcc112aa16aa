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
// Budget): 0.988 of the optimum on average over the replayed caches.
const DefaultSearchBudget = 400

// Default picks the strategy of a run that names none. size is the
// search space's configurations; budget the run's own limit on
// evaluations (0: none); limited says whether the run has any other limit
// (a time limit, the spec's Budget duration). It returns the strategy,
// the evaluations to cap the run at (0: leave the run's own) and a
// sentence saying why, for the user.
func Default(size, budget int, limited bool) (name string, maxEvals int, why string) {
	switch {
	case size <= BruteForceMax:
		return "brute_force", 0, fmt.Sprintf("strategy brute_force: the search space has %d configurations, at most %d (over that, gtune searches with %s)", size, BruteForceMax, DefaultSearch)
	case budget >= size:
		return "brute_force", 0, fmt.Sprintf("strategy brute_force: the budget of %d evaluations covers the search space's %d configurations", budget, size)
	case budget > 0 || limited:
		return DefaultSearch, 0, fmt.Sprintf("strategy %s: the search space has %d configurations, over %d (--strategy brute_force to try them all)", DefaultSearch, size, BruteForceMax)
	}
	return DefaultSearch, DefaultSearchBudget, fmt.Sprintf("strategy %s with %d evaluations: the search space has %d configurations, over %d (--max-evals N for another budget, --strategy brute_force to try them all)", DefaultSearch, DefaultSearchBudget, size, BruteForceMax)
}
