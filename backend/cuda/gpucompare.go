package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/gtune/gtune/backend"
)

// Outputs are compared with their expected contents on the GPU: copying
// GiBs to the host and comparing there cost far more than the timed
// launches of a configuration. One kernel computes, per thread block,
// what all three validation methods need; the host reduces the per-block
// partials (cmpMaxBlocks × 48 bytes at most) and reads back only the two
// components at the worst place. The errors are those of comparePart,
// element by element, in double precision: |got-want| and
// |got-want| / max(|want|, 1e-30) are correctly rounded on the GPU as on
// the CPU, so the largest errors and their places are the same bits; the
// sum (AbsoluteDifference) is accumulated in double in another order and
// may differ from the CPU's in the last bits.

// The comparison kernel's launch shape. The grid is fixed by the number of
// components alone, so the sum is accumulated in the same order on every
// run and every GPU.
const (
	cmpThreads   = 256
	cmpMaxBlocks = 1024
	partialBytes = 48 // sizeof(gtune_partial)
)

// compileCompare starts compiling the comparison kernel (compileOwn):
// about 1.5 s of NVRTC on an H100 host.
func compileCompare(major, minor int) func() (*backend.Binary, error) {
	return compileOwn(compareSource, "gtune_compare.cu", "gtune_compare_float", major, minor)
}

// compareSource is compiled once per worker by NVRTC for the GPU's sm_XY.
// Each gtune_compare_<type> compares n components of a scalar T1 type;
// vector types (float4, double2, ...) compare as their component type.
var compareSource = "#define THREADS " + strconv.Itoa(cmpThreads) + "\n" + compareBody

const compareBody = `
struct gtune_partial {
    double sum;        // sum of |got - want| (Inf for a NaN mismatch)
    double max_abs;    // largest |got - want|
    double max_rel;    // largest |got - want| / max(|want|, 1e-30)
    long long abs_idx; // component of max_abs; -1: none
    long long rel_idx; // component of max_rel; -1: none
    long long nan_idx; // first component where exactly one of got, want is NaN; -1: none
};

struct gtune_bool { unsigned char v; };

__device__ __forceinline__ double gtune_val(float x) { return (double)x; }
__device__ __forceinline__ double gtune_val(double x) { return x; }
__device__ __forceinline__ double gtune_val(signed char x) { return (double)x; }
__device__ __forceinline__ double gtune_val(unsigned char x) { return (double)x; }
__device__ __forceinline__ double gtune_val(short x) { return (double)x; }
__device__ __forceinline__ double gtune_val(unsigned short x) { return (double)x; }
__device__ __forceinline__ double gtune_val(int x) { return (double)x; }
__device__ __forceinline__ double gtune_val(unsigned int x) { return (double)x; }
__device__ __forceinline__ double gtune_val(long long x) { return (double)x; }
__device__ __forceinline__ double gtune_val(unsigned long long x) { return (double)x; }
__device__ __forceinline__ double gtune_val(gtune_bool x) { return x.v != 0 ? 1.0 : 0.0; }

// The larger error wins; on a tie the smaller component index.
__device__ __forceinline__ void gtune_better(double e, long long i, double* m, long long* mi) {
    if (i >= 0 && (*mi < 0 || e > *m || (e == *m && i < *mi))) { *m = e; *mi = i; }
}

template <typename T>
__device__ __forceinline__ void gtune_compare(const T* __restrict__ got, const T* __restrict__ want, long long n, gtune_partial* __restrict__ out) {
    __shared__ double s_sum[THREADS], s_abs[THREADS], s_rel[THREADS];
    __shared__ long long s_ai[THREADS], s_ri[THREADS], s_ni[THREADS];
    double sum = 0.0, mabs = 0.0, mrel = 0.0;
    long long ai = -1, ri = -1, ni = -1;
    const long long stride = (long long)gridDim.x * THREADS;
    for (long long i = (long long)blockIdx.x * THREADS + threadIdx.x; i < n; i += stride) {
        const double a = gtune_val(got[i]);
        const double b = gtune_val(want[i]);
        const bool an = a != a, bn = b != b;
        double ea, er;
        if ((an && bn) || a == b) {
            ea = 0.0;
            er = 0.0;
        } else if (an || bn) {
            ea = __longlong_as_double(0x7ff0000000000000LL);
            er = ea;
            if (ni < 0) ni = i;
        } else {
            ea = fabs(a - b);
            er = ea / fmax(fabs(b), 1e-30);
        }
        sum += ea;
        // A NaN error (an infinite reference, relative) is never the
        // largest, as in comparePart.
        if (ea == ea && (ai < 0 || ea > mabs)) { mabs = ea; ai = i; }
        if (er == er && (ri < 0 || er > mrel)) { mrel = er; ri = i; }
    }
    const int t = threadIdx.x;
    s_sum[t] = sum; s_abs[t] = mabs; s_rel[t] = mrel;
    s_ai[t] = ai; s_ri[t] = ri; s_ni[t] = ni;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) {
            s_sum[t] += s_sum[t + s];
            gtune_better(s_abs[t + s], s_ai[t + s], &s_abs[t], &s_ai[t]);
            gtune_better(s_rel[t + s], s_ri[t + s], &s_rel[t], &s_ri[t]);
            const long long o = s_ni[t + s];
            if (o >= 0 && (s_ni[t] < 0 || o < s_ni[t])) s_ni[t] = o;
        }
        __syncthreads();
    }
    if (t == 0) {
        gtune_partial p;
        p.sum = s_sum[0]; p.max_abs = s_abs[0]; p.max_rel = s_rel[0];
        p.abs_idx = s_ai[0]; p.rel_idx = s_ri[0]; p.nan_idx = s_ni[0];
        out[blockIdx.x] = p;
    }
}

#define GTUNE_COMPARE(NAME, T) \
extern "C" __global__ void __launch_bounds__(THREADS) gtune_compare_##NAME(const T* got, const T* want, long long n, gtune_partial* out) { \
    gtune_compare<T>(got, want, n, out); \
}
GTUNE_COMPARE(float, float)
GTUNE_COMPARE(double, double)
GTUNE_COMPARE(int8, signed char)
GTUNE_COMPARE(uint8, unsigned char)
GTUNE_COMPARE(int16, short)
GTUNE_COMPARE(uint16, unsigned short)
GTUNE_COMPARE(int32, int)
GTUNE_COMPARE(uint32, unsigned int)
GTUNE_COMPARE(int64, long long)
GTUNE_COMPARE(uint64, unsigned long long)
GTUNE_COMPARE(bool, gtune_bool)
`

// cmpKernelTypes are the component types compareSource has a kernel for,
// named as the suffix of gtune_compare_<type>.
var cmpKernelTypes = []string{"float", "double", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool"}

// cmpKernelType names the comparison kernel for elements of t: its
// component type. ok is false for half (and its vectors), which the CPU
// compares.
func cmpKernelType(t elemType) (string, bool) {
	switch t.Kind {
	case kFloat:
		return "float", true
	case kDouble:
		return "double", true
	case kBool:
		return "bool", true
	case kInt, kUint:
		p := "int"
		if t.Kind == kUint {
			p = "uint"
		}
		return fmt.Sprintf("%s%d", p, 8*t.CompSize), true
	}
	return "", false
}

// cmpBlocks is the comparison kernel's grid for n components.
func cmpBlocks(n int64) int {
	return int(max(1, min((n+cmpThreads-1)/cmpThreads, cmpMaxBlocks)))
}

// cmpPartial is one thread block's result (struct gtune_partial).
type cmpPartial struct {
	Sum    float64 // sum of the absolute errors
	MaxAbs float64 // largest absolute error
	MaxRel float64 // largest relative error
	AbsIdx int64   // component of MaxAbs; -1: none
	RelIdx int64   // component of MaxRel; -1: none
	NaNIdx int64   // first NaN mismatch; -1: none
}

// decodePartials reads the kernel's partials, little-endian.
func decodePartials(b []byte) []cmpPartial {
	out := make([]cmpPartial, len(b)/partialBytes)
	for i := range out {
		p := b[i*partialBytes:]
		out[i] = cmpPartial{
			Sum:    math.Float64frombits(binary.LittleEndian.Uint64(p[0:])),
			MaxAbs: math.Float64frombits(binary.LittleEndian.Uint64(p[8:])),
			MaxRel: math.Float64frombits(binary.LittleEndian.Uint64(p[16:])),
			AbsIdx: int64(binary.LittleEndian.Uint64(p[24:])),
			RelIdx: int64(binary.LittleEndian.Uint64(p[32:])),
			NaNIdx: int64(binary.LittleEndian.Uint64(p[40:])),
		}
	}
	return out
}

// better keeps the larger error; on a tie the smaller index (the rule of
// gtune_better, so the place found does not depend on the grid).
func better(e float64, i int64, m *float64, mi *int64) {
	if i >= 0 && (*mi < 0 || e > *m || (e == *m && i < *mi)) {
		*m, *mi = e, i
	}
}

// reducePartials merges the per-block partials: sums in block order,
// largest errors with the smallest index on ties, the first NaN mismatch.
func reducePartials(ps []cmpPartial) cmpPartial {
	r := cmpPartial{AbsIdx: -1, RelIdx: -1, NaNIdx: -1}
	for _, p := range ps {
		r.Sum += p.Sum
		better(p.MaxAbs, p.AbsIdx, &r.MaxAbs, &r.AbsIdx)
		better(p.MaxRel, p.RelIdx, &r.MaxRel, &r.RelIdx)
		if p.NaNIdx >= 0 && (r.NaNIdx < 0 || p.NaNIdx < r.NaNIdx) {
			r.NaNIdx = p.NaNIdx
		}
	}
	return r
}

// finish turns the reduced partials of n > 0 components into compare's
// outcome for a method: Error is the sum (AbsoluteDifference) or the
// largest error, Worst its component. Got and Want are left for the
// caller, who reads the two components at Worst.
func (r cmpPartial) finish(method string, threshold float64) (comparison, error) {
	sum, relative, err := parseMethod(method)
	if err != nil {
		return comparison{}, err
	}
	c := comparison{Worst: r.AbsIdx, Error: r.MaxAbs, NaNIndex: r.NaNIdx}
	if relative {
		c.Worst, c.Error = r.RelIdx, r.MaxRel
	}
	if c.Worst < 0 {
		// Every error was NaN: comparePart keeps the first one.
		c.Worst, c.Error = 0, math.NaN()
	}
	if sum {
		c.Error = r.Sum
	}
	c.OK = c.NaNIndex < 0 && c.Error <= threshold
	return c, nil
}

// gpuCompare is the loaded comparison module of one worker.
type gpuCompare struct {
	mod      uintptr
	fn       map[string]uintptr // by cmpKernelTypes name
	partials uint64             // device buffer of cmpMaxBlocks partials
}

// loadCompare compiles compareSource for this GPU and loads it, once per
// worker; a failure is kept and the CPU compares instead.
func (w *worker) loadCompare() error {
	if w.cmp != nil || w.cmpErr != nil {
		return w.cmpErr
	}
	w.cmpErr = w.tryLoadCompare()
	if w.cmpErr != nil {
		w.cmpErr = fmt.Errorf("comparison kernel: %w", w.cmpErr)
	}
	return w.cmpErr
}

func (w *worker) tryLoadCompare() error {
	d := w.d
	if w.cmpBin == nil {
		w.cmpBin = compileCompare(w.info.ComputeMajor, w.info.ComputeMinor)
	}
	names := make([]string, len(cmpKernelTypes))
	for i, name := range cmpKernelTypes {
		names[i] = "gtune_compare_" + name
	}
	mod, fns, err := w.loadOwn(w.cmpBin, names...)
	if err != nil {
		return err
	}
	g := &gpuCompare{mod: mod, fn: map[string]uintptr{}}
	for i, name := range cmpKernelTypes {
		g.fn[name] = fns[i]
	}
	if err := d.check("cuMemAlloc_v2", d.cuMemAlloc(&g.partials, cmpMaxBlocks*partialBytes)); err != nil {
		d.cuModuleUnload(g.mod)
		return err
	}
	w.cmp = g
	return nil
}

func (w *worker) unloadCompare() {
	if w.cmp == nil {
		return
	}
	w.d.cuMemFree(w.cmp.partials)
	w.d.cuModuleUnload(w.cmp.mod)
	w.cmp = nil
}

// compareDevice compares n > 0 components of t at device addresses got
// and want with a validation method, as compare does on the host. err is
// a CUDA failure; a bad method is methodErr.
func (w *worker) compareDevice(method string, threshold float64, t elemType, got, want uint64, n int64) (c comparison, methodErr, err error) {
	if _, _, methodErr = parseMethod(method); methodErr != nil {
		return comparison{}, methodErr, nil
	}
	name, ok := cmpKernelType(t)
	if !ok || w.cmp == nil || n <= 0 {
		return comparison{}, nil, fmt.Errorf("internal: no GPU comparison for %s (%d components)", t.Name, n)
	}
	blocks := cmpBlocks(n)
	if err := w.launchOwn(w.cmp.fn[name], int64(blocks), cmpThreads, got, want, uint64(n), w.cmp.partials); err != nil {
		return comparison{}, nil, err
	}
	raw := make([]byte, blocks*partialBytes)
	if err := w.download(raw, w.cmp.partials); err != nil {
		return comparison{}, nil, err
	}
	c, methodErr = reducePartials(decodePartials(raw)).finish(method, threshold)
	if methodErr != nil {
		return comparison{}, methodErr, nil
	}
	if !c.OK && c.NaNIndex < 0 {
		cs := int64(t.CompSize)
		gb, wb := make([]byte, cs), make([]byte, cs)
		if err := w.download(gb, got+uint64(c.Worst*cs)); err != nil {
			return comparison{}, nil, err
		}
		if err := w.download(wb, want+uint64(c.Worst*cs)); err != nil {
			return comparison{}, nil, err
		}
		c.Got, c.Want = getComp(gb, t), getComp(wb, t)
	}
	return c, nil, nil
}
