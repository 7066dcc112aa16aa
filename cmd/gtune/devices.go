package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/nvml"
	"github.com/gtune/gtune/report"
)

func newDevicesCmd() *cobra.Command {
	var asJSON, all bool
	c := &cobra.Command{
		Use:   "devices",
		Short: "List the GPUs (or, without a CUDA driver, the simulated ones); --all lists the device database",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all {
				db := device.All()
				if asJSON {
					enc := json.NewEncoder(cmd.OutOrStdout())
					enc.SetIndent("", "  ")
					return enc.Encode(db)
				}
				report.DeviceDatabase(cmd.OutOrStdout(), db)
				return nil
			}
			var devs []backend.DeviceInfo
			var ids []string // device-database ids of simulated GPUs
			if err := cuda.Available(); err == nil {
				devs, err = listCUDADevices(cmd.Context())
				if err != nil {
					return err
				}
			} else {
				fmt.Fprintln(cmd.ErrOrStderr(), "gtune: no CUDA driver here; listing the simulated GPUs: choose one with --sim-device ID, the simulated GPU of a run is always --device 0 (gtune tune --backend cuda says why there is no driver)")
				for _, d := range device.All() {
					if !d.IsCUDA() || d.ComputeMajor < 3 {
						continue // the simulator models CUDA GPUs of CC >= 3.0
					}
					devs = append(devs, sim.New(d, sim.Options{}).Device().Local)
					ids = append(ids, d.ID)
				}
			}
			if asJSON {
				refs := make([]report.DeviceRef, len(devs))
				for i, d := range devs {
					refs[i] = report.LocalRef(d)
					if i < len(ids) {
						refs[i].ID = ids[i]
					}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(refs)
			}
			report.Devices(cmd.OutOrStdout(), devs, ids)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&all, "all", false, "list every GPU of the device database (the ids --sim-device takes)")
	return c
}

// listCUDADevices asks one worker per GPU for its description; NVML
// (read-only) gives the count, so the parent never creates a CUDA context.
func listCUDADevices(ctx context.Context) ([]backend.DeviceInfo, error) {
	n, err := gpuCount()
	if err != nil {
		return nil, err
	}
	var devs []backend.DeviceInfo
	for i := 0; i < n; i++ {
		b, err := cuda.Open(ctx, i, cuda.Options{})
		if err != nil {
			return devs, fmt.Errorf("GPU %d: %w", i, err)
		}
		devs = append(devs, b.Device().Local)
		b.Close()
	}
	return devs, nil
}

// gpuCount is the number of GPUs NVML sees (read-only): the parent never
// creates a CUDA context to count them.
func gpuCount() (int, error) {
	lib, err := nvml.Load()
	if err != nil {
		return 0, err
	}
	if err := lib.Init(); err != nil {
		return 0, err
	}
	defer lib.Shutdown()
	return lib.DeviceCount()
}
