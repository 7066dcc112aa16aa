package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/model"
)

// Profile prints a device profile (model.Profile): where it comes from,
// the instruction and shared-memory throughputs, L2 and the launch, the
// global-memory throughput by occupancy, and, when spec is given, each
// headline figure against the specification's (measured ÷ specified).
func Profile(w io.Writer, p model.Profile, spec *model.Profile) {
	who := p.Name
	if p.UUID != "" {
		who += " (" + p.UUID + ")"
	}
	fmt.Fprintf(w, "device profile of %s: %s", who, p.Source)
	if p.Date != "" {
		fmt.Fprintf(w, " %s", p.Date)
	}
	fmt.Fprintf(w, ", SM clock %.0f MHz, memory clock %.0f MHz\n", p.SMClockMHz, p.MemClockMHz)
	ratio := func(got, want float64) string {
		if spec == nil || want <= 0 {
			return ""
		}
		return fmt.Sprintf(" (%.2f of %.0f specified)", got/want, want)
	}
	var s model.Profile
	if spec != nil {
		s = *spec
	}
	fmt.Fprintf(w, "FP32   %10.0f GFLOP/s%s\n", p.FP32GFLOPS, ratio(p.FP32GFLOPS, s.FP32GFLOPS))
	fmt.Fprintf(w, "FP64   %10.0f GFLOP/s%s\n", p.FP64GFLOPS, ratio(p.FP64GFLOPS, s.FP64GFLOPS))
	fmt.Fprintf(w, "INT32  %10.0f Gop/s (multiply-add)%s\n", p.Int32GOPS, ratio(p.Int32GOPS, s.Int32GOPS))
	fmt.Fprintf(w, "SFU    %10.0f Gop/s (sin.approx)%s\n", p.SFUGOPS, ratio(p.SFUGOPS, s.SFUGOPS))
	fmt.Fprintf(w, "shared %10.0f GB/s without bank conflicts%s; 32-way conflicts %.1f× slower\n", p.SharedGBs, ratio(p.SharedGBs, s.SharedGBs), p.BankConflictSlowdown)
	if p.L2GBs > 0 {
		fmt.Fprintf(w, "L2     %10.0f GB/s (loads of a working set L2 holds)\n", p.L2GBs)
	}
	fmt.Fprintf(w, "launch %10.2f µs (an empty kernel)\n", p.LaunchOverheadUs)
	if p.BlockNs > 0 {
		fmt.Fprintf(w, "blocks %10.1f ns a thread block per SM (the SMs' block scheduling)\n", p.BlockNs)
	}
	if len(p.PowerReadings) == 0 && p.FP32PowerW > 0 {
		fmt.Fprintf(w, "power  idle %.0f W, FP32 %.0f W, DRAM reads at full occupancy %.0f W (board, mean over an energy window)\n", p.IdlePowerW, p.FP32PowerW, p.DRAMPowerW)
	}
	fmt.Fprintln(w, "global memory by occupancy (256-thread blocks; scattered: one float per 32-byte sector, GB/s of sectors moved):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  blocks per SM\toccupancy\tread (GB/s)\tread 4-byte (GB/s)\twrite (GB/s)\tscattered (GB/s)\tcopy (GB/s)\tshared (GB/s)")
	for _, m := range p.Memory {
		fmt.Fprintf(tw, "  %d\t%.3f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\n", m.BlocksPerSM, m.Occupancy, m.ReadGBs, m.Read4GBs, m.WriteGBs, m.StridedGBs, m.CopyGBs, m.SharedGBs)
	}
	tw.Flush()
	profilePower(w, p)
	if spec != nil && len(p.Memory) > 0 && len(s.Memory) > 0 {
		best := 0.0
		for _, m := range p.Memory {
			best = max(best, m.ReadGBs)
		}
		fmt.Fprintf(w, "DRAM read at best %.0f GB/s%s\n", best, ratio(best, s.Memory[len(s.Memory)-1].ReadGBs))
	}
}

// profilePower prints a profile's power readings, each against the power
// model fitted to them (model.FitPowerModel), and the fitted
// coefficients.
func profilePower(w io.Writer, p model.Profile) {
	if len(p.PowerReadings) == 0 {
		return
	}
	fmt.Fprintln(w, "board power (an energy window each; activity as fractions of the peak at the clock: SMs holding blocks, issue, shared-memory loads, DRAM, of it stores):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  reading\tSM clock (MHz)\tbusy\tissue\tshared\tDRAM\tstores\tmeasured (W)\tfitted (W)")
	for i, r := range p.PowerReadings {
		name := r.Name
		if r.Check {
			name += " (held out)"
		}
		fit := ""
		if p.PowerFit != nil && i < len(p.PowerFit.Residuals) {
			res := p.PowerFit.Residuals[i]
			fit = fmt.Sprintf("%.1f (%+.1f %%)", r.PowerW*(1+res), 100*res)
		}
		a := r.Activity
		fmt.Fprintf(tw, "  %s\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.1f\t%s\n", name, r.SMClockMHz, a.Busy, a.Compute, a.Shared, a.Memory, a.MemoryWrite, r.PowerW, fit)
	}
	tw.Flush()
	if f := p.PowerFit; f != nil {
		m := f.Model
		fmt.Fprintf(w, "power model fitted (of the dynamic range TDP − idle; RMS %.1f %%): clocked idle %.3f, busy %.3f, issue %.3f, shared %.3f, DRAM %.3f, stores %.3f; voltage flat below %.2f of the highest clock at %.2f\n",
			100*f.RMS, m.ClockedIdle, m.Busy, m.Compute, m.OnChip, m.Memory, m.MemoryWrite, m.KneeFraction, m.MinVoltage)
	}
}

// PowerAgainst prints the calibrated power model of d
// (model.PowerModelFor, what the simulated GPU draws) against measured
// readings: model ÷ measured − 1 for each. Nothing without readings.
func PowerAgainst(w io.Writer, d *device.Description, readings []model.PowerReading) {
	if len(readings) == 0 {
		return
	}
	m := model.PowerModelFor(d)
	fmt.Fprintf(w, "gtune's power model for %s (the simulator's) against these readings:", d.ID)
	for i, r := range readings {
		p, _ := m.BoardPower(d, r.SMClockMHz, r.MemClockMHz, r.Activity)
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(w, "%s %s %+.1f %%", sep, r.Name, 100*(p/r.PowerW-1))
	}
	fmt.Fprintln(w)
}
