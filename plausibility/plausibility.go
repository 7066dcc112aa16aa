// Package plausibility flags measurements that cannot be right, so that a
// tuner never reports one as the best without a warning: a time that
// implies more floating-point operations or device-memory bytes per
// second than the GPU can deliver, and an unverified configuration far
// faster than the configurations nearest to it (its launches most likely
// did not do their work).
//
// The case that motivated it: Kernel Tuner's T1 reader, run on an H100,
// reported 0.0106 ms as the best time of benchmark_hub's convolution_milo
// — 4096² outputs × 225 multiply-adds in 10.6 µs is about 700 TFLOP/s,
// ten times the H100's FP32 peak — because those launches did not do
// their work, and nothing verified the outputs.
//
// Assumptions, stated so they can be checked: the FLOP ceiling is the
// device database's FP32 CUDA-core peak at the boost clock (tensor-core
// kernels exceed it legitimately; such a spec raises it with
// Gtune.Plausibility.PeakGFLOPS); the byte ceiling is device-memory
// bandwidth, applied only when the kernel's arguments do not fit in the L2
// cache (repeated launches over an L2-resident working set move no DRAM
// bytes); both get Margin for clock boost and timing noise.
package plausibility

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/gtune/gtune/measure"
)

// Margin is how far above a peak a measurement may land before it is
// implausible: boost clocks above the database's, and timing noise of a
// few percent.
const Margin = 1.10

// DefaultOutlierFactor: an unverified configuration this many times faster
// than the median of its nearest measured configurations is flagged.
const DefaultOutlierFactor = 10

// Neighbours is how many nearest measured configurations an outlier is
// compared with, and MinNeighbours how many it needs at least.
const (
	Neighbours    = 8
	MinNeighbours = 3
)

// Peaks are the ceilings of a GPU. Zero means unknown (not checked).
type Peaks struct {
	FLOPS          float64 // floating-point operations per second
	BytesPerSecond float64 // device-memory bytes per second
	L2Bytes        int64   // L2 cache size, bytes: working sets up to it are not held to BytesPerSecond
	Source         string  // where they come from, for messages ("NVIDIA H100 80GB HBM3 in the device database")
}

// Kinds of Rate.
const (
	FLOPs = "FLOP/s"
	Bytes = "B/s"
)

// Rate is one throughput a measurement implies.
type Rate struct {
	Kind string  // FLOPs or Bytes
	PerS float64 // operations or bytes per second
	From string  // what implies it, for messages: `metric "GFLOP/s"`, "Gtune.Simulation.Flops"
}

var unitRE = regexp.MustCompile(`^([kmgtp]?)(i?)(flops|flop/s|b/s|bytes/s|byte/s)$`)

// RateOf reads a metric as a throughput when its unit (or, without one,
// its name) is one: FLOP/s, GFLOP/s, TFLOPS, GB/s, GiB/s, TB/s, ...
// (case and spaces ignored; a name such as "GB/s/W" is no throughput).
// value is in that unit.
func RateOf(name, unit string, value float64) (Rate, bool) {
	u := unit
	if u == "" {
		u = name
	}
	u = strings.ToLower(strings.ReplaceAll(u, " ", ""))
	m := unitRE.FindStringSubmatch(u)
	if m == nil || math.IsNaN(value) || math.IsInf(value, 0) {
		return Rate{}, false
	}
	scale := map[string]float64{"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}[m[1]]
	if m[2] == "i" {
		if m[1] == "" {
			return Rate{}, false
		}
		scale = map[string]float64{"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}[m[1]]
	}
	kind := Bytes
	if strings.HasPrefix(m[3], "flop") {
		kind = FLOPs
	}
	return Rate{Kind: kind, PerS: value * scale, From: fmt.Sprintf("metric %q", name)}, true
}

// CheckPeaks says why rates are impossible on a GPU with peaks p, or ""
// when they are not. workingSet is the bytes the kernel's arguments take
// (0: unknown, the byte check applies).
func CheckPeaks(rates []Rate, p Peaks, workingSet int64) string {
	var why []string
	for _, r := range rates {
		peak, unit, scale := p.FLOPS, "TFLOP/s", 1e12
		if r.Kind == Bytes {
			if p.L2Bytes > 0 && workingSet > 0 && workingSet <= p.L2Bytes {
				continue
			}
			peak, unit, scale = p.BytesPerSecond, "GB/s", 1e9
		}
		if peak <= 0 || r.PerS <= peak*Margin {
			continue
		}
		why = append(why, fmt.Sprintf("%s implies %.4g %s, %.1f× the peak of %.4g %s (%s)",
			r.From, r.PerS/scale, unit, r.PerS/peak, peak/scale, unit, p.Source))
	}
	return strings.Join(why, "; ")
}

// Point is one measured valid configuration, for Outliers.
type Point struct {
	ID     int     // the caller's identifier (returned in the result)
	Values []int32 // value index of each tunable parameter
	TimeMs float64
}

// Outliers finds configurations at least factor times faster than the
// median time of their Neighbours nearest measured configurations
// (Hamming distance over the parameters' values; ties by position in
// pts), among the fastest configurations: those that could be reported
// as the best (the 20 fastest) and any below the median of all divided by
// factor. A configuration with fewer than MinNeighbours others measured is
// not judged. The result maps ID to why. Cost O(candidates × len(pts)).
func Outliers(pts []Point, factor float64) map[int]string {
	if factor <= 1 {
		factor = DefaultOutlierFactor
	}
	if len(pts) <= MinNeighbours {
		return nil
	}
	order := make([]int, len(pts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return pts[order[a]].TimeMs < pts[order[b]].TimeMs })
	all := make([]float64, len(pts))
	for i, p := range pts {
		all[i] = p.TimeMs
	}
	cut := measure.Median(all) / factor
	out := map[int]string{}
	type near struct {
		d, i int
	}
	for rank, c := range order {
		p := pts[c]
		if rank >= 20 && p.TimeMs >= cut {
			break
		}
		ns := make([]near, 0, len(pts)-1)
		for i, q := range pts {
			if i == c {
				continue
			}
			d := 0
			for k := range p.Values {
				if p.Values[k] != q.Values[k] {
					d++
				}
			}
			ns = append(ns, near{d, i})
		}
		sort.SliceStable(ns, func(a, b int) bool { return ns[a].d < ns[b].d })
		ns = ns[:min(Neighbours, len(ns))]
		times := make([]float64, len(ns))
		for i, n := range ns {
			times[i] = pts[n.i].TimeMs
		}
		m := measure.Median(times)
		if p.TimeMs > 0 && p.TimeMs*factor <= m {
			out[p.ID] = fmt.Sprintf("%.4g ms is 1/%.0f of the median time (%.4g ms) of its %d nearest measured configurations, and its outputs are not verified: its launches may not have done their work",
				p.TimeMs, m/p.TimeMs, m, len(ns))
		}
	}
	return out
}
