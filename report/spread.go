package report

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/gtune/gtune/store"
)

// sweepHull is section 3 of autotuning-gemm-energy-beast.md over a
// sweep's points (performance, efficiency): the convex hull's two arcs
// (Table II), the spread of each metric at the other's winner (section
// 3.3) and the configurations in the quadrants the two winners' lines
// cut (section 3.4).
type sweepHull struct {
	// Upper runs over the top of the convex hull from the fastest
	// configuration to the slowest (Table II's upper arc), Lower along
	// its bottom from after the slowest to before the fastest (its lower
	// arc): the two ends belong to the upper arc only.
	Upper, Lower []*store.Evaluation
	// Fastest has the highest performance (of those, the most
	// efficient), Frugal the highest efficiency (of those, the fastest).
	Fastest, Frugal *store.Evaluation
	// SlowerAtSameEfficiency is how much longer than the fastest a
	// configuration of the fastest's efficiency may run: the hull's
	// width along the horizontal line through the fastest, as
	// performance of the fastest ÷ the leftmost performance there − 1
	// (the paper's "up to 25 % longer runtimes").
	SlowerAtSameEfficiency float64
	// MoreEnergyAtSameSpeed is how much more energy than the most
	// efficient a configuration of its performance may take: the hull's
	// height along the vertical line through Frugal, as its efficiency ÷
	// the lowest efficiency there − 1 (the paper's "up to 1.2 times the
	// energy": 0.2).
	MoreEnergyAtSameSpeed float64
	// Right counts the configurations faster than Frugal (right of the
	// vertical line: the paper's 36, 4.6 %), Above those more efficient
	// than Fastest (above the horizontal line: its 12), UpperRight those
	// that are both; Of is how many there are.
	Right, Above, UpperRight, Of int
}

// analyseHull is sweepHull of the valid evaluations' metrics perf and
// eff (both larger-is-better; at least one evaluation).
func analyseHull(valid []*store.Evaluation, perf, eff string) sweepHull {
	x := func(e *store.Evaluation) float64 { return e.Metrics[perf] }
	y := func(e *store.Evaluation) float64 { return e.Metrics[eff] }
	lower := hullChain(sortedBy(valid, x, y, false), x, y)
	upper := upperArc(valid, perf, eff)
	h := sweepHull{Of: len(valid), Upper: upper, Fastest: upper[0], Frugal: valid[0]}
	if len(lower) > 2 {
		h.Lower = lower[1 : len(lower)-1] // its ends are the upper arc's
	}
	for _, e := range valid {
		if y(e) > y(h.Frugal) || y(e) == y(h.Frugal) && x(e) > x(h.Frugal) {
			h.Frugal = e
		}
	}
	for _, e := range valid {
		right, above := x(e) > x(h.Frugal), y(e) > y(h.Fastest)
		if right {
			h.Right++
		}
		if above {
			h.Above++
		}
		if right && above {
			h.UpperRight++
		}
	}
	// The hull as a closed polygon: the lower chain, then the upper
	// without the ends they share.
	poly := append([]*store.Evaluation(nil), lower...)
	if len(upper) > 2 {
		poly = append(poly, upper[1:len(upper)-1]...)
	}
	lo := crossings(poly, func(e *store.Evaluation) float64 { return y(e) - y(h.Fastest) }, x)
	if len(lo) > 0 && lo[0] > 0 {
		h.SlowerAtSameEfficiency = x(h.Fastest)/lo[0] - 1
	}
	lo = crossings(poly, func(e *store.Evaluation) float64 { return x(e) - x(h.Frugal) }, y)
	if len(lo) > 0 && lo[0] > 0 {
		h.MoreEnergyAtSameSpeed = y(h.Frugal)/lo[0] - 1
	}
	return h
}

// upperArc is the top of the convex hull of the points (performance,
// efficiency), from the fastest configuration (of equally fast ones, the
// most efficient) to the slowest: Table II's upper arc. Of repeated
// points the first given is kept.
func upperArc(valid []*store.Evaluation, perf, eff string) []*store.Evaluation {
	x := func(e *store.Evaluation) float64 { return e.Metrics[perf] }
	y := func(e *store.Evaluation) float64 { return e.Metrics[eff] }
	return hullChain(sortedBy(valid, x, y, true), x, y)
}

// sortedBy is a copy of es sorted by x, then y, ascending or descending,
// ties in their given order.
func sortedBy(es []*store.Evaluation, x, y func(*store.Evaluation) float64, desc bool) []*store.Evaluation {
	pts := append([]*store.Evaluation(nil), es...)
	sort.SliceStable(pts, func(a, b int) bool {
		p, q := pts[a], pts[b]
		if desc {
			p, q = q, p
		}
		if x(p) != x(q) {
			return x(p) < x(q)
		}
		return y(p) < y(q)
	})
	return pts
}

// hullChain is Andrew's monotone chain over pts in their order (sorted
// by x): the lower hull for ascending x, the upper for descending;
// collinear points and repeats are dropped.
func hullChain(pts []*store.Evaluation, x, y func(*store.Evaluation) float64) []*store.Evaluation {
	cross := func(o, a, b *store.Evaluation) float64 {
		return (x(a)-x(o))*(y(b)-y(o)) - (y(a)-y(o))*(x(b)-x(o))
	}
	var h []*store.Evaluation
	for _, p := range pts {
		if n := len(h); n > 0 && x(h[n-1]) == x(p) && y(h[n-1]) == y(p) {
			continue
		}
		for len(h) >= 2 && cross(h[len(h)-2], h[len(h)-1], p) <= 0 {
			h = h[:len(h)-1]
		}
		h = append(h, p)
	}
	return h
}

// crossings are where the closed polygon poly meets the line side(e) =
// 0, each given by at(), ascending: an edge whose ends lie on either side
// (or on the line) contributes its point there.
func crossings(poly []*store.Evaluation, side, at func(*store.Evaluation) float64) []float64 {
	var out []float64
	for i := range poly {
		p, q := poly[i], poly[(i+1)%len(poly)]
		sp, sq := side(p), side(q)
		switch {
		case sp == 0:
			out = append(out, at(p))
		case sp*sq < 0:
			out = append(out, at(p)+(at(q)-at(p))*sp/(sp-sq))
		}
	}
	sort.Float64s(out)
	if len(out) == 0 {
		return nil
	}
	return []float64{out[0], out[len(out)-1]}
}

// writeSweepHull prints h for a terminal: the whole hull's arcs (Table
// II), the spread (section 3.3) and the quadrants (section 3.4).
func writeSweepHull(w io.Writer, h sweepHull, perf, eff string) {
	fmt.Fprintf(w, "whole hull, as Table II of autotuning-gemm-energy-beast.md (the upper arc from the fastest to the slowest, then the lower arc back):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  arc\tconfiguration\t%s\t%s\t\n", perf, eff)
	for _, arc := range []struct {
		name string
		es   []*store.Evaluation
	}{{"upper", h.Upper}, {"lower", h.Lower}} {
		for _, e := range arc.es {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", arc.name, e.Key, Format(e.Metrics[perf]), Format(e.Metrics[eff]))
		}
	}
	tw.Flush()
	fmt.Fprintln(w, h.spreadLine(perf, eff))
	fmt.Fprintln(w, h.quadrantLine())
}

// spreadLine says section 3.3's spread of h in a sentence.
func (h sweepHull) spreadLine(perf, eff string) string {
	return fmt.Sprintf("spread (section 3.3): at the fastest's %s (%s), configurations run up to %.1f %% longer; at the most efficient's %s (%s: %s), they take up to %.2f× its energy",
		eff, Format(h.Fastest.Metrics[eff]), 100*h.SlowerAtSameEfficiency, perf, h.Frugal.Key, Format(h.Frugal.Metrics[perf]), 1+h.MoreEnergyAtSameSpeed)
}

// quadrantLine says section 3.4's quadrant counts of h in a sentence.
func (h sweepHull) quadrantLine() string {
	share := func(n int) float64 { return 100 * float64(n) / float64(max(h.Of, 1)) }
	return fmt.Sprintf("quadrants (section 3.4): %d of %d configurations (%.1f %%) faster than the most efficient, %d (%.1f %%) more efficient than the fastest, %d (%.1f %%) both",
		h.Right, h.Of, share(h.Right), h.Above, share(h.Above), h.UpperRight, share(h.UpperRight))
}
