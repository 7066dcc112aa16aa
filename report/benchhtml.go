package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"gonum.org/v1/plot/vg"
)

// BenchCurve is one strategy's result on one problem (or "mean", over
// all) in a gtune bench-strategies --json document: the fraction of the
// optimum it reached, and its success rate, at each budget
// (evaluations), averaged over runs seeded runs, and its score.
type BenchCurve struct {
	Strategy          string    `json:"strategy"`
	Problem           string    `json:"problem"`
	Runs              int       `json:"runs"`
	Budgets           []float64 `json:"budgets"`
	FractionOfOptimum []float64 `json:"fraction_of_optimum"`
	SuccessRate       []float64 `json:"success_rate"`
	Score             float64   `json:"score"`
}

// BenchDoc is the part of a bench-strategies --json document the report
// reads: each strategy's curve per problem and over all of them.
type BenchDoc struct {
	Name    string       `json:"-"` // where it was read from
	Results []BenchCurve `json:"results"`
	Mean    []BenchCurve `json:"mean"`
}

// ReadBenchDoc reads a gtune bench-strategies --json document. Errors:
// not JSON, or no results in it (another command's document).
func ReadBenchDoc(r io.Reader, name string) (BenchDoc, error) {
	var d BenchDoc
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return d, fmt.Errorf("%s: not a bench-strategies --json document: %w", name, err)
	}
	if len(d.Results) == 0 {
		return d, fmt.Errorf("%s: no results (want the output of gtune bench-strategies --json)", name)
	}
	for _, c := range append(d.Results, d.Mean...) {
		if len(c.Budgets) != len(c.FractionOfOptimum) {
			return d, fmt.Errorf("%s: strategy %s on %s has %d budgets and %d fractions of the optimum", name, c.Strategy, c.Problem, len(c.Budgets), len(c.FractionOfOptimum))
		}
	}
	d.Name = name
	return d, nil
}

// benchSection charts each problem's fraction-of-optimum curves, one per
// strategy, the mean over the problems first, and tables the scores.
func benchSection(docs []BenchDoc) (htmlSection, error) {
	s := htmlSection{ID: "strategies", Title: "Strategies compared (bench-strategies)",
		Intro: "The fraction of the optimum each strategy reached against its budget (evaluations), averaged over its seeded runs, per problem and over all problems; the score is the benchmark's summary over its score window."}
	for _, d := range docs {
		groups := map[string][]BenchCurve{}
		var problems []string
		for _, c := range append(append([]BenchCurve(nil), d.Mean...), d.Results...) {
			if groups[c.Problem] == nil {
				problems = append(problems, c.Problem)
			}
			groups[c.Problem] = append(groups[c.Problem], c)
		}
		for _, p := range problems {
			c := chart{Title: d.Name + ": " + p, XLabel: "budget (evaluations)", YLabel: "fraction of the optimum", Width: 5 * vg.Inch, Height: 3.2 * vg.Inch}
			for i, cv := range groups[p] {
				var pts []point
				for j, b := range cv.Budgets {
					pts = append(pts, point{X: b, Y: cv.FractionOfOptimum[j], Label: fmt.Sprintf("%s, %g evaluations: %.3f of the optimum", cv.Strategy, b, cv.FractionOfOptimum[j])})
				}
				col := palette[i%len(palette)]
				c.Series = append(c.Series, series{Points: pts, Line: true, Color: col}, series{Name: cv.Strategy, Points: pts, Marked: true, Color: col})
			}
			if err := s.add(c); err != nil {
				return s, err
			}
		}
		var budgets []string
		if len(d.Results) > 0 {
			for _, b := range d.Results[0].Budgets {
				budgets = append(budgets, fmt.Sprintf("fraction at %g", b))
			}
		}
		t := htmlTable{Caption: d.Name + ": scores", Head: append([]string{"problem", "strategy", "runs", "score"}, budgets...)}
		rows := append(append([]BenchCurve(nil), d.Mean...), d.Results...)
		sort.SliceStable(rows, func(i, j int) bool {
			if rows[i].Problem != rows[j].Problem {
				return rows[i].Problem == "mean" || rows[j].Problem != "mean" && strings.Compare(rows[i].Problem, rows[j].Problem) < 0
			}
			return rows[i].Score > rows[j].Score
		})
		for _, c := range rows {
			row := []htmlCell{text(c.Problem), text(c.Strategy), num(float64(c.Runs)), num(c.Score)}
			for _, f := range c.FractionOfOptimum {
				row = append(row, num(f))
			}
			t.Rows = append(t.Rows, row)
		}
		s.Tables = append(s.Tables, t)
	}
	return s, nil
}
