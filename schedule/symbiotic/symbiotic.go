// Package symbiotic orders a workload's concurrent kernels on one GPU
// (schedule.Symbiotic, symbiotic-scheduling-concurrent-kernels.md):
// each kernel's profile (launch geometry, registers and shared memory as
// compiled, instruction mix from Nsight Compute or the declared work),
// and the order's rank among the orders of the same configuration
// measured in the results database.
package symbiotic

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/ncupass"
	"github.com/gtune/gtune/profile"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/schedule"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/tuner"
	"github.com/gtune/gtune/workload"
)

// Kernels profiles each kernel of w (configuration cfg of set's combined
// space, laid out as lay says) for the symbiotic order: its launch
// geometry from its spec, registers and shared memory as compiled
// (tuner.ResourceProvider: the database, the backend, the spec's
// declarations, said on log), and its instruction mix from source:
// "ncu" (NcuMixes with nc) or "model" (the specs' declared work).
// Errors: a kernel's job, resources or mix; a member's space (bad
// input, badinput).
func Kernels(ctx context.Context, log io.Writer, set *workload.Set, lay *workload.Layout, cfg []expr.Value, w *workload.Workload, be backend.Backend, db *store.DB, source string, nc ncupass.Options) ([]schedule.Kernel, error) {
	var ncu []profile.Mix
	if source == "ncu" {
		var err error
		if ncu, err = NcuMixes(ctx, nc, set, lay, cfg); err != nil {
			return nil, err
		}
	}
	var ks []schedule.Kernel
	for i, m := range set.Members {
		l := w.Launches[i]
		j, err := m.Spec.Job(l.Config)
		if err != nil {
			return nil, err
		}
		msp, err := set.MemberSpace(ctx, i, space.BuildOptions{})
		if err != nil {
			return nil, badinput.Wrap(err)
		}
		mi, ok := msp.Lookup(m.Spec.Key(l.Config))
		if !ok {
			return nil, fmt.Errorf("kernel %s: configuration %s is not in its own space", m.Name, m.Spec.Key(l.Config))
		}
		regs, smem, err := tuner.NewResourceProvider(ctx, log, be, m.Spec, msp, db).Resources(mi)
		if err != nil {
			return nil, fmt.Errorf("kernel %s: registers and shared memory: %w", m.Name, err)
		}
		mix := profile.Mix{}
		if source == "ncu" {
			mix = ncu[i]
		} else if mix, err = profile.FromWork(j); err != nil {
			return nil, fmt.Errorf("kernel %s: %w", m.Name, err)
		}
		rsp, rdp, rmem, nmem, err := mix.Ratios()
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", m.Name, err)
		}
		ks = append(ks, schedule.Kernel{
			Name: m.Name, Blocks: j.Grid[0] * j.Grid[1] * j.Grid[2], ThreadsPerBlock: j.Block[0] * j.Block[1] * j.Block[2],
			RegistersPerThread: regs, SharedMemoryPerBlock: smem,
			Instructions: mix.SP + mix.DP + mix.Mem, Rsp: rsp, Rdp: rdp, Rmem: rmem, MemBytesPerInst: nmem,
		})
	}
	return ks, nil
}

// Rank ranks order among the orders of configuration cfg (of the
// combined space without orders) measured in db on the device, by
// objective; nil when fewer than two were measured or order was not.
// Where every order was measured more than once (tune --repeat), each
// order's value is statistic over its repeats (schedule.RankRepeated).
func Rank(ctx context.Context, set *workload.Set, db *store.DB, uuid string, cfg []expr.Value, order []int, objective, statistic string) (*report.OrderRanking, error) {
	spo, layo, err := set.Space(ctx, true, space.BuildOptions{})
	if err != nil {
		return nil, nil // too many kernels to order: nothing was measured
	}
	prev, err := db.Previous(set.Hash(), uuid)
	if err != nil {
		return nil, err
	}
	prefix := spec.KeyOf(cfg) + ","
	var values []float64
	var samples [][]float64
	repeated := true
	chosen, found, at := 0.0, false, 0
	name := set.OrderName(order)
	for _, key := range slices.Sorted(maps.Keys(prev)) {
		e := prev[key]
		if e.Status != string(backend.StatusValid) || !strings.HasPrefix(key, prefix) {
			continue
		}
		v, ok := e.Observations[objective]
		if !ok {
			continue
		}
		i, ok := spo.Lookup(key)
		if !ok {
			continue
		}
		if spo.Values(i)[layo.Order].Str() == name {
			chosen, found, at = v, true, len(values)
		}
		values = append(values, v)
		rs, err := db.Repeats(e.ID)
		if err != nil {
			return nil, err
		}
		var sample []float64
		for _, rep := range rs {
			if x, ok := rep.Observations[objective]; ok && rep.Status == string(backend.StatusValid) {
				sample = append(sample, x)
			}
		}
		repeated = repeated && len(sample) > 1
		samples = append(samples, sample)
	}
	if len(values) < 2 || !found {
		return nil, nil
	}
	orders := len(spo.Params()[layo.Order].Values)
	if repeated {
		rr, err := schedule.RankRepeated(samples, at, statistic, 0, 1)
		if err != nil {
			return nil, err
		}
		return &report.OrderRanking{Objective: objective, Ranking: rr.Ranking, Sample: rr.SampledFrom(orders), Repeated: &rr}, nil
	}
	r, err := schedule.Rank(values, chosen)
	if err != nil {
		return nil, err
	}
	return &report.OrderRanking{Objective: objective, Ranking: r, Sample: r.SampledFrom(orders)}, nil
}

// NcuMixes profiles one launch of every kernel of configuration cfg of
// set's combined space (laid out as lay says) with Nsight Compute: a
// CUDA worker started under ncu (cuda.Options.Wrapper; read-only,
// profile.NcuArgs, its output to a log file so that the worker's pipes
// stay its own) measures the plan once through the tuner, issued in
// member order, one timed run, no verification, into a scratch database;
// the first launch of each kernel is its profile.
func NcuMixes(ctx context.Context, nc ncupass.Options, set *workload.Set, lay *workload.Layout, cfg []expr.Value) ([]profile.Mix, error) {
	members := make([]int, len(set.Members))
	for i := range members {
		members[i] = i
	}
	one, err := set.Fix(lay, cfg, members)
	if err != nil {
		return nil, err
	}
	no := false
	one.Measurement = &workload.FileMeasurement{Iterations: 1, Verify: &no, Energy: &no}
	sp, oneLay, err := one.Space(ctx, false, space.BuildOptions{})
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "gtune-ncu-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	log, _, err := ncupass.MeasureUnder(ctx, nc, profile.NcuArgs(len(set.Members)), tmp, tuner.Config{Subject: tuner.FromWorkload(one, oneLay), Space: sp})
	if err != nil {
		return nil, err
	}
	defer log.Close()
	ls, err := profile.ParseNcuCSV(log)
	if err != nil {
		return nil, err
	}
	if len(ls) < len(set.Members) {
		return nil, fmt.Errorf("ncu profiled %d launches of the workload's %d kernels", len(ls), len(set.Members))
	}
	out := make([]profile.Mix, len(set.Members))
	for i, m := range set.Members {
		if !strings.HasPrefix(ls[i].Kernel, m.Spec.KernelName) {
			return nil, fmt.Errorf("ncu's launch %d is %s, kernel %s is %s", i, ls[i].Kernel, m.Name, m.Spec.KernelName)
		}
		out[i] = ls[i].Mix
	}
	return out, nil
}

// ProfileSource is where the kernels' profiles come from: flag
// (--profile: ncu or model), or for auto Nsight Compute where the GPU is
// real and ncu (its path or name) is found, else the specs' declared
// work (model).
func ProfileSource(be backend.Backend, flag, ncu string) string {
	if flag != "auto" {
		return flag
	}
	if !backend.TraitsOf(be).Modelled { // a model has no counters
		if _, err := exec.LookPath(ncu); err == nil {
			return "ncu"
		}
	}
	return "model"
}

// Device is the scheduler's view of be's GPU (schedule.DeviceFrom of its
// description). Errors: a GPU the device database does not know (bad
// input), or one without the limits the scheduler needs.
func Device(be backend.Backend) (schedule.Device, error) {
	d, err := tuner.Description(be)
	if err != nil {
		return schedule.Device{}, badinput.Wrap(err)
	}
	return schedule.DeviceFrom(d)
}
