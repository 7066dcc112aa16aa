package model

import (
	"errors"
	"math"
	"testing"

	"github.com/gtune/gtune/device"
)

func geometry(grid, block int) Geometry {
	return Geometry{Grid: [3]int{grid, 1, 1}, Block: [3]int{block, 1, 1}}
}

// Project's equations on hand-computed cases.
func TestProjectHandComputed(t *testing.T) {
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %.15g, want %.15g", what, got, want)
		}
	}
	// vector_add-like on the specification: 65,536 blocks of 256 threads,
	// 8 resident per SM (full occupancy), 1,056 per wave: 63 waves, the
	// last of 64 blocks, q = 63·1056/65536. DRAM at 3,352 GB/s.
	spec := SpecProfile(d)
	w := &Work{Flops: 1 << 26, Bytes: 3 << 30, Registers: 12}
	p, err := Project(d, spec, w, geometry(1<<16, 256))
	if err != nil {
		t.Fatal(err)
	}
	q := 63.0 * 1056 / 65536
	near("occupancy", p.Occupancy, 1)
	near("global", p.GlobalMs, float64(3<<30)/3352e9*1e3*q)
	near("compute", p.ComputeMs, float64(1<<26)/66900e9*1e3*q)
	near("time", p.TimeMs, p.GlobalMs+0.003)
	// 65,536 blocks: ⌈65536/132⌉ = 497 each SM, at 151 cycles of 1,980
	// MHz, under the DRAM's time.
	near("blocks", p.BlocksMs, 497*151/1980e3)
	// A million 32-thread blocks moving 512 MiB: 7,944 each SM take
	// longer than the DRAM does (at half its bandwidth: occupancy 0.5).
	b, err := Project(d, spec, &Work{Flops: 1 << 26, Bytes: 1 << 29, Registers: 12}, geometry(1<<20, 32))
	if err != nil {
		t.Fatal(err)
	}
	near("blocks", b.BlocksMs, 7944*151/1980e3)
	if b.Bound != "blocks" || b.TimeMs != b.BlocksMs+0.003 || b.GlobalMs >= b.BlocksMs {
		t.Errorf("a million small blocks: %+v; want bound by their scheduling", b)
	}
	if p.Waves != 63 || p.Bound != "global" || p.Source != "specification" {
		t.Errorf("%+v", p)
	}
	// A measured profile and one block per SM: occupancy 1/8 of the
	// theoretical, arithmetic at half its rate (h = 0.125/0.25), DRAM at
	// the curve's first point.
	m := Profile{Device: "h100_sxm", Source: "measured", FP32GFLOPS: 1e4, SharedGBs: 3e4, LaunchOverheadUs: 8,
		Memory: []MemoryPoint{{Occupancy: 0.125, ReadGBs: 2000}, {Occupancy: 1, ReadGBs: 3000}}}
	p, err = Project(d, m, &Work{Flops: 1e10, Bytes: 1e9, Registers: 32}, geometry(132, 256))
	if err != nil {
		t.Fatal(err)
	}
	near("occupancy", p.Occupancy, 0.125)
	near("compute", p.ComputeMs, 1e10/(1e4*1e9*0.5)*1e3)
	near("global", p.GlobalMs, 1e9/2000e9*1e3)
	near("time", p.TimeMs, 2+0.008)
	if p.Bound != "compute" || p.Waves != 1 {
		t.Errorf("%+v", p)
	}
	// Interpolated DRAM throughput half-way up the curve: 2,500 GB/s at
	// occupancy 0.5625 (594 blocks: 4.5 per SM).
	near("curve", m.ReadGBsAt(0.5625), 2500)
	// 32-way bank conflicts multiply shared-memory time by 32.
	p1, _ := Project(d, m, &Work{SharedBytes: 1e9, SharedConflict: 1}, geometry(1056, 256))
	p32, _ := Project(d, m, &Work{SharedBytes: 1e9, SharedConflict: 32}, geometry(1056, 256))
	near("shared", p1.SharedMs, 1e9/(3e4*1e9)*1e3)
	near("conflicts", p32.SharedMs, 32*p1.SharedMs)
	if p32.Bound != "shared" {
		t.Errorf("bound %s", p32.Bound)
	}
	if _, err := Project(d, m, &Work{}, geometry(1, 32)); !errors.Is(err, ErrNoWork) {
		t.Errorf("no work: %v", err)
	}
	if _, err := Project(d, m, &Work{Flops: 1}, geometry(1, 4096)); err == nil {
		t.Error("a block of 4,096 threads projected")
	}
	ps := []Projection{{Device: "b", TimeMs: 2}, {Device: "c", TimeMs: 1}, {Device: "a", TimeMs: 2}}
	Rank(ps)
	if ps[0].Device != "c" || ps[1].Device != "a" || ps[2].Device != "b" {
		t.Errorf("rank %+v", ps)
	}
}

// Anchored on hand-computed cases: the explained part scales by the
// model, the rest by the arithmetic, and an over-explained measurement by
// the longest components' ratio; the launch is the target's.
func TestAnchored(t *testing.T) {
	from := Projection{ComputeMs: 1, GlobalMs: 2, TimeMs: 2.01}
	to := Projection{ComputeMs: 0.5, GlobalMs: 1.5, TimeMs: 1.508}
	// Measured 3.01 ms: kernel 3 ms, the model explains 2 (global), 1 ms
	// unexplained at half the arithmetic time: 1.5 + 0.5 + 0.008.
	if got := Anchored(3.01, from, to); math.Abs(got-2.008) > 1e-12 {
		t.Errorf("under-explained: %v, want 2.008", got)
	}
	// Measured 1.01 ms: kernel 1 ms, less than the model's 2: scaled by
	// 1.5/2.
	if got := Anchored(1.01, from, to); math.Abs(got-0.758) > 1e-12 {
		t.Errorf("over-explained: %v, want 0.758", got)
	}
	// The same GPU: the measurement itself.
	if got := Anchored(3.01, from, from); math.Abs(got-3.01) > 1e-12 {
		t.Errorf("same GPU: %v", got)
	}
}

// Global memory through the caches: loads at the load throughput, stores
// at the store throughput, one after the other; the L2 traffic bounds it
// where the profile knows L2; work that says nothing of stores or L2 is
// all loads, as before.
func TestGlobalSeconds(t *testing.T) {
	p := Profile{Device: "x", L2GBs: 2000, Memory: []MemoryPoint{{BlocksPerSM: 1, Occupancy: 0.5, ReadGBs: 1000, WriteGBs: 500}}}
	for _, c := range []struct {
		w    Work
		want float64 // ms
	}{
		{Work{Bytes: 3e9}, 3},
		{Work{Bytes: 3e9, WriteBytes: 1e9}, 2 + 2},
		{Work{Bytes: 3e9, WriteBytes: 1e9, L2Bytes: 10e9}, 5},
		{Work{Bytes: 3e9, WriteBytes: 1e9, L2Bytes: 2e9}, 4},
	} {
		s, err := globalSeconds(p, &c.w, 0.5)
		if err != nil || math.Abs(s*1e3-c.want) > 1e-9 {
			t.Errorf("%+v: %v ms, %v; want %v ms", c.w, s*1e3, err, c.want)
		}
	}
	// A measured copy (500 GB/s of loads and stores) costs a third more
	// than its halves apart (1,000 and 500 GB/s): all of it at half and
	// half, the copy's own time; two thirds of it for vector_add's two
	// loads to a store; nothing for loads alone.
	p.Memory[0].CopyGBs = 500
	for _, c := range []struct {
		w    Work
		want float64 // ms
	}{
		{Work{Bytes: 2e9, WriteBytes: 1e9}, 4},
		{Work{Bytes: 3e9, WriteBytes: 1e9}, 4 * math.Pow(4.0/3, 2.0/3)},
		{Work{Bytes: 3e9}, 3},
	} {
		s, err := globalSeconds(p, &c.w, 0.5)
		if err != nil || math.Abs(s*1e3-c.want) > 1e-9 {
			t.Errorf("with a copy measured, %+v: %v ms, %v; want %v ms", c.w, s*1e3, err, c.want)
		}
	}
	// Narrow loads read the 4-byte curve (400 GB/s), a float2's halfway
	// to the float4's (1,000): 2.5, 1.43 and 1 ms for 1 GB.
	q := Profile{Device: "x", Memory: []MemoryPoint{{BlocksPerSM: 1, Occupancy: 0.5, ReadGBs: 1000, WriteGBs: 1000, Read4GBs: 400}}}
	for width, want := range map[float64]float64{4: 2.5, 10: 1 / 0.7, 16: 1, 0: 1} {
		s, err := globalSeconds(q, &Work{Bytes: 1e9, LoadWidth: width}, 0.5)
		if err != nil || math.Abs(s*1e3-want) > 1e-9 {
			t.Errorf("loads %v bytes wide: %v ms, %v; want %v ms", width, s*1e3, err, want)
		}
	}
	if _, err := globalSeconds(Profile{Device: "x"}, &Work{Bytes: 1}, 1); err == nil {
		t.Error("a profile without memory throughput gave a time")
	}
}

// Shared memory over a measured occupancy curve: the curve's rate at the
// kernel's occupancy, not the full-occupancy rate times the latency
// hiding the model assumes.
func TestProjectSharedCurve(t *testing.T) {
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	p := SpecProfile(d)
	w := &Work{SharedBytes: 1e9, Registers: 32}
	g := geometry(d.SMs, 256) // one block per SM: occupancy 0.125
	before, err := Project(d, p, w, g)
	if err != nil {
		t.Fatal(err)
	}
	// The specification: the full rate at half (0.125 / 0.25).
	if want := 1e9 / (p.SharedGBs * 1e9 * 0.5) * 1e3; math.Abs(before.SharedMs/want-1) > 1e-9 {
		t.Fatalf("shared %v ms without a curve, want %v", before.SharedMs, want)
	}
	for i := range p.Memory {
		p.Memory[i].SharedGBs = 1000 // measured: 1 TB/s at every occupancy
	}
	after, err := Project(d, p, w, g)
	if err != nil || math.Abs(after.SharedMs-1) > 1e-9 {
		t.Errorf("shared %v ms over the curve, %v; want 1 ms", after.SharedMs, err)
	}
}

// FP64 tensor-core work (a library's DGEMM) runs at the tensor cores'
// rate where the GPU has them, twice the FP64 CUDA cores' on the H100
// (66.9 against 33.5 TFLOP/s), and at the FP64 rate on a GPU without
// them (the V100): in the projection and in the simulated GPU's
// prediction alike, on a full-occupancy grid of one wave.
func TestFP64TensorRate(t *testing.T) {
	for _, c := range []struct {
		id         string
		tensor     float64 // GFLOP/s the tensor work runs at
		tensorFast bool
	}{{"h100_sxm", 66900, true}, {"v100_sxm2", 7800, false}} {
		d, err := device.Lookup(c.id)
		if err != nil {
			t.Fatal(err)
		}
		g := geometry(d.SMs*4, 256) // one wave, occupancy 1 at 32 registers
		const flops = 1e12
		onTensor, err := Project(d, SpecProfile(d), &Work{FP64TensorFlops: flops, Registers: 32}, g)
		if err != nil {
			t.Fatal(err)
		}
		want := flops / (c.tensor * 1e9) * 1e3
		if math.Abs(onTensor.ComputeMs-want) > 1e-9*want {
			t.Errorf("%s: projected %.6g ms of tensor work, want %.6g", c.id, onTensor.ComputeMs, want)
		}
		conds := Conditions{ClockMHz: d.MaxCoreClockMHz(), MemClockMHz: d.MemoryClockMHz, PowerLimitW: 1e6, Power: HopperPowerModel()}
		pt, err := Predict(d, &Work{FP64TensorFlops: flops, Registers: 32}, g, conds)
		if err != nil {
			t.Fatal(err)
		}
		pc, err := Predict(d, &Work{FP64Flops: flops, Registers: 32}, g, conds)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(pt.ComputeMs-want) > 1e-9*want {
			t.Errorf("%s: predicted %.6g ms of tensor work, want %.6g", c.id, pt.ComputeMs, want)
		}
		if r := pc.ComputeMs / pt.ComputeMs; c.tensorFast != (r > 1.5) {
			t.Errorf("%s: the CUDA cores' FP64 takes %.3g× the tensor cores' time", c.id, r)
		}
	}
}
