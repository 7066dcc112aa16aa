package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/occupancy"
)

// OccupancyDoc is `gtune occupancy --json`'s document: the device, the
// launch (threads per block, registers per thread, shared memory per
// block in bytes, carveout in KiB), active blocks and warps per SM, the
// occupancy (0..1) and the limiting resources.
type OccupancyDoc struct {
	Device            DeviceRef `json:"device"`
	ComputeCapability string    `json:"compute_capability"`
	BlockSize         int       `json:"block_size"`
	Registers         int       `json:"registers"`
	SharedMemory      int       `json:"shared_memory"`
	CarveoutKiB       int       `json:"carveout_kib"`
	ActiveBlocksPerSM int       `json:"active_blocks_per_sm"`
	ActiveWarpsPerSM  int       `json:"active_warps_per_sm"`
	MaxWarpsPerSM     int       `json:"max_warps_per_sm"`
	Occupancy         float64   `json:"occupancy"`
	Limiter           string    `json:"limiter"`
	Limiters          []string  `json:"limiters"`
	// BlocksBy are the per-resource limits on blocks per SM; -1: unlimited.
	BlocksBy map[string]int `json:"blocks_by"`
}

// OccupancyJSON is the occupancy of launch in on d (result r) as an
// OccupancyDoc.
func OccupancyJSON(d *device.Description, in occupancy.Input, r occupancy.Result) OccupancyDoc {
	lim := func(n int) int {
		if n == int(^uint(0)>>1) {
			return -1
		}
		return n
	}
	doc := OccupancyDoc{
		Device: EntryRef(d), ComputeCapability: fmt.Sprintf("%d.%d", d.ComputeMajor, d.ComputeMinor),
		BlockSize: in.BlockSize, Registers: in.RegistersPerThread, SharedMemory: in.SharedMemoryPerBlock, CarveoutKiB: in.CarveoutKiB,
		ActiveBlocksPerSM: r.ActiveBlocksPerSM, ActiveWarpsPerSM: r.ActiveWarpsPerSM, MaxWarpsPerSM: d.MaxWarpsPerSM,
		Occupancy: r.Occupancy, Limiter: string(r.Limiter),
		BlocksBy: map[string]int{
			string(occupancy.LimitWarps): lim(r.BlocksLimitWarps), string(occupancy.LimitRegisters): lim(r.BlocksLimitRegisters),
			string(occupancy.LimitSharedMemory): lim(r.BlocksLimitSharedMemory), string(occupancy.LimitBlocks): lim(r.BlocksLimitBlocks),
			string(occupancy.LimitBarriers): lim(r.BlocksLimitBarriers),
		},
	}
	for _, l := range r.Limiters {
		doc.Limiters = append(doc.Limiters, string(l))
	}
	return doc
}

// Occupancy prints the occupancy of launch in on d (result r): active
// blocks and warps per SM, occupancy and the limiter.
func Occupancy(w io.Writer, d *device.Description, in occupancy.Input, r occupancy.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "device\t%s (%s, CC %d.%d)\n", d.ID, d.Name, d.ComputeMajor, d.ComputeMinor)
	fmt.Fprintf(tw, "launch\t%d threads/block, %d registers/thread, %d B shared memory/block\n", in.BlockSize, in.RegistersPerThread, in.SharedMemoryPerBlock)
	fmt.Fprintf(tw, "active blocks per SM\t%d\n", r.ActiveBlocksPerSM)
	fmt.Fprintf(tw, "active warps per SM\t%d of %d\n", r.ActiveWarpsPerSM, d.MaxWarpsPerSM)
	fmt.Fprintf(tw, "occupancy\t%.4f (%.1f %%)\n", r.Occupancy, 100*r.Occupancy)
	also := ""
	if len(r.Limiters) > 1 {
		var rest []string
		for _, l := range r.Limiters[1:] {
			rest = append(rest, string(l))
		}
		also = " (also " + strings.Join(rest, ", ") + ")"
	}
	fmt.Fprintf(tw, "limiter\t%s%s\n", r.Limiter, also)
	tw.Flush()
}
