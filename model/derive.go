package model

import (
	"math"
	"slices"
	"strings"

	"github.com/gtune/gtune/device"
)

// Measured is a measured device profile (Source "measured") with the
// device-database entry of the GPU it was measured on.
type Measured struct {
	Profile Profile
	Device  *device.Description
}

// The Sources of a derived profile (DeriveProfile).
const (
	// SourceDerivedFamily: scaled from measured profiles of GPUs of the
	// same architecture.
	SourceDerivedFamily = "derived from its family"
	// SourceDerivedOther: no GPU of its architecture was measured; scaled
	// from measured profiles of other architectures.
	SourceDerivedOther = "derived from other architectures"
)

// saturatedFraction: a memory path whose throughput at the fewest
// resident blocks is this fraction of its highest or more is taken as
// saturated from the start (stores, scattered loads on Hopper), so it has
// no latency-bound part to scale.
const saturatedFraction = 0.97

// DeriveProfile is the profile of target, a GPU nobody measured, from
// measured profiles of other GPUs: those of target's architecture where
// there are any (SourceDerivedFamily), else all of them
// (SourceDerivedOther). It answers the projection's need of
// ../shared/papers/performance-projection-heterogeneous-gpus.md section
// IV-B (a profile per GPU) for GPUs not at hand: a specification profile
// beside a measured one ranks the kind of profile, not the GPU (issue 49:
// at 1-2 resident blocks per SM the H200's specification profile gave
// less global-memory throughput than the H100's measured one).
//
// Each quantity is the target's specification times what the sources
// achieved of theirs (the median over the sources):
//   - FP32, FP64, INT32, special functions, shared memory, the SM clock:
//     measured ÷ specification (SpecProfile);
//   - bank-conflict slowdown and launch overhead: as measured;
//   - L2: scaled by SMs × SM clock;
//   - board powers: scaled by the TDP;
//   - shared memory at each occupancy: measured ÷ the source's
//     specification at the same blocks per SM;
//   - each global-memory path (loads, stores, scattered loads) by
//     occupancy: min(P, K·b) at b resident 256-thread blocks per SM, P the
//     source's highest throughput scaled by the DRAM bandwidth, K its
//     throughput at the fewest blocks per block (latency-bound: bytes in
//     flight ÷ latency) scaled by SMs and by the memory clock (a DRAM
//     latency of so many memory-clock cycles); a path saturated at the
//     fewest blocks (saturatedFraction) is P at every occupancy.
//
// ok is false, and the profile target's SpecProfile, where measured holds
// no usable profile.
func DeriveProfile(target *device.Description, measured []Measured) (p Profile, ok bool) {
	spec := SpecProfile(target)
	src := sourcesFor(target, measured)
	if len(src) == 0 {
		return spec, false
	}
	p = spec
	p.Source = SourceDerivedFamily
	if !sameArchitecture(target, src[0].Device) {
		p.Source = SourceDerivedOther
	}
	specs := make([]Profile, len(src))
	for i, m := range src {
		specs[i] = SpecProfile(m.Device)
		p.DerivedFrom = append(p.DerivedFrom, strings.TrimSpace(m.Profile.Device+" "+m.Profile.UUID))
	}
	// med is the median over the sources of f(measured, its spec, its
	// device), skipping sources that have no value (0 or not finite).
	med := func(f func(m Profile, s Profile, d *device.Description) float64) float64 {
		var xs []float64
		for i, m := range src {
			if v := f(m.Profile, specs[i], m.Device); v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
				xs = append(xs, v)
			}
		}
		return median(xs)
	}
	eff := func(get func(Profile) float64) float64 {
		return get(spec) * med(func(m, s Profile, _ *device.Description) float64 { return get(m) / get(s) })
	}
	p.FP32GFLOPS = eff(func(q Profile) float64 { return q.FP32GFLOPS })
	p.FP64GFLOPS = eff(func(q Profile) float64 { return q.FP64GFLOPS })
	p.Int32GOPS = eff(func(q Profile) float64 { return q.Int32GOPS })
	p.SFUGOPS = eff(func(q Profile) float64 { return q.SFUGOPS })
	p.SharedGBs = eff(func(q Profile) float64 { return q.SharedGBs })
	p.SMClockMHz = eff(func(q Profile) float64 { return q.SMClockMHz })
	p.BankConflictSlowdown = med(func(m, _ Profile, _ *device.Description) float64 { return m.BankConflictSlowdown })
	p.LaunchOverheadUs = med(func(m, _ Profile, _ *device.Description) float64 { return m.LaunchOverheadUs })
	// Block scheduling in SM cycles, as measured, at this GPU's clock.
	if c := med(func(m, _ Profile, _ *device.Description) float64 { return m.BlockNs * m.SMClockMHz }); c > 0 && p.SMClockMHz > 0 {
		p.BlockNs = c / p.SMClockMHz
	}
	smRate := func(d *device.Description) float64 { return float64(d.SMs) * float64(d.MaxCoreClockMHz()) }
	p.L2GBs = med(func(m, _ Profile, d *device.Description) float64 { return m.L2GBs * smRate(target) / smRate(d) })
	tdp := func(get func(Profile) float64) float64 {
		return med(func(m, _ Profile, d *device.Description) float64 { return get(m) * target.TDPW / d.TDPW })
	}
	p.IdlePowerW = tdp(func(q Profile) float64 { return q.IdlePowerW })
	p.FP32PowerW = tdp(func(q Profile) float64 { return q.FP32PowerW })
	p.DRAMPowerW = tdp(func(q Profile) float64 { return q.DRAMPowerW })
	for i := range p.Memory {
		b := float64(p.Memory[i].BlocksPerSM)
		path := func(get func(MemoryPoint) float64) float64 {
			return med(func(m, _ Profile, d *device.Description) float64 { return scaledPath(m, d, target, b, get) })
		}
		p.Memory[i].ReadGBs = path(func(q MemoryPoint) float64 { return q.ReadGBs })
		p.Memory[i].WriteGBs = path(func(q MemoryPoint) float64 { return q.WriteGBs })
		p.Memory[i].StridedGBs = path(func(q MemoryPoint) float64 { return q.StridedGBs })
		p.Memory[i].CopyGBs = path(func(q MemoryPoint) float64 { return q.CopyGBs })
		p.Memory[i].Read4GBs = path(func(q MemoryPoint) float64 { return q.Read4GBs })
		// By occupancy, not by blocks per SM: a GPU of 1,536 threads an
		// SM has a point at 6 blocks that one of 2,048 lacks (the RTX
		// A6000's came out 0 from the H100's, its shared memory 4×
		// too slow at occupancy 0.92).
		p.Memory[i].SharedGBs = spec.SharedGBs * med(func(m, s Profile, _ *device.Description) float64 {
			return m.SharedGBsAt(p.Memory[i].Occupancy) / s.SharedGBs
		})
	}
	return p, true
}

// scaledPath is one memory path of m (measured on d) at b resident blocks
// per SM of target, GB/s: min(P, K·b) (DeriveProfile); 0 where m has no
// points for it.
func scaledPath(m Profile, d, target *device.Description, b float64, get func(MemoryPoint) float64) float64 {
	if len(m.Memory) == 0 || d.MemoryBandwidthGBs <= 0 || d.MemoryClockMHz <= 0 || d.SMs <= 0 {
		return 0
	}
	peak := 0.0
	for _, q := range m.Memory {
		peak = max(peak, get(q))
	}
	first := m.Memory[0]
	p := peak * target.MemoryBandwidthGBs / d.MemoryBandwidthGBs
	if get(first) >= saturatedFraction*peak || first.BlocksPerSM <= 0 {
		return p
	}
	k := get(first) / float64(first.BlocksPerSM) * float64(target.SMs) / float64(d.SMs) * float64(target.MemoryClockMHz) / float64(d.MemoryClockMHz)
	return math.Min(p, k*b)
}

// sourcesFor is the measured profiles DeriveProfile scales: target's own
// measurements are never among them (a GPU that was measured has its
// profile), those of its architecture where there are any, else all.
func sourcesFor(target *device.Description, measured []Measured) []Measured {
	var family, other []Measured
	for _, m := range measured {
		if m.Device == nil || m.Profile.Source != "measured" || m.Device.ID == target.ID {
			continue
		}
		if sameArchitecture(target, m.Device) {
			family = append(family, m)
		} else {
			other = append(other, m)
		}
	}
	if len(family) > 0 {
		return family
	}
	return other
}

// sameArchitecture: the same architecture name, or where either has none,
// the same compute capability.
func sameArchitecture(a, b *device.Description) bool {
	if a.Architecture != "" && b.Architecture != "" {
		return strings.EqualFold(a.Architecture, b.Architecture)
	}
	return a.ComputeMajor == b.ComputeMajor && a.ComputeMinor == b.ComputeMinor
}

// median of xs (0 for none); xs is reordered.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
