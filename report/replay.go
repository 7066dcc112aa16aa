package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/space"
)

// ReplayRepeat is one repeat of a replay (one seed).
type ReplayRepeat struct {
	Seed      uint64         `json:"seed"`
	RunID     int64          `json:"run"`
	Evaluated int            `json:"evaluated"`
	Invalid   int            `json:"invalid"`
	ChargedS  float64        `json:"charged_s"` // recorded time charged, s
	BestKey   string         `json:"best_key,omitempty"`
	Best      *float64       `json:"best,omitempty"` // objective value of the best configuration found
	Params    map[string]any `json:"params,omitempty"`
}

func replayMeans(reps []ReplayRepeat) (best float64, nBest int, evals, charged float64) {
	for _, r := range reps {
		if r.Best != nil {
			best += *r.Best
			nBest++
		}
		evals += float64(r.Evaluated)
		charged += r.ChargedS
	}
	if nBest > 0 {
		best /= float64(nBest)
	} else {
		best = math.NaN()
	}
	n := float64(len(reps))
	return best, nBest, evals / n, charged / n
}

// ReplayTable prints the repeats of a replay of a recorded cache c:
// each repeat's evaluations, charged time and best, their means, and the
// recorded optimum (optKey "" when the cache does not record the
// objective).
func ReplayTable(w io.Writer, c *cache.Cache, specLabel string, sp *space.Space, r *cache.Replay, strat, objective, optKey string, optVal float64, reps []ReplayRepeat, dbPath string) {
	dev := c.DeviceName
	if dev == "" {
		dev = "unknown device"
	}
	fmt.Fprintf(w, "cache: %s (%s, %s, %d entries)\n", c.Path, dev, c.Format, len(c.Entries))
	fmt.Fprintf(w, "space: %s, %d valid configurations, %d recorded; strategy %s; objective %s\n", specLabel, sp.Len(), r.Recorded(), strat, objective)
	if optKey != "" {
		fmt.Fprintf(w, "recorded optimum: %s = %s\n", optKey, Format(optVal))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "repeat\tseed\tevaluated\tinvalid\tcharged (s)\tbest\tbest configuration\t")
	for i, rep := range reps {
		best, key := "-", "-"
		if rep.Best != nil {
			best, key = Format(*rep.Best), rep.BestKey
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.1f\t%s\t%s\t\n", i+1, rep.Seed, rep.Evaluated, rep.Invalid, rep.ChargedS, best, key)
	}
	mb, nb, me, mc := replayMeans(reps)
	mbs := "-"
	if nb > 0 {
		mbs = Format(mb)
	}
	fmt.Fprintf(tw, "mean\t\t%.1f\t\t%.1f\t%s\t\t\n", me, mc, mbs)
	tw.Flush()
	if dbPath != "" {
		fmt.Fprintf(w, "results: %s\n", dbPath)
	}
}

// ReplayJSON prints the replay as one JSON document, in the shape of
// TuneJSON where they share fields: device, objective, best{key, params,
// objectives}, evaluated, invalid, db; plus the repeats, their means and
// the recorded optimum.
func ReplayJSON(w io.Writer, c *cache.Cache, specLabel string, sp *space.Space, r *cache.Replay, strat, objective, direction, optKey string, optVal float64, reps []ReplayRepeat, dbPath string) error {
	mb, nb, me, mc := replayMeans(reps)
	doc := map[string]any{
		"cache":     c.Path,
		"format":    c.Format,
		"device":    LocalRef(r.Device().Local),
		"spec":      specLabel,
		"space":     sp.Len(),
		"recorded":  r.Recorded(),
		"strategy":  strat,
		"objective": map[string]any{"name": objective, "direction": direction},
		"repeats":   reps,
		"mean":      map[string]any{"evaluated": me, "charged_s": mc, "repeats_with_valid": nb},
		"db":        dbPath,
	}
	if nb > 0 {
		doc["mean"].(map[string]any)["best"] = mb
	}
	if optKey != "" {
		doc["optimum"] = map[string]any{"key": optKey, "value": optVal}
	}
	// The best configuration over the repeats, as tune reports it.
	var best *ReplayRepeat
	evaluated, invalid := 0, 0
	for i := range reps {
		evaluated += reps[i].Evaluated
		invalid += reps[i].Invalid
		b := reps[i].Best
		if b == nil {
			continue
		}
		better := best == nil || *b < *best.Best
		if direction == "maximize" {
			better = best == nil || *b > *best.Best
		}
		if better {
			best = &reps[i]
		}
	}
	doc["evaluated"], doc["invalid"] = evaluated, invalid
	if best != nil {
		doc["best"] = map[string]any{"key": best.BestKey, "params": best.Params, "objectives": map[string]float64{objective: *best.Best}, "repeat_seed": best.Seed}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
