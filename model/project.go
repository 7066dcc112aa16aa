package model

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/occupancy"
)

// Projection is a kernel's projected time on one GPU
// (performance-projection-heterogeneous-gpus.md section IV-D): the time
// of each component at the device profile's throughput for the kernel's
// occupancy, the kernel bound by the longest, t = max(t_compute,
// t_global, t_local), plus the launch.
type Projection struct {
	Device string `json:"device"`
	Name   string `json:"name"`
	// Source is the profile's (Profile.Source): "measured" or
	// "specification".
	Source string `json:"source"`
	// Occupancy is the resident warps per SM the kernel achieves, over
	// the SM's maximum (theoretical occupancy, less for a grid smaller
	// than one wave); Waves the waves of thread blocks.
	Occupancy float64 `json:"occupancy"`
	Waves     int     `json:"waves"`
	// ComputeMs, GlobalMs and SharedMs are the components' times over the
	// whole grid (with the last wave's quantisation), ms.
	ComputeMs float64 `json:"compute_ms"`
	GlobalMs  float64 `json:"global_ms"`
	SharedMs  float64 `json:"shared_ms"`
	// BlocksMs is the SMs' scheduling of the grid's thread blocks, ms:
	// ⌈blocks ÷ SMs⌉ · Profile.BlockNs, what a grid of many small blocks
	// takes however little each does.
	BlocksMs float64 `json:"blocks_ms,omitempty"`
	// TimeMs is the projected time of one launch: the longest component
	// plus the profile's launch time, ms.
	TimeMs float64 `json:"time_ms"`
	// Bound names the longest component: "compute", "global", "shared",
	// "blocks", or "launch" for a kernel shorter than its launch.
	Bound string `json:"bound"`
	// From and MeasuredMs, set for a projection anchored on a measured
	// run (Anchored), are the GPU it ran on (device id) and its measured
	// time per launch, ms; TimeMs is then Anchored's.
	From       string  `json:"from,omitempty"`
	MeasuredMs float64 `json:"measured_ms,omitempty"`
}

// ErrNoWork is returned by Project for a kernel whose work is unknown (no
// operation and no byte to move).
var ErrNoWork = errors.New("model: the kernel's work is unknown (no FLOP, operation or byte)")

// Project projects one launch of work w with the job's geometry on the
// GPU described by d (its occupancy rules) and profiled by p (section
// IV-D of performance-projection-heterogeneous-gpus.md):
//
//	occ       = resident warps per SM ÷ the maximum (section IV-C's
//	            occupancy scaling), from the theoretical occupancy and,
//	            for a grid of less than one wave, its share of it
//	t_compute = Σ_i instructions_i / throughput_i · 1/h(occ)
//	t_global  = bytes / throughput_global(occ)      (the profile's curve)
//	t_local   = shared bytes · conflict ways / throughput_shared · 1/h(occ)
//	t_blocks  = ⌈blocks / SMs⌉ · BlockNs            (block scheduling)
//	t         = max(max(t_compute, t_global, t_local) · q, t_blocks) + launch
//
// with h(occ) = min(1, occ/0.25), the latency hiding of arithmetic this
// package's Prediction assumes (the paper's profiles give compute
// throughput from the specifications, without an occupancy curve), and
// q = ⌈blocks/W⌉·W/blocks the last wave's quantisation (W blocks per
// wave). The DRAM bytes are taken at the read curve: Work does not split
// loads from stores. Errors: ErrNoWork, a *LaunchError for a geometry the
// GPU refuses.
func Project(d *device.Description, p Profile, w *Work, j Geometry) (Projection, error) {
	out := Projection{Device: p.Device, Name: p.Name, Source: p.Source}
	if w == nil || w.Flops+w.FP64Flops+w.FP64TensorFlops+w.IntOps+w.SFUOps+w.Bytes+w.SharedBytes <= 0 {
		return out, ErrNoWork
	}
	threads := j.Block[0] * j.Block[1] * j.Block[2]
	blocks := j.Grid[0] * j.Grid[1] * j.Grid[2]
	if threads <= 0 || blocks <= 0 {
		return out, &LaunchError{fmt.Sprintf("invalid argument: grid %v and block %v must be positive in every dimension", j.Grid, j.Block)}
	}
	occ, err := occupancy.Compute(d, occupancy.Input{BlockSize: threads, RegistersPerThread: w.Registers, SharedMemoryPerBlock: w.SharedMemory + j.DynamicSharedBytes})
	if err != nil {
		return out, &LaunchError{"invalid argument: " + err.Error()}
	}
	if occ.ActiveBlocksPerSM == 0 {
		return out, &LaunchError{fmt.Sprintf("too many resources requested for launch: block of %d threads, %d registers each", threads, w.Registers)}
	}
	perWave := d.SMs * occ.ActiveBlocksPerSM
	out.Waves = (blocks + perWave - 1) / perWave
	out.Occupancy = occ.Occupancy
	q := 1.0
	if blocks >= perWave {
		q = float64(out.Waves*perWave) / float64(blocks)
	} else {
		out.Occupancy = occ.Occupancy * float64(blocks) / float64(perWave)
	}
	h := math.Min(1, out.Occupancy/computeSaturationOccupancy)
	var tc float64
	// The probe measures no tensor core: FP64 tensor work runs at d's
	// specified rate.
	tensor := fp64TensorGFLOPS(d)
	for _, c := range [...]struct{ n, gps float64 }{{w.Flops, p.FP32GFLOPS}, {w.FP64Flops, p.FP64GFLOPS}, {w.FP64TensorFlops, tensor}, {w.IntOps, p.Int32GOPS}, {w.SFUOps, p.SFUGOPS}} {
		if c.n <= 0 {
			continue
		}
		if c.gps <= 0 {
			return out, fmt.Errorf("model: the profile of %s has no throughput for an instruction class the kernel uses", p.Device)
		}
		tc += c.n / (c.gps * 1e9 * h)
	}
	out.ComputeMs = tc * 1e3 * q
	if w.Bytes > 0 {
		t, err := globalSeconds(p, w, out.Occupancy)
		if err != nil {
			return out, err
		}
		out.GlobalMs = t * 1e3 * q
	}
	if w.SharedBytes > 0 {
		if p.SharedGBs <= 0 {
			return out, fmt.Errorf("model: the profile of %s has no shared-memory throughput", p.Device)
		}
		// The measured curve where the profile has one, else the rate at
		// full occupancy with the model's latency hiding.
		rate := p.SharedGBs * h
		if c := p.SharedGBsAt(out.Occupancy); c > 0 {
			rate = c
		}
		out.SharedMs = w.SharedBytes * float64(max(w.SharedConflict, 1)) / (rate * 1e9) * 1e3 * q
	}
	if p.BlockNs > 0 {
		out.BlocksMs = math.Ceil(float64(blocks)/float64(d.SMs)) * p.BlockNs / 1e6
	}
	launch := p.LaunchOverheadUs / 1e3
	kernel := out.KernelMs()
	out.TimeMs = kernel + launch
	switch {
	case kernel < launch:
		out.Bound = "launch"
	case kernel == out.ComputeMs:
		out.Bound = "compute"
	case kernel == out.GlobalMs:
		out.Bound = "global"
	case kernel == out.SharedMs:
		out.Bound = "shared"
	default:
		out.Bound = "blocks"
	}
	return out, nil
}

// KernelMs is the projection's longest component, ms: the kernel's time
// without its launch.
func (p Projection) KernelMs() float64 {
	return max(p.ComputeMs, p.GlobalMs, p.SharedMs, p.BlocksMs)
}

// Rank orders projections fastest first (ties by device id), the device
// selection of section IV ("to accurately rank the GPU devices").
func Rank(ps []Projection) {
	sort.SliceStable(ps, func(a, b int) bool {
		if ps[a].TimeMs != ps[b].TimeMs {
			return ps[a].TimeMs < ps[b].TimeMs
		}
		return ps[a].Device < ps[b].Device
	})
}

// Anchored projects a kernel measured on one GPU to another: measuredMs is
// its time per launch on the GPU of from (the model's projection there),
// to the projection on the target GPU. The part of the measured kernel
// time that the model explains (from's longest component) scales as the
// model says (to's longest component); the rest, which the model does not
// see (latency, instructions the kernel's work does not declare, cache
// traffic counted as DRAM), scales as the arithmetic does (to.ComputeMs ÷
// from.ComputeMs, 1 without arithmetic), the GPUs' SMs doing it; where the
// model explains more than was measured, the measurement scales by the
// longest components' ratio. The launch is the target's. This is the
// projection "from a run on another GPU" (Habitat, USENIX ATC'21, scales
// a measured kernel by the GPUs' ratios in the same spirit); on the
// example kernels it cut the median error of the H100↔H200 ratio from
// 17 % to under 9 % (BENCHMARKS.md, "Projection across GPUs").
func Anchored(measuredMs float64, from, to Projection) float64 {
	kFrom, kTo := from.KernelMs(), to.KernelMs()
	launchFrom, launchTo := from.TimeMs-kFrom, to.TimeMs-kTo
	kernel := measuredMs - launchFrom
	if kernel <= 0 || kFrom <= 0 {
		return measuredMs - launchFrom + launchTo
	}
	if kernel <= kFrom {
		return kernel*kTo/kFrom + launchTo
	}
	cs := 1.0
	if from.ComputeMs > 0 && to.ComputeMs > 0 {
		cs = to.ComputeMs / from.ComputeMs
	}
	return kTo + (kernel-kFrom)*cs + launchTo
}

// globalSeconds is the time of w's global-memory traffic at occupancy occ
// over profile p, s: its loads at the profile's load throughput (for loads
// narrower than a float4, LoadWidth, between its 4-byte and its 16-byte
// loads' where it measured both) and its
// stores (WriteBytes) at its store throughput, one after the other on the
// DRAM's bus, slowed where the profile measured a copy (CopyGBs) by what
// mixing them cost there: the copy's time over its loads' and stores'
// apart, to the power 2·min(loads, stores)/bytes (all of it for a copy's
// half and half, none for loads or stores alone); where the work says
// what goes through L2 (L2Bytes) and the profile has an L2 throughput,
// the slower of that and the DRAM's (section IV-B's memory paths, issue
// 49's caches). Errors: a profile without load throughput.
func globalSeconds(p Profile, w *Work, occ float64) (float64, error) {
	rd := p.ReadGBsAt(occ)
	if rd <= 0 {
		return 0, fmt.Errorf("model: the profile of %s has no global-memory throughput", p.Device)
	}
	if r4 := p.Read4GBsAt(occ); r4 > 0 && w.LoadWidth > 0 && w.LoadWidth < 16 {
		// Between the 4-byte and the 16-byte loads' curves by the width.
		f := (max(w.LoadWidth, 4) - 4) / 12
		rd = r4 + f*(rd-r4)
	}
	wr := p.WriteGBsAt(occ)
	if wr <= 0 {
		wr = rd
	}
	stores := math.Min(max(w.WriteBytes, 0), w.Bytes)
	t := (w.Bytes-stores)/(rd*1e9) + stores/(wr*1e9)
	if cp := p.CopyGBsAt(occ); cp > 0 && stores > 0 && stores < w.Bytes {
		mixing := (2 / cp) / (1/rd + 1/wr) // a copy's time over its halves' apart
		t *= math.Pow(mixing, 2*math.Min(stores, w.Bytes-stores)/w.Bytes)
	}
	if w.L2Bytes > 0 && p.L2GBs > 0 {
		t = math.Max(t, w.L2Bytes/(p.L2GBs*1e9))
	}
	return t, nil
}
