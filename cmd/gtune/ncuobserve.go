package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/profile"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/tuner"
)

// defaultNcuMetrics are what --observe ncu collects unless told: DRAM,
// L2 and L1/texture throughput, achieved occupancy, IPC and the main
// warp stall reasons, the counters the GEMM energy paper correlates
// with GFLOP/s and GFLOP/s/W (autotuning-gemm-energy-beast.md,
// Figures 6–9), by the names ncu gives them.
var defaultNcuMetrics = []string{
	"dram__throughput.avg.pct_of_peak_sustained_elapsed",
	"lts__throughput.avg.pct_of_peak_sustained_elapsed",
	"l1tex__throughput.avg.pct_of_peak_sustained_active",
	"sm__warps_active.avg.pct_of_peak_sustained_active",
	"sm__inst_executed.avg.per_cycle_active",
	"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
	"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
	"smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
	"smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
}

// parseObserve reads --observe: "" (none), "ncu" (defaultNcuMetrics) or
// "ncu:METRIC,..." (those). Errors: another observer name, an empty
// metric name.
func parseObserve(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	name, list, hasList := strings.Cut(v, ":")
	if name != "ncu" {
		return nil, badInput("--observe %q: the observer of a separate profiling pass is ncu (ncu or ncu:METRIC,...); measurements made with the timing are Gtune.Measurement.Observers", v)
	}
	if !hasList {
		return defaultNcuMetrics, nil
	}
	ms := strings.Split(list, ",")
	for _, m := range ms {
		if strings.TrimSpace(m) == "" || strings.ContainsAny(m, " \t") {
			return nil, badInput("--observe %q: a metric name is empty or has a space (ncu's names, such as dram__throughput.avg.pct_of_peak_sustained_elapsed)", v)
		}
	}
	return ms, nil
}

// ncuObserve profiles the valid configurations run runID stored in db
// with Nsight Compute, one after the other, in a separate pass after the
// timed launches: for each, a CUDA worker started under ncu (read-only:
// --clock-control none; its report to a log file) measures the
// configuration once more (one timed run after the warm-up, into a
// scratch database), and the last profiled launch of the spec's kernel
// gives the metrics, stored as observations of the evaluation (method
// "ncu", ncu's base units). A configuration ncu cannot profile is
// reported and skipped. It prints the pass's cost per configuration.
func ncuObserve(ctx context.Context, stderr io.Writer, s *spec.Spec, sp *space.Space, db *store.DB, runID int64, metrics []string, f tuneFlags) error {
	evals, err := db.Evaluations(runID)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "gtune-ncu-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	start, done, failed := time.Now(), 0, 0
	for _, e := range evals {
		if e.Status != "valid" {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		obs, err := ncuProfileOne(ctx, s, sp, e.Key, metrics, f, filepath.Join(tmp, fmt.Sprintf("c%d", e.ID)))
		if err == nil {
			err = db.AddObservations(e.ID, obs)
		}
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "gtune: ncu: configuration %s: %v\n", e.Key, err)
			continue
		}
		done++
	}
	n := done + failed
	if n == 0 {
		return nil
	}
	wall := time.Since(start)
	fmt.Fprintf(stderr, "gtune: ncu: %d configurations profiled (%d failed) in %.1f s, %.2f s per configuration; metrics stored as observations of run %d\n",
		done, failed, wall.Seconds(), wall.Seconds()/float64(n), runID)
	if done == 0 {
		return errors.New("ncu profiled no configuration (its messages are above)")
	}
	return nil
}

// ncuProfileOne profiles configuration key of sp once under ncu (see
// ncuObserve), working in dir.
func ncuProfileOne(ctx context.Context, s *spec.Spec, sp *space.Space, key string, metrics []string, f tuneFlags, dir string) (measure.Observations, error) {
	i, ok := sp.Lookup(key)
	if !ok {
		return nil, fmt.Errorf("not a configuration of the search space")
	}
	cfg := sp.Values(i)
	fixed := make([]space.Param, len(s.Params))
	for k, p := range s.Params {
		fixed[k] = space.Param{Name: p.Name, Values: cfg[k : k+1]}
	}
	one, err := space.BuildContext(ctx, fixed, s.Restrictions, s.Constants, space.BuildOptions{})
	if err != nil || one.Len() != 1 {
		return nil, fmt.Errorf("the configuration alone: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	prof := s.WithoutVerification()
	prof.Measurement.Iterations = 1
	off := false
	prof.Measurement.Energy = &off
	prof.Measurement.Observers = nil
	// Only the spec's kernel is profiled (gtune's own kernels, such as a
	// cache flush, are not): the warm-up and the timed run (no reference
	// run: verification is off); the last launch is the timed run.
	args := []string{"--target-processes", "all", "--clock-control", "none",
		"--kernel-name", "regex:^" + regexp.QuoteMeta(s.KernelName), "--launch-count", "4",
		"--metrics", strings.Join(metrics, ","), "--csv", "--page", "raw", "--print-units", "base"}
	log, err := measureUnderNcu(ctx, f.ncu, args, f.device, dir, tuner.Config{Spec: prof, Space: one})
	if err != nil {
		return nil, err
	}
	defer log.Close()
	ls, err := profile.ParseNcuMetrics(log)
	if err != nil {
		return nil, err
	}
	var last *profile.LaunchMetrics
	for k := range ls {
		if strings.HasPrefix(ls[k].Kernel, s.KernelName) {
			last = &ls[k]
		}
	}
	if last == nil {
		return nil, fmt.Errorf("ncu profiled no launch of %s", s.KernelName)
	}
	var obs measure.Observations
	for _, m := range metrics {
		v, ok := last.Values[m]
		if !ok {
			return nil, fmt.Errorf("ncu gave no value of %s (not a metric of this GPU? ncu --query-metrics lists them)", m)
		}
		obs = append(obs, measure.Observation{Name: m, Unit: last.Units[m], Value: v, Method: "ncu", Launch: measure.PlanScope})
	}
	return obs, nil
}

// measureUnderNcu measures the one configuration of c (its Spec or
// Workload and Space set) once, fresh, in a CUDA worker on GPU device
// started under ncu with ncuArgs (read-only arguments: --clock-control
// none) and its report written to a log file in dir, into a scratch
// database in dir; it returns the log, ncu's CSV, which the caller
// closes. Errors: the worker does not start under ncu, the plan is not
// valid there, ncu writes no report.
func measureUnderNcu(ctx context.Context, ncu string, ncuArgs []string, device int, dir string, c tuner.Config) (*os.File, error) {
	logPath := filepath.Join(dir, "ncu.csv")
	wrapper := append(append([]string{ncu}, ncuArgs...), "--log-file", logPath)
	be, err := cuda.Open(ctx, device, cuda.Options{Wrapper: wrapper, Stderr: io.Discard})
	if err != nil {
		return nil, fmt.Errorf("starting the worker under ncu: %w", err)
	}
	db, err := store.Open(filepath.Join(dir, "ncu.db"))
	if err != nil {
		be.Close()
		return nil, err
	}
	defer db.Close()
	c.Backend, c.DB = be, db
	c.Objective = objective.Objective{Name: objective.Time, Unit: "ms"}
	c.Strategy, c.RunKind, c.MaxEvals, c.Fresh, c.GtuneVersion = "brute_force", "profile", 1, true, version
	sum, err := tuner.Run(ctx, c)
	be.Close() // ncu writes its report when the worker exits
	if err != nil {
		return nil, err
	}
	if o := sum.Evaluations; len(o) != 1 || !o[0].Valid() {
		if len(o) == 0 {
			return nil, errors.New("not measured under ncu")
		}
		return nil, fmt.Errorf("under ncu: %s: %s", o[0].Status, o[0].Reason)
	}
	log, err := os.Open(logPath)
	if err != nil {
		return nil, fmt.Errorf("ncu wrote no report: %w", err)
	}
	return log, nil
}
