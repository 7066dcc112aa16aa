package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/nvml"
)

func newDevicesCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "devices",
		Short: "List the GPUs (or, without a CUDA driver, the simulated ones)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var devs []backend.DeviceInfo
			if err := cuda.Available(); err == nil {
				devs, err = listCUDADevices(cmd.Context())
				if err != nil {
					return err
				}
			} else {
				fmt.Fprintln(cmd.ErrOrStderr(), "gtune: no CUDA driver here; listing the simulated GPUs (gtune tune --backend cuda says why)")
				for _, d := range device.All() {
					devs = append(devs, sim.New(d, sim.Options{}).Device())
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(devs)
			}
			writeDevices(cmd.OutOrStdout(), devs)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// listCUDADevices asks one worker per GPU for its description; NVML
// (read-only) gives the count, so the parent never creates a CUDA context.
func listCUDADevices(ctx context.Context) ([]backend.DeviceInfo, error) {
	lib, err := nvml.Load()
	if err != nil {
		return nil, err
	}
	if err := lib.Init(); err != nil {
		return nil, err
	}
	n, err := lib.DeviceCount()
	lib.Shutdown()
	if err != nil {
		return nil, err
	}
	var devs []backend.DeviceInfo
	for i := 0; i < n; i++ {
		b, err := cuda.Open(ctx, i, cuda.Options{})
		if err != nil {
			return devs, fmt.Errorf("GPU %d: %w", i, err)
		}
		devs = append(devs, b.Device())
		b.Close()
	}
	return devs, nil
}

func writeDevices(w io.Writer, devs []backend.DeviceInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tname\tuuid\tcc\tSMs\tmemory (GiB)\tSM clock (MHz)\tmax SM clock (MHz)\tmem clock (MHz)\tpower limit (W)\tmin–max (W)\tbackend")
	for i, d := range devs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d.%d\t%d\t%.1f\t%d\t%d\t%d\t%.0f\t%.0f–%.0f\t%s\n", i, d.Name, d.UUID,
			d.ComputeMajor, d.ComputeMinor, d.SMs, float64(d.MemoryBytes)/(1<<30), d.SMClockMHz, d.MaxSMClockMHz,
			d.MemClockMHz, d.PowerLimitW, d.MinPowerLimitW, d.MaxPowerLimitW, d.Backend)
	}
	tw.Flush()
}
