package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/store"
)

func newDevicesCmd() *cobra.Command {
	var asJSON, all bool
	var dbPath string
	c := &cobra.Command{
		Use:   "devices",
		Short: "List the GPUs (or, without a CUDA driver, the simulated ones); --all lists the device database",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all {
				measured, err := store.MeasuredProfiles(dbPath)
				if err != nil {
					return err
				}
				if asJSON {
					return report.DeviceDatabaseJSON(cmd.OutOrStdout(), device.All(), measured)
				}
				report.DeviceDatabase(cmd.OutOrStdout(), device.All(), measured)
				return nil
			}
			var devs []backend.DeviceInfo
			var ids []string // device-database ids of simulated GPUs
			if err := cuda.Available(); err == nil {
				devs, err = registry.CUDADevices(cmd.Context())
				if err != nil {
					return err
				}
			} else {
				fmt.Fprintln(cmd.ErrOrStderr(), "gtune: no CUDA driver here; listing the simulated GPUs: choose one with --sim-device ID, the simulated GPU of a run is always --device 0 (gtune tune --backend cuda says why there is no driver)")
				devs, ids = registry.SimulatedDevices()
			}
			if asJSON {
				return report.DevicesJSON(cmd.OutOrStdout(), devs, ids)
			}
			report.Devices(cmd.OutOrStdout(), devs, ids)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&all, "all", false, "list every GPU of the device database (the ids --sim-device takes) and which have a measured device profile (gtune probe) in --db")
	c.Flags().StringVar(&dbPath, "db", "gtune.db", "with --all: the results database whose device profiles are shown (left alone when it does not exist)")
	return c
}
