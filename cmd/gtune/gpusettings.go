package main

import (
	"github.com/spf13/pflag"

	"github.com/gtune/gtune/gpuctl"
	"github.com/gtune/gtune/internal/flagrange"
)

// addGPUFlags binds gtune tune's GPU-settings flags to g.
func addGPUFlags(fl *pflag.FlagSet, g *gpuctl.Options) {
	fl.StringVar(&g.Strategy, "gpu-settings", "", "add GPU settings to the search space as the thesis's strategies name them: g1 (SM clock, memory clock, power limit), g2 (SM and memory clock), g3 (power limit)")
	flagrange.Int(fl, &g.ClockStep, "clock-step", 0, 0, 100_000, "with --gpu-settings: SM clocks this many MHz apart, e.g. 100 (0: every supported clock)")
	flagrange.Float(fl, &g.PowerStep, "power-step", 10, 0, 10_000, true, "with --gpu-settings: power limits this many W apart, from the lowest to the highest allowed")
	fl.BoolVar(&g.Allow, "allow-gpu-settings", false, "allow gtune to change the GPU's clocks and power limit (needs root on a real GPU); the originals are journalled and restored")
	fl.BoolVar(&g.DryRun, "dry-run", false, "show the GPU settings gtune would set and the search space, set nothing, tune nothing")
	fl.StringVar(&g.OnNoPerm, "on-no-permission", "stop", "when the GPU settings may not be changed: stop, or drop them and tune the rest")
	fl.StringVar(&g.Journal, "journal", "", "journal of the original GPU settings (default: the database path + .gpu-journal)")
	fl.StringVar(&g.ClockRange, "clock-range", "all", "SM clocks to tune: all, or ridge (±10 % around the ridge frequency fitted on a synthetic FMA kernel)")
	fl.StringVar(&g.SimState, "sim-nvml-state", "", "simulated GPU only: keep the simulated NVML settings in this file (journal and gtune restore then apply to it)")
	_ = fl.MarkHidden("sim-nvml-state")
}

// checkGPUFlags refuses the flags that shape GPU settings' values when
// no --gpu-settings adds them: they would be silently ignored.
func checkGPUFlags(fl *pflag.FlagSet, g gpuctl.Options) error {
	if g.Strategy != "" {
		return nil
	}
	for _, name := range []string{"clock-step", "power-step"} {
		if fl.Changed(name) {
			return badInput("--%s takes effect only with --gpu-settings g1|g2|g3", name)
		}
	}
	return nil
}
