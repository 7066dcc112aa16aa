package model

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gtune/gtune/device"
)

// loadMeasured reads a measured profile kept in testdata/profiles.
func loadMeasured(t *testing.T, file string) Measured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "profiles", file))
	if err != nil {
		t.Fatal(err)
	}
	var p Profile
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	d, err := device.Lookup(p.Device)
	if err != nil {
		t.Fatal(err)
	}
	return Measured{Profile: p, Device: d}
}

// quantities lists every probe quantity of p by name.
func quantities(p Profile) map[string]float64 {
	q := map[string]float64{
		"fp32_gflops": p.FP32GFLOPS, "fp64_gflops": p.FP64GFLOPS, "int32_gops": p.Int32GOPS, "sfu_gops": p.SFUGOPS,
		"shared_gbs": p.SharedGBs, "bank_conflict_slowdown": p.BankConflictSlowdown, "l2_gbs": p.L2GBs,
		"launch_overhead_us": p.LaunchOverheadUs, "sm_clock_mhz": p.SMClockMHz, "mem_clock_mhz": p.MemClockMHz,
	}
	for _, m := range p.Memory {
		q[fmt.Sprintf("read_gbs@%d", m.BlocksPerSM)] = m.ReadGBs
		q[fmt.Sprintf("write_gbs@%d", m.BlocksPerSM)] = m.WriteGBs
		q[fmt.Sprintf("strided_gbs@%d", m.BlocksPerSM)] = m.StridedGBs
	}
	return q
}

// medianProfile is the quantity-wise median of profiles of one GPU.
func medianProfile(ms ...Measured) map[string]float64 {
	all := map[string][]float64{}
	for _, m := range ms {
		for k, v := range quantities(m.Profile) {
			all[k] = append(all[k], v)
		}
	}
	out := map[string]float64{}
	for k, vs := range all {
		out[k] = median(vs)
	}
	return out
}

// The H100's and the H200's profiles, each derived from the other's
// measurement, agree with their own measurements within 10 % on every
// arithmetic, shared-memory and clock quantity and on every point of the
// three global-memory curves, where their specification profiles are 73-87
// % low at 1-2 resident blocks per SM (issue 49); the empty launch within
// 10 % too (9.8 and 8.9 %), where its own spread between probes of one
// H100 is 16 %. L2 misses 10 % (12.7 and 14.5 %: the H200 measured that
// much above the H100s, on the same chip at the same clocks); the test
// holds it to what was measured (BENCHMARKS.md, "Profiles derived from
// the family").
func TestDeriveProfileAgreesWithMeasurement(t *testing.T) {
	h100 := []Measured{loadMeasured(t, "h100_sxm-e9a9f68b-1.json"), loadMeasured(t, "h100_sxm-e9a9f68b-2.json"), loadMeasured(t, "h100_sxm-e9a9f68b-3.json")}
	h200 := loadMeasured(t, "h200-ee077263.json")
	loose := map[string]float64{"l2_gbs": 0.15}
	for _, c := range []struct {
		name    string
		target  *device.Description
		sources []Measured
		want    map[string]float64
	}{
		{"h200 from three H100 probes", h200.Device, h100, quantities(h200.Profile)},
		{"h100 from the H200 probe", h100[0].Device, []Measured{h200}, medianProfile(h100...)},
	} {
		d, ok := DeriveProfile(c.target, c.sources)
		if !ok || d.Source != SourceDerivedFamily || len(d.DerivedFrom) != len(c.sources) {
			t.Fatalf("%s: ok %v, source %q, derived from %q", c.name, ok, d.Source, d.DerivedFrom)
		}
		got, spec := quantities(d), quantities(SpecProfile(c.target))
		for k, w := range c.want {
			tol := 0.10
			if l, found := loose[k]; found {
				tol = l
			}
			if e := math.Abs(got[k]/w - 1); e > tol {
				t.Errorf("%s: %s derived %.4g, measured %.4g: %.1f %% off (at most %.0f %%)", c.name, k, got[k], w, 100*e, 100*tol)
			}
		}
		if e := spec["read_gbs@1"]/c.want["read_gbs@1"] - 1; e > -0.8 {
			t.Errorf("%s: the specification profile's loads at 1 block per SM %.1f %% off; the case this derivation is for has it 83-85 %% low", c.name, 100*e)
		}
	}
}

// The derivation's arithmetic on round numbers: a measured GPU of
// another architecture (SourceDerivedOther), its loads latency-bound at
// one block per SM (K = 1,000 GB/s per block), its stores saturated.
func TestDeriveProfileScaling(t *testing.T) {
	src := &device.Description{ID: "src", Architecture: "Ampere", SMs: 100, MemoryBandwidthGBs: 2000, MemoryClockMHz: 1000, TDPW: 400,
		PeakFP32GFLOPS: 20000, MaxThreadsPerSM: 2048, MaxWarpsPerSM: 64, WarpSize: 32, CoreClocksMHz: []int{1500}}
	dst := &device.Description{ID: "dst", Architecture: "Hopper", SMs: 50, MemoryBandwidthGBs: 4000, MemoryClockMHz: 3000, TDPW: 800,
		PeakFP32GFLOPS: 30000, MaxThreadsPerSM: 2048, MaxWarpsPerSM: 64, WarpSize: 32, CoreClocksMHz: []int{2000}}
	m := Profile{Device: "src", Source: "measured", FP32GFLOPS: 18000, L2GBs: 6000, LaunchOverheadUs: 5, BankConflictSlowdown: 32, FP32PowerW: 300, SMClockMHz: 1500, BlockNs: 100,
		Memory: []MemoryPoint{{BlocksPerSM: 1, ReadGBs: 1000, WriteGBs: 1950}, {BlocksPerSM: 2, ReadGBs: 1800, WriteGBs: 1980}, {BlocksPerSM: 4, ReadGBs: 1900, WriteGBs: 1970}}}
	p, ok := DeriveProfile(dst, []Measured{{Profile: m, Device: src}, {Profile: Profile{Device: "dst", Source: "measured", FP32GFLOPS: 1}, Device: dst}})
	if !ok || p.Source != SourceDerivedOther || len(p.DerivedFrom) != 1 {
		t.Fatalf("ok %v, source %q, from %q: want other architectures, from src only (never the target's own)", ok, p.Source, p.DerivedFrom)
	}
	// FP32 at 90 % of specification; L2 by SMs × clock (50·2000 / 100·1500);
	// power by TDP; loads min(P, K·b) with P = 1,900·2 = 3,800 and K =
	// 1,000 · (50/100) · (3000/1000) = 1,500 per block; stores saturated:
	// 1,980·2 = 3,960 at every occupancy.
	wantMem := map[int][2]float64{1: {1500, 3960}, 2: {3000, 3960}, 4: {3800, 3960}, 8: {3800, 3960}}
	if p.FP32GFLOPS != 27000 || math.Abs(p.L2GBs-4000) > 1e-9 || p.FP32PowerW != 600 || p.LaunchOverheadUs != 5 || len(p.Memory) != len(wantMem) {
		t.Fatalf("fp32 %v, l2 %v, power %v, launch %v, %d memory points", p.FP32GFLOPS, p.L2GBs, p.FP32PowerW, p.LaunchOverheadUs, len(p.Memory))
	}
	for _, q := range p.Memory {
		if w := wantMem[q.BlocksPerSM]; math.Abs(q.ReadGBs-w[0]) > 1e-9 || math.Abs(q.WriteGBs-w[1]) > 1e-9 {
			t.Errorf("%d blocks per SM: loads %v, stores %v; want %v", q.BlocksPerSM, q.ReadGBs, q.WriteGBs, w)
		}
	}
	// Block scheduling keeps its 150 cycles (100 ns at 1,500 MHz) at the
	// target's 2,000 MHz.
	if p.SMClockMHz != 2000 || math.Abs(p.BlockNs-75) > 1e-9 {
		t.Errorf("SM clock %v MHz, blocks %v ns; want 2000, 75", p.SMClockMHz, p.BlockNs)
	}
	if _, ok := DeriveProfile(dst, nil); ok {
		t.Error("derived from nothing")
	}
	// A GPU of 1,536 threads an SM (6 blocks of 256 at full occupancy,
	// a point the source lacks) takes the shared-memory curve by
	// occupancy: 0.5 of its specification at occupancy 1/6 where the
	// source had 0.5 at 1/8 and 1.0 from 1/4, 1.0 at 2/3 and 1.
	ga102 := *dst
	ga102.ID, ga102.MaxThreadsPerSM, ga102.MaxWarpsPerSM = "ga102", 1536, 48
	ms := m
	ms.SharedGBs = 1000
	ms.Memory = []MemoryPoint{{BlocksPerSM: 1, Occupancy: 0.125, ReadGBs: 1000, SharedGBs: 500}, {BlocksPerSM: 2, Occupancy: 0.25, ReadGBs: 1800, SharedGBs: 1000},
		{BlocksPerSM: 4, Occupancy: 0.5, ReadGBs: 1900, SharedGBs: 1000}, {BlocksPerSM: 8, Occupancy: 1, ReadGBs: 1900, SharedGBs: 1000}}
	g, _ := DeriveProfile(&ga102, []Measured{{Profile: ms, Device: src}})
	full := SpecProfile(&ga102).SharedGBs / SpecProfile(src).SharedGBs * 1000
	want := map[int]float64{1: full * (0.5 + 0.5*(1.0/6-0.125)/0.125), 2: full, 4: full, 6: full}
	if len(g.Memory) != len(want) {
		t.Fatalf("%d memory points, want %d", len(g.Memory), len(want))
	}
	for _, q := range g.Memory {
		if math.Abs(q.SharedGBs/want[q.BlocksPerSM]-1) > 1e-9 {
			t.Errorf("%d blocks per SM (occupancy %.3f): shared %v GB/s, want %v", q.BlocksPerSM, q.Occupancy, q.SharedGBs, want[q.BlocksPerSM])
		}
	}
}
