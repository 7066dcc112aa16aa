package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
)

// DeviceDatabase prints one line per database GPU: clocks in MHz (base/
// boost, memory), power limits min/default/max in W, peak FP32 in GFLOP/s,
// bandwidth in GB/s. AMD GPUs show compute units and no compute capability.
//
// profiles, by device id, says which GPUs have a measured device profile
// (gtune probe) and since when; a column "profile" shows it ("measured
// DATE", else "specification": a projection uses the figures above) when
// profiles is not nil.
func DeviceDatabase(w io.Writer, db []*device.Description, profiles map[string]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "id	name	architecture	cc	SMs/CUs	SM clock base/boost (MHz)	mem clock (MHz)	power limit min/default/max (W)	peak FP32 (GFLOP/s)	bandwidth (GB/s)"
	if profiles != nil {
		head += "	profile"
	}
	fmt.Fprintln(tw, head)
	for _, d := range db {
		cc, units := fmt.Sprintf("%d.%d", d.ComputeMajor, d.ComputeMinor), fmt.Sprintf("%d", d.SMs)
		if !d.IsCUDA() {
			cc, units = "-", fmt.Sprintf("%d CUs", d.ComputeUnits)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%d\t%g/%g/%g\t%g\t%g", d.ID, d.Name, d.Architecture, cc, units,
			d.BaseClockMHz, d.BoostClockMHz, d.MemoryClockMHz, d.PowerLimitMinW, d.PowerLimitDefaultW, d.PowerLimitMaxW,
			d.PeakFP32GFLOPS, d.MemoryBandwidthGBs)
		if profiles != nil {
			p, ok := profiles[d.ID]
			if !ok {
				p = "specification"
			}
			fmt.Fprintf(tw, "\t%s", p)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// Devices prints the GPUs a backend found, one line each: index, name,
// UUID, compute capability, SMs, memory (GiB), clocks (MHz), power limits
// (W) and backend.
func Devices(w io.Writer, devs []backend.DeviceInfo, simIDs []string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	first := "#"
	if simIDs != nil {
		// The simulator has one GPU per run, chosen by its model: the
		// column is what --sim-device takes, not a device ordinal.
		first = "--sim-device"
	}
	fmt.Fprintln(tw, first+"\tname\tuuid\tcc\tSMs\tmemory (GiB)\tSM clock (MHz)\tmax SM clock (MHz)\tmem clock (MHz)\tpower limit (W)\tmin–max (W)\tbackend")
	for i, d := range devs {
		id := strconv.Itoa(i)
		if i < len(simIDs) {
			id = simIDs[i]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d.%d\t%d\t%.1f\t%d\t%d\t%d\t%.0f\t%.0f–%.0f\t%s\n", id, d.Name, d.UUID,
			d.ComputeMajor, d.ComputeMinor, d.SMs, float64(d.MemoryBytes)/(1<<30), d.SMClockMHz, d.MaxSMClockMHz,
			d.MemClockMHz, d.PowerLimitW, d.MinPowerLimitW, d.MaxPowerLimitW, d.Backend)
	}
	tw.Flush()
}

// DeviceDatabaseJSON writes db as a JSON array: each description with
// "profile", where its projection's figures come from (profiles[id]:
// "measured DATE", else "specification"; see DeviceDatabase).
func DeviceDatabaseJSON(w io.Writer, db []*device.Description, profiles map[string]string) error {
	type entry struct {
		*device.Description
		Profile string `json:"profile"`
	}
	out := make([]entry, len(db))
	for i, d := range db {
		out[i] = entry{d, cmp.Or(profiles[d.ID], "specification")}
	}
	return writeIndentedJSON(w, out)
}

// DevicesJSON writes the GPUs a backend found as a JSON array of
// DeviceRef, the device-database id set for the simulated ones (simIDs,
// in the order of devs).
func DevicesJSON(w io.Writer, devs []backend.DeviceInfo, simIDs []string) error {
	refs := make([]DeviceRef, len(devs))
	for i, d := range devs {
		refs[i] = LocalRef(d)
		if i < len(simIDs) {
			refs[i].ID = simIDs[i]
		}
	}
	return writeIndentedJSON(w, refs)
}

func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
