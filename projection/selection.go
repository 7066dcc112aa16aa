package projection

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/spec"
)

// Measured is a kernel's measured time per launch on one GPU, ms, by
// configuration key: what a projection is checked against.
type Measured struct {
	Device *device.Description
	Times  map[string]float64
	From   string // where the times come from, for messages
}

// LoadMeasured reads one --against item: a Kernel Tuner cache or T4
// results file (a name ending .json or .json.gz; its GPU from its
// device_name), else a tuning run as --from takes it (RUN of the database
// at dbPath, or FILE:RUN; LoadRun). Errors are bad input: a file that
// cannot be read, a GPU the device database does not know, no valid
// configuration.
func LoadMeasured(item, dbPath string, s *spec.Spec) (Measured, error) {
	if strings.HasSuffix(item, ".json") || strings.HasSuffix(item, ".json.gz") {
		c, err := cache.Load(item)
		if err != nil {
			return Measured{}, badinput.New("--against %s: %v", item, err)
		}
		d, err := device.LookupName(c.DeviceName)
		if err != nil {
			return Measured{}, badinput.New("--against %s: its GPU %q: %v", item, c.DeviceName, err)
		}
		m := Measured{Device: d, Times: map[string]float64{}, From: item}
		for k, e := range c.Entries {
			if e.Valid() && e.Time > 0 {
				m.Times[k] = e.Time
			}
		}
		if len(m.Times) == 0 {
			return Measured{}, badinput.New("--against %s: no valid configuration with a time", item)
		}
		return m, nil
	}
	r, err := LoadRun(item, dbPath, s)
	if err != nil {
		return Measured{}, err
	}
	return Measured{Device: r.Device, Times: r.Times, From: item}, nil
}

// Selection is seed 003's device selection for one choice
// (performance-projection-heterogeneous-gpus.md section V, "Optimal
// Device Selection"): the GPU the projection recommends (Chosen), the
// one measured fastest (Best), and the device selection penalty
// |T(Chosen) − T(Best)| / T(Best) × 100, T the measured times (%).
type Selection struct {
	Key        string  `json:"key,omitempty"`
	Chosen     string  `json:"chosen"`
	Best       string  `json:"best"`
	PenaltyPct float64 `json:"penalty_pct"`
}

// SelectionReport is the projections of a kernel checked against its
// times measured on the same GPUs.
type SelectionReport struct {
	// GPUs are the GPUs both projected and measured, in --devices order.
	GPUs []string `json:"gpus"`
	// Configurations holds the configurations measured on every one of
	// GPUs, each one's selection; Right counts those where the chosen GPU
	// is the best.
	Configurations []Selection `json:"configurations"`
	Right          int         `json:"right"`
	// MedianPenaltyPct and P90PenaltyPct summarise the configurations'
	// penalties; MedianRatioErrorPct the error of each projected time
	// ratio of two GPUs against the measured one, |p/m − 1|, over every
	// pair of GPUs and configuration.
	MedianPenaltyPct    float64 `json:"median_penalty_pct"`
	P90PenaltyPct       float64 `json:"p90_penalty_pct"`
	MedianRatioErrorPct float64 `json:"median_ratio_error_pct"`
	// Own is each GPU's projected-best configuration among those measured
	// there, and how it measured; Kernel is the selection of a GPU where
	// each runs its own best configuration: chosen by the projected times
	// of the projected-best ones, best by the measured times of the
	// measured-best ones, the penalty against the latter.
	Own    []OwnBest `json:"own_best"`
	Kernel Selection `json:"kernel"`
}

// OwnBest is one GPU's projected-best configuration, measured: its rank
// among the configurations measured there (1: the best) and how much
// slower it measured than the best, %.
type OwnBest struct {
	GPU       string  `json:"gpu"`
	Key       string  `json:"key"`
	Rank      int     `json:"rank"`
	Of        int     `json:"of"`
	SlowerPct float64 `json:"slower_pct"`
}

// Select checks the projections out (each configuration's, fastest
// first) against measured: per configuration measured on two or more of
// the projected GPUs, and for the kernel with each GPU at its own best.
// ok is false where fewer than two GPUs were both projected and measured
// or no configuration was measured on all of them.
func Select(out []Configuration, measured []Measured) (SelectionReport, bool) {
	var r SelectionReport
	projected := map[string]map[string]float64{} // key → GPU → ms
	gpus := map[string]bool{}
	for _, pc := range out {
		projected[pc.Key] = map[string]float64{}
		for _, p := range pc.Projections {
			projected[pc.Key][p.Device] = p.TimeMs
			gpus[p.Device] = true
		}
	}
	meas := map[string]map[string]float64{} // GPU → key → ms
	for _, m := range measured {
		if gpus[m.Device.ID] && meas[m.Device.ID] == nil {
			meas[m.Device.ID] = m.Times
			r.GPUs = append(r.GPUs, m.Device.ID)
		}
	}
	if len(r.GPUs) < 2 {
		return r, false
	}
	var penalties, ratioErrs []float64
	for _, pc := range out {
		pt, mt, ok := timesOn(r.GPUs, projected[pc.Key], meas, pc.Key)
		if !ok {
			continue
		}
		sel := choose(r.GPUs, pt, mt)
		sel.Key = pc.Key
		r.Configurations = append(r.Configurations, sel)
		penalties = append(penalties, sel.PenaltyPct)
		if sel.Chosen == sel.Best {
			r.Right++
		}
		for a := range r.GPUs {
			for b := a + 1; b < len(r.GPUs); b++ {
				ratioErrs = append(ratioErrs, 100*math.Abs((pt[a]/pt[b])/(mt[a]/mt[b])-1))
			}
		}
	}
	if len(r.Configurations) == 0 {
		return r, false
	}
	r.MedianPenaltyPct, r.P90PenaltyPct = quantile(penalties, 0.5), quantile(penalties, 0.9)
	r.MedianRatioErrorPct = quantile(ratioErrs, 0.5)
	r.Own, r.Kernel = ownBest(r.GPUs, out, projected, meas)
	return r, true
}

// timesOn is key's projected and measured times on each of gpus; ok is
// false where one of them lacks either.
func timesOn(gpus []string, proj map[string]float64, meas map[string]map[string]float64, key string) (pt, mt []float64, ok bool) {
	for _, g := range gpus {
		p, okP := proj[g]
		m, okM := meas[g][key]
		if !okP || !okM || p <= 0 || m <= 0 {
			return nil, nil, false
		}
		pt, mt = append(pt, p), append(mt, m)
	}
	return pt, mt, true
}

// choose is the selection among gpus with projected times pt and
// measured times mt (same order): the least of each, ties to the earlier.
func choose(gpus []string, pt, mt []float64) Selection {
	c, b := 0, 0
	for i := range gpus {
		if pt[i] < pt[c] {
			c = i
		}
		if mt[i] < mt[b] {
			b = i
		}
	}
	return Selection{Chosen: gpus[c], Best: gpus[b], PenaltyPct: 100 * math.Abs(mt[c]-mt[b]) / mt[b]}
}

// ownBest is each GPU's projected-best configuration among those it
// measured, with its measured rank, and the kernel's selection with
// every GPU at its own best (Select).
func ownBest(gpus []string, out []Configuration, projected map[string]map[string]float64, meas map[string]map[string]float64) ([]OwnBest, Selection) {
	var own []OwnBest
	var pt, mt, chosenMeasured []float64
	for _, g := range gpus {
		bestKey, bestP := "", math.Inf(1)
		for _, pc := range out {
			if p, ok := projected[pc.Key][g]; ok && p > 0 && meas[g][pc.Key] > 0 && p < bestP {
				bestKey, bestP = pc.Key, p
			}
		}
		times := make([]float64, 0, len(meas[g]))
		for _, t := range meas[g] {
			if t > 0 {
				times = append(times, t)
			}
		}
		slices.Sort(times)
		m := meas[g][bestKey]
		rank := sort.SearchFloat64s(times, m) + 1
		own = append(own, OwnBest{GPU: g, Key: bestKey, Rank: rank, Of: len(times), SlowerPct: 100 * (m/times[0] - 1)})
		pt, mt, chosenMeasured = append(pt, bestP), append(mt, times[0]), append(chosenMeasured, m)
	}
	sel := choose(gpus, pt, mt)
	c := slices.Index(gpus, sel.Chosen)
	b := slices.Index(gpus, sel.Best)
	sel.PenaltyPct = 100 * (chosenMeasured[c] - mt[b]) / mt[b]
	return own, sel
}

// quantile is the q-quantile of xs by the nearest rank (xs is sorted).
func quantile(xs []float64, q float64) float64 {
	slices.Sort(xs)
	return xs[int(math.Ceil(q*float64(len(xs))))-1]
}

// WriteSelection prints r: the share of configurations whose chosen GPU
// is the best, the penalties, the ratio error, each GPU's projected-best
// configuration as measured, and the kernel's selection; nothing where r
// is nil.
func WriteSelection(w io.Writer, kernel string, r *SelectionReport) {
	if r == nil {
		return
	}
	n := len(r.Configurations)
	fmt.Fprintf(w, "%s: device selection against measured times (seed 003, section V), %s, %d configurations measured on each\n", kernel, strings.Join(r.GPUs, ", "), n)
	fmt.Fprintf(w, "  right GPU: %d of %d (%.1f %%); penalty median %.1f %%, 90th percentile %.1f %%; time ratio error median %.1f %%\n",
		r.Right, n, 100*float64(r.Right)/float64(n), r.MedianPenaltyPct, r.P90PenaltyPct, r.MedianRatioErrorPct)
	for _, o := range r.Own {
		fmt.Fprintf(w, "  %s: projected best %s, measured rank %d of %d (%.1f %% slower than its best)\n", o.GPU, o.Key, o.Rank, o.Of, o.SlowerPct)
	}
	fmt.Fprintf(w, "  each GPU at its projected best: chosen %s, best %s, penalty %.1f %%\n", r.Kernel.Chosen, r.Kernel.Best, r.Kernel.PenaltyPct)
}

// Against loads each of items (LoadMeasured) and checks the projections
// out against them (Select); nil where there are no items. Errors are
// bad input: an item LoadMeasured refuses, fewer than two of the
// projected GPUs measured, no configuration measured on every one of
// them.
func Against(items []string, dbPath string, s *spec.Spec, out []Configuration) (*SelectionReport, error) {
	if len(items) == 0 {
		return nil, nil
	}
	var ms []Measured
	for _, it := range items {
		m, err := LoadMeasured(it, dbPath, s)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	r, ok := Select(out, ms)
	if !ok {
		return nil, badinput.New("--against: device selection needs two or more of the projected GPUs (--devices) measured on a configuration in common; measured: %s", describeMeasured(ms))
	}
	return &r, nil
}

func describeMeasured(ms []Measured) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, fmt.Sprintf("%s on %s (%d configurations)", m.From, m.Device.ID, len(m.Times)))
	}
	return strings.Join(parts, ", ")
}
