package report

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/gtune/gtune/store"
)

// syntheticRun is a run of n valid configurations over three tunable
// parameters, with time, energy, power and two rate metrics.
func syntheticRun(n int) HTMLRun {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	run := &store.Run{ID: 1, Kernel: "k", Objective: "time", Strategy: "brute_force", DeviceName: "Simulated GPU", Backend: "sim", StartedAt: start, Status: "done"}
	evals := make([]*store.Evaluation, n)
	for i := range evals {
		t := 1 + float64((i*7919)%1000)/100
		e := 0.5 + float64((i*104729)%1000)/300
		obj := t
		evals[i] = &store.Evaluation{Key: fmt.Sprint(i), Status: "valid", Objective: &obj,
			Params:       []store.Param{{Name: "block_size_x", Value: 32 << (i % 6)}, {Name: "tile", Value: 1 + i%4}, {Name: "unroll", Value: i % 2}},
			Observations: map[string]float64{"time": t, "energy": e, "power": e / t * 1000, "time_median": t},
			Metrics:      map[string]float64{"GFLOP/s": 1000 / t, "GFLOP/s/W": 1000 / e},
			FinishedAt:   start.Add(time.Duration(i) * time.Millisecond)}
	}
	return HTMLRun{Run: run, Evals: evals}
}

// The HTML report of a run of 10,000 configurations (BENCHMARKS.md,
// "The HTML report").
func BenchmarkWriteHTML10k(b *testing.B) {
	r := []HTMLRun{syntheticRun(10000)}
	for b.Loop() {
		if err := WriteHTML(io.Discard, r, nil, HTMLOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
