package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/gpuctl"
	"github.com/gtune/gtune/space"
)

// addGPUFlags binds gtune tune's GPU-settings flags to g.
func addGPUFlags(fl *pflag.FlagSet, g *gpuctl.Options) {
	fl.StringVar(&g.Strategy, "gpu-settings", "", "add GPU settings to the search space as the thesis's strategies name them: g1 (SM clock, memory clock, power limit), g2 (SM and memory clock), g3 (power limit)")
	fl.IntVar(&g.ClockStep, "clock-step", 0, "with --gpu-settings: SM clocks this many MHz apart, e.g. 100 (0: every supported clock)")
	fl.Float64Var(&g.PowerStep, "power-step", 10, "with --gpu-settings: power limits this many W apart, from the lowest to the highest allowed")
	fl.BoolVar(&g.Allow, "allow-gpu-settings", false, "allow gtune to change the GPU's clocks and power limit (needs root on a real GPU); the originals are journalled and restored")
	fl.BoolVar(&g.DryRun, "dry-run", false, "show the GPU settings gtune would set and the search space, set nothing, tune nothing")
	fl.StringVar(&g.OnNoPerm, "on-no-permission", "stop", "when the GPU settings may not be changed: stop, or drop them and tune the rest")
	fl.StringVar(&g.Journal, "journal", "", "journal of the original GPU settings (default: the database path + .gpu-journal)")
	fl.StringVar(&g.ClockRange, "clock-range", "all", "SM clocks to tune: all, or ridge (±10 % around the ridge frequency fitted on a synthetic FMA kernel)")
	fl.StringVar(&g.SimState, "sim-nvml-state", "", "simulated GPU only: keep the simulated NVML settings in this file (journal and gtune restore then apply to it)")
	_ = fl.MarkHidden("sim-nvml-state")
}

// simulatedBackend tells whether --backend resolves to the simulated GPU
// (auto does without a CUDA driver).
func simulatedBackend(name string) bool {
	return name == "sim" || (name == "auto" && cuda.Available() != nil)
}

func describeValues(p space.Param, unit string) string {
	if len(p.Values) <= 6 {
		var vs []string
		for _, v := range p.Values {
			vs = append(vs, v.String())
		}
		return fmt.Sprintf("%s %s", strings.Join(vs, ", "), unit)
	}
	return fmt.Sprintf("%d values, %s .. %s %s", len(p.Values), p.Values[0].String(), p.Values[len(p.Values)-1].String(), unit)
}

// printPlan is --dry-run's report: what would be set, how, and where the
// journal would go.
func printPlan(w io.Writer, p *gpuctl.Plan) {
	d := p.Device
	fmt.Fprintf(w, "dry run: no GPU setting is changed and nothing is tuned\n")
	fmt.Fprintf(w, "device: %s (%s), %s backend; now: SM clock %d MHz, memory clock %d MHz, power limit %g W (settable %g–%g W)\n",
		d.Name, d.UUID, d.Backend, d.SMClockMHz, d.MemClockMHz, d.PowerLimitW, p.MinPowerW, p.MaxPowerW)
	fmt.Fprintln(w, "GPU-setting parameters:")
	for _, q := range p.Params {
		switch q.Name {
		case backend.ParamCoreClock:
			fmt.Fprintf(w, "  %s: %s — nvmlDeviceSetGpuLockedClocks(f, f); nvmlDeviceSetApplicationsClocks where locked clocks are not supported\n", q.Name, describeValues(q, "MHz"))
		case backend.ParamMemClock:
			fmt.Fprintf(w, "  %s: %s — nvmlDeviceSetMemoryLockedClocks(m, m); nvmlDeviceSetApplicationsClocks where not supported\n", q.Name, describeValues(q, "MHz"))
		case backend.ParamPowerLimit:
			fmt.Fprintf(w, "  %s: %s — nvmlDeviceSetPowerManagementLimit\n", q.Name, describeValues(q, "W"))
		}
	}
	fmt.Fprintf(w, "space: %d valid configurations\n", p.SpaceSize)
	if p.SpaceSize > 0 {
		fmt.Fprintf(w, "first setting: %s\n", strings.Join(p.FirstSetting, " "))
	}
	fmt.Fprintf(w, "journal: %s (written before the first change; the originals are restored at exit, or by gtune restore)\n", p.Journal)
	if p.Allowed {
		fmt.Fprintln(w, "permission: --allow-gpu-settings given")
	} else {
		fmt.Fprintln(w, "permission: --allow-gpu-settings not given; a real run would refuse")
	}
}
