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
				writeDatabase(cmd.OutOrStdout(), db)
				return nil
			}
			var devs []backend.DeviceInfo
			if err := cuda.Available(); err == nil {
				devs, err = listCUDADevices(cmd.Context())
				if err != nil {
					return err
				}
			} else {
				fmt.Fprintln(cmd.ErrOrStderr(), "gtune: no CUDA driver here; listing the simulated GPUs (gtune tune --backend cuda says why)")
				for _, d := range device.All() {
					if !d.IsCUDA() || d.ComputeMajor < 3 {
						continue // the simulator models CUDA GPUs of CC >= 3.0
					}
					devs = append(devs, sim.New(d, sim.Options{}).Device().Local)
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
	c.Flags().BoolVar(&all, "all", false, "list every GPU of the device database (ids for --device and --sim-device)")
	return c
}

// writeDatabase prints one line per database GPU: clocks in MHz (base/
// boost, memory), power limits min/default/max in W, peak FP32 in GFLOP/s,
// bandwidth in GB/s. AMD GPUs show compute units and no compute capability.
func writeDatabase(w io.Writer, db []*device.Description) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "id	name	architecture	cc	SMs/CUs	SM clock base/boost (MHz)	mem clock (MHz)	power limit min/default/max (W)	peak FP32 (GFLOP/s)	bandwidth (GB/s)")
	for _, d := range db {
		cc, units := fmt.Sprintf("%d.%d", d.ComputeMajor, d.ComputeMinor), fmt.Sprintf("%d", d.SMs)
		if !d.IsCUDA() {
			cc, units = "-", fmt.Sprintf("%d CUs", d.ComputeUnits)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%d\t%g/%g/%g\t%g\t%g\n", d.ID, d.Name, d.Architecture, cc, units,
			d.BaseClockMHz, d.BoostClockMHz, d.MemoryClockMHz, d.PowerLimitMinW, d.PowerLimitDefaultW, d.PowerLimitMaxW,
			d.PeakFP32GFLOPS, d.MemoryBandwidthGBs)
	}
	tw.Flush()
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
		devs = append(devs, b.Device().Local)
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
