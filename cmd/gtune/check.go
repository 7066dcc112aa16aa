package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/check"
	"github.com/gtune/gtune/internal/flagrange"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
)

func init() { subcommands = append(subcommands, newCheckCmd) }

type checkFlags struct {
	simDevice     string
	compileSample int
	asJSON        bool
	limits        spaceLimits
}

func newCheckCmd() *cobra.Command {
	var f checkFlags
	c := &cobra.Command{
		Use:   "check SPEC|WORKLOAD...",
		Short: "Check specs and workloads without a GPU: every problem a run would meet before its first evaluation, all at once",
		Long: `check runs, for each file, what gtune tune checks before any GPU work — the spec's keys and values
(unknown keys with the key meant), the kernel source (text, KernelName, brackets, the argument list
against the kernel's parameters), the objective and strategy, the search space, every configuration's
grid, thread block, shared memory and simulated work — and what a run would only meet on the GPU: the
arguments against the device's memory, and where NVRTC is found, the compilation of the default
configuration and a sample of others. It lists every file's problems, says what it could not check
here, and exits 2 when any file has a problem (0 otherwise).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var files []report.CheckFile
			bad := 0
			for _, p := range args {
				cf := check.File(cmd.Context(), p, check.Options{SimDevice: f.simDevice, CompileSample: f.compileSample, MaxConfigurations: f.limits.maxConfigs,
					BuildSpace: func(ctx context.Context, s *spec.Spec) (*space.Space, error) { return buildSpace(ctx, s, f.limits) }})
				if len(cf.Problems) > 0 {
					bad++
				}
				files = append(files, cf)
			}
			if f.asJSON {
				if err := report.CheckJSON(cmd.OutOrStdout(), files); err != nil {
					return err
				}
			} else {
				report.CheckText(cmd.OutOrStdout(), files)
			}
			if bad > 0 {
				return badInput("check: %d of %d file(s) have problems", bad, len(args))
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.simDevice, "sim-device", "", "device-database id of the GPU to check against (default: the spec's Gtune.Simulation.Device, else h100_sxm)")
	flagrange.Int(fl, &f.compileSample, "compile-sample", 4, 0, 1000, "configurations compiled besides the default one, where NVRTC is found")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON document")
	addSpaceFlags(fl, &f.limits)
	return c
}
