package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/internal/flagrange"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/strategy"
	"github.com/gtune/gtune/workload"
)

func newSpaceCmd() *cobra.Command {
	var list, asJSON, orders bool
	var minOcc float64
	var limits spaceLimits
	var beastName, deviceID string
	c := &cobra.Command{
		Use:   "space SPEC | space WORKLOAD | space --beast NAME --sim-device ID",
		Short: "Count (and list) the valid configurations of a kernel specification, of a workload's kernels together (and after occupancy reduction), or of a declared space (--beast dgemm)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if beastName != "" {
				if len(args) > 0 {
					return badInput("give a SPEC or --beast, not both")
				}
				if err := flagrange.OnlyWith(cmd, "a workload", "orders", "min-occupancy"); err != nil {
					return err
				}
				return runBeastSpace(cmd.OutOrStdout(), beastName, deviceID, list, asJSON)
			}
			if len(args) != 1 {
				return badInput("space needs a SPEC or a WORKLOAD (or --beast NAME --sim-device ID)")
			}
			if workload.IsFile(args[0]) {
				return runWorkloadSpace(cmd, args[0], deviceID, orders, limits.maxConfigs, minOcc, list, asJSON)
			}
			if err := flagrange.OnlyWith(cmd, "a workload", "orders", "min-occupancy"); err != nil {
				return err
			}
			if err := flagrange.OnlyWith(cmd, "a workload or --beast", "sim-device"); err != nil {
				return err
			}
			s, err := spec.LoadWith(args[0], spec.LoadOptions{NoSource: true})
			if err != nil {
				return err
			}
			t0 := time.Now()
			sp, err := buildSpace(cmd.Context(), s, limits)
			if err != nil {
				return err
			}
			elapsed := time.Since(t0)
			return report.Space(cmd.OutOrStdout(), s, sp, elapsed, list, asJSON)
		},
	}
	c.Flags().BoolVar(&list, "list", false, "print every valid configuration (CSV, or inside the JSON document with --json)")
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON document")
	addSpaceFlags(c.Flags(), &limits)
	c.Flags().StringVar(&beastName, "beast", "", "a declared search space instead of a SPEC: dgemm (autotuning-gemm-energy-beast.md, Figure 3)")
	c.Flags().StringVar(&deviceID, "sim-device", "", "with --beast, or a workload: the device-database id whose limits the constraints (the occupancy) read, e.g. h100_sxm")
	c.Flags().BoolVar(&orders, "orders", false, "a workload: count its launch orders too")
	flagrange.Float(c.Flags(), &minOcc, "min-occupancy", strategy.DefaultMinOccupancy, 0, 1, true, "a workload: the occupancy a kernel's configuration needs to stay in the reduced space")
	return c
}
