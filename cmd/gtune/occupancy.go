package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/bounded"
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
				return occupancyBatch(cmd.InOrStdin(), cmd.OutOrStdout(), d, f.carveout)
			}
			if !cmd.Flags().Changed("block-size") {
				return badInput("--block-size is required (threads per thread block)")
			}
			in := occupancy.Input{BlockSize: f.blockSize, RegistersPerThread: f.registers, SharedMemoryPerBlock: f.sharedMemory, CarveoutKiB: f.carveout}
			r, err := computeOccupancy(d, in)
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

// computeOccupancy runs occupancy.Compute; every error it returns comes
// from the input (or an unsuitable device), so it is an input error.
func computeOccupancy(d *device.Description, in occupancy.Input) (occupancy.Result, error) {
	r, err := occupancy.Compute(d, in)
	if err == nil {
		return r, nil
	}
	switch {
	case in.BlockSize < 0 || in.BlockSize == 0 || in.BlockSize > d.MaxThreadsPerBlock:
		if d.IsCUDA() {
			return r, badInput("block size %d: must be 1..%d threads on %s (any count is allowed; partial warps count whole)", in.BlockSize, d.MaxThreadsPerBlock, d.ID)
		}
	case in.RegistersPerThread < 0:
		return r, badInput("registers %d: must be >= 0", in.RegistersPerThread)
	case in.SharedMemoryPerBlock < 0:
		return r, badInput("shared memory %d bytes: must be >= 0", in.SharedMemoryPerBlock)
	case errors.Is(err, occupancy.ErrRegisters):
		return r, badInput("registers %d: above the %d registers per thread of %s (compute capability %d.%d)", in.RegistersPerThread, d.MaxRegistersPerThread, d.ID, d.ComputeMajor, d.ComputeMinor)
	case errors.Is(err, occupancy.ErrSharedMemory):
		return r, badInput("shared memory %d bytes: above the opt-in maximum of %d bytes per thread block on %s", in.SharedMemoryPerBlock, d.SharedMemoryPerBlockOptin, d.ID)
	}
	return r, inputError{err}
}

// occupancyBatch reads CSV block_size,registers,shared_memory from r and
// writes each row back with active_blocks_per_sm,occupancy,limiter.
// Errors name the line of the bad row.
func occupancyBatch(r io.Reader, w io.Writer, d *device.Description, carveout int) error {
	cr := csv.NewReader(bounded.Reader(r, bounded.Text, "standard input", "a --batch CSV"))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	// Buffered whole, so a bad row leaves no partial output.
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	header := false
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// A parse error (an unterminated quote) leaves no record:
			// FieldPos would panic.
			return badInput("--batch: %v", err)
		}
		line, _ := cr.FieldPos(0)
		if !header {
			want := []string{"block_size", "registers", "shared_memory"}
			if len(rec) != 3 || strings.TrimSpace(rec[0]) != want[0] || strings.TrimSpace(rec[1]) != want[1] || strings.TrimSpace(rec[2]) != want[2] {
				return badInput("--batch: line %d: header %q, want block_size,registers,shared_memory", line, strings.Join(rec, ","))
			}
			header = true
			if err := cw.Write(append(want, "active_blocks_per_sm", "occupancy", "limiter")); err != nil {
				return err
			}
			continue
		}
		if len(rec) != 3 {
			return badInput("--batch: line %d: %d fields, want 3 (block_size,registers,shared_memory)", line, len(rec))
		}
		var v [3]int
		for i, s := range rec {
			if v[i], err = strconv.Atoi(strings.TrimSpace(s)); err != nil {
				return badInput("--batch: line %d: %s %q is not an integer", line, []string{"block_size", "registers", "shared_memory"}[i], s)
			}
		}
		res, err := computeOccupancy(d, occupancy.Input{BlockSize: v[0], RegistersPerThread: v[1], SharedMemoryPerBlock: v[2], CarveoutKiB: carveout})
		if err != nil {
			return inputError{fmt.Errorf("--batch: line %d: %w", line, err)}
		}
		out := []string{strconv.Itoa(v[0]), strconv.Itoa(v[1]), strconv.Itoa(v[2]),
			strconv.Itoa(res.ActiveBlocksPerSM), strconv.FormatFloat(res.Occupancy, 'f', -1, 64), string(res.Limiter)}
		if err := cw.Write(out); err != nil {
			return err
		}
	}
	if !header {
		return badInput("--batch: no input; want CSV with the header block_size,registers,shared_memory")
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
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
