package report

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat"
)

// Correlation is how one quantity goes with a target over a run's valid
// configurations: Pearson's linear coefficient and Spearman's rank
// coefficient (Pearson's of the ranks, ties given their mean rank), as
// the GEMM energy paper reads its profiler metrics against GFLOP/s and
// GFLOP/s/W (autotuning-gemm-energy-beast.md, Figures 6–8).
type Correlation struct {
	Quantity string  `json:"quantity"`
	N        int     `json:"n"` // configurations with both values
	Pearson  float64 `json:"pearson"`
	Spearman float64 `json:"spearman"`
}

// Correlate returns the correlation of every quantity in xs with target,
// over the indexes where both are numbers, strongest |Spearman| first
// (ties by name). A quantity with fewer than three such points, or one
// that does not vary there, has no coefficient and is left out; so is
// the target itself. xs maps a quantity's name to one value per
// configuration, as target has (NaN: not measured).
func Correlate(target string, ys []float64, xs map[string][]float64) []Correlation {
	var out []Correlation
	// The target's ranks over all its values serve every quantity
	// measured wherever the target is (the common case).
	var yAll []float64
	for _, y := range ys {
		if !bad(y) {
			yAll = append(yAll, y)
		}
	}
	var yRanks []float64
	for name, x := range xs {
		if name == target || len(x) != len(ys) {
			continue
		}
		var a, b []float64
		for i := range x {
			if !bad(x[i]) && !bad(ys[i]) {
				a, b = append(a, x[i]), append(b, ys[i])
			}
		}
		if len(a) < 3 || constant(a) || constant(b) {
			continue
		}
		rb := yRanks
		if len(b) != len(yAll) {
			rb = ranks(b)
		} else if rb == nil {
			yRanks = ranks(b)
			rb = yRanks
		}
		out = append(out, Correlation{Quantity: name, N: len(a),
			Pearson: stat.Correlation(a, b, nil), Spearman: stat.Correlation(ranks(a), rb, nil)})
	}
	sort.Slice(out, func(i, j int) bool {
		ai, aj := math.Abs(out[i].Spearman), math.Abs(out[j].Spearman)
		if ai != aj {
			return ai > aj
		}
		return out[i].Quantity < out[j].Quantity
	})
	return out
}

func constant(v []float64) bool {
	for _, x := range v[1:] {
		if x != v[0] {
			return false
		}
	}
	return true
}

// ranks are the 1-based ranks of v, tied values sharing their mean rank.
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	// Unstable is enough: tied values get the same rank whatever their order.
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(v[a], v[b]) })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = mean
		}
		i = j + 1
	}
	return r
}
