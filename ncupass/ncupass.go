// Package ncupass profiles configurations with Nsight Compute in a pass
// of their own, read-only on the GPU (--clock-control none): a CUDA
// worker started under ncu measures a batch of configurations once more
// through the tuner, and the profiled launches are matched to them. gtune
// tune --observe ncu runs it after a run (Observe); gtune schedule
// profiles a workload's kernels with it (MeasureUnder).
package ncupass

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/compilecache"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/profile"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/tuner"
)

// Options say how a pass runs ncu: the command, the GPU, and the gtune
// version recorded in its scratch database.
type Options struct {
	Ncu     string // the Nsight Compute command
	Device  int    // GPU index
	Version string
	// Devices are the GPUs Observe spreads its batches over, one worker
	// under ncu on each at a time (default: Device alone).
	Devices []int
	// Model, where set, is the GPU model the metrics are for (a stored
	// run's device name): a worker on a GPU of another model is refused,
	// as its counters would not be the run's.
	Model string
	// CompileCache, where set, gives the workers under ncu the binaries
	// a run compiled before (tune --compile-cache): a pass after a run
	// loads each configuration's binary instead of compiling it again
	// (NVRTC: a median 286 ms a BEAST DGEMM configuration on an H100
	// host, BENCHMARKS.md), and keeps those it compiles for the next.
	CompileCache *compilecache.Cache
}

// DefaultMetrics are what a pass collects unless told (gtune tune
// --observe ncu): DRAM,
// L2 and L1/texture throughput, achieved occupancy, IPC and the main
// warp stall reasons, the counters the GEMM energy paper correlates
// with GFLOP/s and GFLOP/s/W (autotuning-gemm-energy-beast.md,
// Figures 6–9), by the names ncu gives them.
var DefaultMetrics = []string{
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

// Batch is how many configurations one worker under ncu profiles at
// most. Starting ncu and a CUDA worker for each configuration cost about
// 3.6 s a configuration on an H100 (BENCHMARKS.md, "The GEMM energy
// paper's analysis on an NVIDIA H100"); a batch pays that once. Bounding
// it bounds what a failed batch costs (it is then profiled again in
// halves).
const Batch = 64

// TimeoutFactor multiplies a configuration's time limit
// (Gtune.Measurement.TimeoutSeconds, default spec.DefaultTimeout) under
// ncu (see profileKeys).
const TimeoutFactor = 20

// Observe profiles the valid configurations run runID stored in db
// with Nsight Compute in a separate pass after the timed launches
// (read-only: --clock-control none): batches of up to Batch
// configurations, each measured once more by a CUDA worker started under
// ncu (see profileKeys), the configurations dealt out over o.Devices (a
// worker on each GPU at a time), and the metrics of each configuration's timed
// launch stored as observations of its evaluation (method "ncu", ncu's
// base units). A batch that fails, or whose profiled launches do not line
// up with its configurations, is split in halves and each profiled again,
// down to single configurations; a configuration ncu cannot profile alone
// is reported and skipped. It prints the pass's cost per configuration
// and records the metrics, the counts and the wall time in the run's
// settings (ncu_metrics, ncu_profiled, ncu_failed, ncu_seconds,
// ncu_processes).
func Observe(ctx context.Context, stderr io.Writer, s *spec.Spec, sp *space.Space, db *store.DB, runID int64, metrics []string, o Options) error {
	// The run's evaluations include those it reused from earlier runs;
	// one profiled already (every metric stored) is not profiled again.
	evals, err := db.RunEvaluations(runID)
	if err != nil {
		return err
	}
	var valid []*store.Evaluation
	for _, e := range evals {
		if e.Status == "valid" && !hasAll(e.Observations, metrics) {
			valid = append(valid, e)
		}
	}
	if len(valid) == 0 {
		return nil
	}
	tmp, err := os.MkdirTemp("", "gtune-ncu-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	devices := o.Devices
	if len(devices) == 0 {
		devices = []int{o.Device}
	}
	var mu sync.Mutex // done, failed and stderr, shared by the GPUs' loops
	start, done, failed := time.Now(), 0, 0
	processes, err := onGPUs(valid, devices, func(part []*store.Evaluation, d int) (int, error) {
		od := o
		od.Device = d
		return inBatches(part, Batch, func(batch []*store.Evaluation, call int) error {
			keys := make([]string, len(batch))
			for k, e := range batch {
				keys[k] = e.Key
			}
			obs, err := profileKeys(ctx, s, sp, keys, metrics, od, filepath.Join(tmp, fmt.Sprintf("g%d-p%d", d, call)))
			if err != nil {
				return err
			}
			for k, e := range batch {
				if err := db.AddObservations(e.ID, obs[k]); err != nil {
					return err
				}
			}
			mu.Lock()
			done += len(batch)
			mu.Unlock()
			return nil
		}, func(batch []*store.Evaluation, err error) {
			mu.Lock()
			defer mu.Unlock()
			if len(batch) == 1 {
				failed++
				fmt.Fprintf(stderr, "gtune: ncu: configuration %s: %v\n", batch[0].Key, err)
				return
			}
			fmt.Fprintf(stderr, "gtune: ncu: a batch of %d configurations: %v; profiling its halves apart\n", len(batch), err)
		}, ctx.Err)
	})
	if err != nil {
		return err
	}
	wall := time.Since(start)
	// The pass and its cost stay with the run (gtune report's facts).
	if err := db.SetRunSettings(runID, map[string]any{"ncu_metrics": metrics, "ncu_profiled": done, "ncu_failed": failed,
		"ncu_seconds": wall.Seconds(), "ncu_processes": processes}); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "gtune: ncu: %d configurations profiled (%d failed) in %.1f s on %d GPU(s), %.2f s per configuration, %d process(es) under ncu; metrics stored as observations of run %d\n",
		done, failed, wall.Seconds(), len(devices), wall.Seconds()/float64(len(valid)), processes, runID)
	if done == 0 {
		return errors.New("ncu profiled no configuration (its messages are above)")
	}
	return nil
}

// onGPUs deals items out over devices in turn (item i to devices[i mod
// n], so that each GPU gets a like share of the space), calls each on its
// part and device concurrently (a GPU with no part is not called), and
// returns the sum of their counts and their errors joined, once all have
// returned.
func onGPUs[T any](items []T, devices []int, each func(part []T, device int) (int, error)) (int, error) {
	parts := make([][]T, len(devices))
	for i, it := range items {
		parts[i%len(devices)] = append(parts[i%len(devices)], it)
	}
	counts := make([]int, len(devices))
	errs := make([]error, len(devices))
	var wg sync.WaitGroup
	for k, d := range devices {
		if len(parts[k]) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[k], errs[k] = each(parts[k], d)
		}()
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		total += c
	}
	return total, errors.Join(errs...)
}

// inBatches calls try on consecutive batches of at most size items, in
// order, numbering the calls from 1. A batch try fails is given to failed
// with the error, then split in halves, each tried again, down to single
// items (given to failed too when they fail alone): one item that cannot
// be done costs about two calls per halving, not one call per item of its
// batch. It stops when stop returns an error (a cancelled context), with
// that error. It returns the number of calls.
func inBatches[T any](items []T, size int, try func(batch []T, call int) error, failed func(batch []T, err error), stop func() error) (int, error) {
	calls := 0
	var do func(batch []T) error
	do = func(batch []T) error {
		calls++
		err := try(batch, calls)
		if err == nil {
			return nil
		}
		if e := stop(); e != nil {
			return e
		}
		failed(batch, err)
		if len(batch) == 1 {
			return nil
		}
		half := len(batch) / 2
		if err := do(batch[:half]); err != nil {
			return err
		}
		return do(batch[half:])
	}
	for b := 0; b < len(items); b += size {
		if err := do(items[b:min(b+size, len(items))]); err != nil {
			return calls, err
		}
	}
	return calls, nil
}

// profileKeys profiles configurations keys of sp, in one CUDA worker
// started under ncu (see MeasureUnder), working in dir, and gives
// each one's metrics, in the order of keys. The worker measures the
// configurations one after the other in sp's order, without verification
// or energy: a warm-up launch and one timed launch each, and ncu profiles
// every launch of the spec's kernel (not gtune's own kernels, such as a
// cache flush), so a configuration's metrics are those of its second
// launch. Errors: a key not in sp, a configuration not valid under ncu,
// a report whose launches are not two per configuration or whose grid
// and thread block differ from the configuration's (the launches would
// not line up), a metric ncu did not give.
func profileKeys(ctx context.Context, s *spec.Spec, sp *space.Space, keys []string, metrics []string, o Options, dir string) ([]measure.Observations, error) {
	idx := make([]int, len(keys))
	for k, key := range keys {
		i, ok := sp.Lookup(key)
		if !ok {
			return nil, fmt.Errorf("%s is not a configuration of the search space", key)
		}
		idx[k] = i
	}
	sub, err := sp.Subset(idx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	prof := s.WithoutVerification()
	prof.Measurement.Iterations = 1
	off := false
	prof.Measurement.Energy = &off
	prof.Measurement.Observers = nil
	// ncu replays each profiled launch once per pass its metrics need
	// (about ten for the default ones), restoring memory in between: the
	// configuration's limit grows with it, so that a slow but valid
	// configuration is not killed under ncu (and its batch with it).
	prof.Measurement.Timeout = TimeoutFactor * cmp.Or(prof.Measurement.Timeout, spec.DefaultTimeout)
	args := []string{"--target-processes", "all", "--clock-control", "none",
		"--kernel-name", "regex:^" + regexp.QuoteMeta(s.KernelName),
		"--metrics", strings.Join(metrics, ","), "--csv", "--page", "raw", "--print-units", "base"}
	log, measured, err := MeasureUnder(ctx, o, args, dir, tuner.Config{Subject: tuner.FromSpec(prof), Space: sub, MaxEvals: sub.Len()})
	if err != nil {
		return nil, err
	}
	defer log.Close()
	all, err := profile.ParseNcuMetrics(log)
	if err != nil {
		return nil, err
	}
	byKey, err := launchMetrics(s, sub, measured, all, metrics)
	if err != nil {
		return nil, err
	}
	out := make([]measure.Observations, len(keys))
	for k, key := range keys {
		if out[k] = byKey[key]; out[k] == nil {
			return nil, fmt.Errorf("configuration %s was not measured under ncu", key)
		}
	}
	return out, nil
}

// launchMetrics gives the metrics of each configuration measured
// (in the order measured, Index numbering it in sub) from all, ncu's
// profiled launches in launch order: of the spec's kernel, a warm-up and
// a timed launch per configuration, the timed one's metrics (see
// profileKeys), by configuration key. Errors: not two launches of the
// kernel per configuration; a timed launch whose grid or thread block
// (where ncu gives them) are not its configuration's; a metric missing.
func launchMetrics(s *spec.Spec, sub *space.Space, measured []*tuner.Evaluation, all []profile.LaunchMetrics, metrics []string) (map[string]measure.Observations, error) {
	var ls []profile.LaunchMetrics
	for _, l := range all {
		if strings.HasPrefix(l.Kernel, s.KernelName) {
			ls = append(ls, l)
		}
	}
	if len(ls) != 2*len(measured) {
		return nil, fmt.Errorf("ncu profiled %d launches of %s for %d configurations, not two each (a warm-up and a timed launch)", len(ls), s.KernelName, len(measured))
	}
	byKey := map[string]measure.Observations{}
	for k, e := range measured {
		last := ls[2*k+1]
		grid, block, err := s.Geometry(sub.Values(e.Index))
		if err != nil {
			return nil, fmt.Errorf("configuration %s: %v", e.Key, err)
		}
		if last.Grid != ([3]int{}) && (last.Grid != grid || last.Block != block) {
			return nil, fmt.Errorf("launch %d of ncu's report has grid %v and thread block %v, configuration %s %v and %v: the launches do not line up with the configurations",
				2*k+1, last.Grid, last.Block, e.Key, grid, block)
		}
		var obs measure.Observations
		for _, m := range metrics {
			v, ok := last.Values[m]
			if !ok {
				return nil, fmt.Errorf("ncu gave no value of %s for %s (not a metric of this GPU? ncu --query-metrics lists them)", m, e.Key)
			}
			obs = append(obs, measure.Observation{Name: m, Unit: last.Units[m], Value: v, Method: "ncu", Launch: measure.PlanScope})
		}
		byKey[e.Key] = obs
	}
	return byKey, nil
}

// MeasureUnder measures the configurations of c (its Subject and Space
// set; c.MaxEvals of them, default one) once each, fresh, in one CUDA
// worker on GPU o.Device started under o.Ncu with ncuArgs
// (read-only arguments: --clock-control none) and its report written to
// a log file in dir, into a scratch database in dir, one after the other
// in the order the space numbers them. It returns the log, ncu's CSV,
// which the caller closes, and the evaluations in the order measured.
// Errors: the worker does not start under ncu, a configuration is not
// valid there, ncu writes no report.
func MeasureUnder(ctx context.Context, o Options, ncuArgs []string, dir string, c tuner.Config) (*os.File, []*tuner.Evaluation, error) {
	logPath := filepath.Join(dir, "ncu.csv")
	wrapper := append(append([]string{o.Ncu}, ncuArgs...), "--log-file", logPath)
	be, err := cuda.Open(ctx, o.Device, cuda.Options{Wrapper: wrapper, Stderr: io.Discard})
	if err != nil {
		return nil, nil, fmt.Errorf("starting the worker under ncu: %w", err)
	}
	if name := be.Device().Name; o.Model != "" && name != o.Model {
		be.Close()
		return nil, nil, fmt.Errorf("GPU %d is %s, not the run's model (%s): its counters would not be the run's", o.Device, name, o.Model)
	}
	db, err := store.Open(filepath.Join(dir, "ncu.db"))
	if err != nil {
		be.Close()
		return nil, nil, err
	}
	defer db.Close()
	sum, err := tuner.Run(ctx, underConfig(c, o, be, db))
	be.Close() // ncu writes its report when the worker exits
	if err != nil {
		return nil, nil, err
	}
	evals := sum.Evaluations
	if len(evals) == 0 {
		return nil, nil, errors.New("not measured under ncu")
	}
	for _, e := range evals {
		if !e.Valid() {
			return nil, nil, fmt.Errorf("under ncu: %s: %s: %s", e.Key, e.Status, e.Reason)
		}
	}
	log, err := os.Open(logPath)
	if err != nil {
		return nil, nil, fmt.Errorf("ncu wrote no report: %w", err)
	}
	return log, evals, nil
}

// underConfig completes c for a measurement under ncu (MeasureUnder) on
// be into the scratch database db: time, brute force in proposal order
// (the space's, so that the profiled launches follow the
// configurations), fresh, at least one evaluation, and o's compile cache
// where c has none.
func underConfig(c tuner.Config, o Options, be backend.Backend, db *store.DB) tuner.Config {
	c.Backend, c.DB = be, db
	c.Objective = objective.Objective{Name: objective.Time, Unit: "ms"}
	c.MaxEvals = max(c.MaxEvals, 1)
	c.CompletionOrder = false
	c.Strategy, c.RunKind, c.Fresh, c.GtuneVersion = "brute_force", "profile", true, o.Version
	c.CompileCache = cmp.Or(c.CompileCache, o.CompileCache)
	return c
}

// hasAll reports whether obs holds every one of names.
func hasAll(obs map[string]float64, names []string) bool {
	for _, n := range names {
		if _, ok := obs[n]; !ok {
			return false
		}
	}
	return true
}
