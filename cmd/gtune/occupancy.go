package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/occupancy"
	"github.com/gtune/gtune/report"
)

func init() { subcommands = append(subcommands, newOccupancyCmd) }

type occupancyFlags struct {
	device       string
	blockSize    int
	registers    int
	sharedMemory int
	carveout     int
	asJSON       bool
	batch        bool
}

func newOccupancyCmd() *cobra.Command {
	var f occupancyFlags
	c := &cobra.Command{
		Use:   "occupancy",
		Short: "Theoretical occupancy of a launch configuration on a GPU",
		Long: `Prints the active thread blocks per SM, the occupancy (active warps / max warps per SM)
and the limiting resource (blocks, warps, registers, shared_memory, barriers) of one launch
configuration, by CUDA's own occupancy rules.

--sim-device is a device-database id ('gtune devices --all' lists them) or 'local' (the GPU in
this machine, with the driver's limits). --shared-memory is static + dynamic shared memory per
thread block in bytes. With --batch, CSV rows with the header block_size,registers,shared_memory
are read from stdin and written back with active_blocks_per_sm,occupancy,limiter appended.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := resolveDevice(cmd.Context(), f.device)
			if err != nil {
				return err
			}
			if f.batch {
				for _, name := range []string{"block-size", "registers", "shared-memory"} {
					if cmd.Flags().Changed(name) {
						return badInput("--%s and --batch exclude each other: --batch reads block_size,registers,shared_memory from stdin", name)
					}
				}
				return occupancy.Batch(cmd.InOrStdin(), cmd.OutOrStdout(), d, f.carveout)
			}
			if !cmd.Flags().Changed("block-size") {
				return badInput("--block-size is required (threads per thread block)")
			}
			in := occupancy.Input{BlockSize: f.blockSize, RegistersPerThread: f.registers, SharedMemoryPerBlock: f.sharedMemory, CarveoutKiB: f.carveout}
			r, err := occupancy.Checked(d, in)
			if err != nil {
				return err
			}
			if f.asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(report.OccupancyJSON(d, in, r))
			}
			report.Occupancy(cmd.OutOrStdout(), d, in, r)
			return nil
		},
	}
	c.Flags().StringVar(&f.device, "sim-device", "h100_sxm", "device-database id, or 'local' for this machine's GPU 0")
	c.Flags().IntVar(&f.blockSize, "block-size", 0, "threads per thread block (product of the block dimensions)")
	c.Flags().IntVar(&f.registers, "registers", 0, "registers per thread as compiled (0: no register limit)")
	c.Flags().IntVar(&f.sharedMemory, "shared-memory", 0, "static + dynamic shared memory per thread block, bytes")
	c.Flags().IntVar(&f.carveout, "carveout", 0, "preferred shared memory per SM in KiB (L1/shared split); 0: driver default, -1: prefer L1")
	c.Flags().BoolVar(&f.asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&f.batch, "batch", false, "read CSV rows block_size,registers,shared_memory from stdin")
	return c
}

// resolveDevice returns the database description id names, or for "local"
// the local GPU's (the driver's answers over the database file).
func resolveDevice(ctx context.Context, id string) (*device.Description, error) {
	if strings.EqualFold(strings.TrimSpace(id), "local") {
		return localDevice(ctx)
	}
	d, err := device.Lookup(id)
	if err != nil {
		return nil, inputError{fmt.Errorf("--sim-device: %w (gtune devices --all lists the ids)", err)}
	}
	return d, nil
}

// localDevice describes this machine's GPU 0: its database file (matched by
// the driver's name) overridden by the driver's and NVML's answers, through
// a CUDA worker (the parent never creates a CUDA context).
func localDevice(ctx context.Context) (*device.Description, error) {
	if err := cuda.Available(); err != nil {
		return nil, fmt.Errorf("--sim-device local: no local GPU usable here: %w", err)
	}
	b, err := cuda.Open(ctx, 0, cuda.Options{})
	if err != nil {
		return nil, fmt.Errorf("--sim-device local: %w", err)
	}
	info := b.Device().Local
	b.Close()
	return device.FromLocal(device.MatchName(info.Name), info)
}
