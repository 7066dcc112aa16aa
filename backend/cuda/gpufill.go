package cuda

import (
	"fmt"
	"math"
	"os"
	"time"

	"github.com/gtune/gtune/backend"
)

// Random arguments are drawn on the GPU. The host drew them with 16
// cores at about 2.5 GB/s (an H100 host: 0.84 s for a 2 GiB buffer,
// about 1.7 s for the three examples' arguments) and, with one worker
// per GPU, every GPU's worker drew the same numbers at once on the same
// cores. The kernel draws exactly the host's numbers (fillBytes): stream
// k of fillChunk components is PCG(seed, k), math/rand/v2's PCG with its
// DXSM output, each component Float64()*hi rounded to the component's
// type. One thread runs one stream, so the time is one stream's chain
// (65,536 steps, about a millisecond), whatever the buffer's size. The
// worker checks the first and the last stream of every buffer it fills
// against the host's draw and fills on the host where they differ.
const fillSource = `
typedef unsigned long long u64;
__device__ __forceinline__ void pcg_next(u64 &hi, u64 &lo) {
	const u64 mulHi = 2549297995355413924ULL, mulLo = 4865540595714422341ULL;
	const u64 incHi = 6364136223846793005ULL, incLo = 1442695040888963407ULL;
	u64 nhi = __umul64hi(lo, mulLo) + hi * mulLo + lo * mulHi;
	u64 nlo = lo * mulLo;
	u64 s = nlo + incLo;
	nhi += incHi + (s < nlo ? 1ULL : 0ULL);
	hi = nhi;
	lo = s;
}
__device__ __forceinline__ u64 pcg_uint64(u64 &hi, u64 &lo) {
	pcg_next(hi, lo);
	u64 h = hi;
	h ^= h >> 32;
	h *= 0xda942042e4dd58b5ULL;
	h ^= h >> 48;
	h *= (lo | 1ULL);
	return h;
}
template <typename T>
__device__ void fill(T *dst, u64 n, u64 seed, double top) {
	u64 stream = (u64)blockIdx.x * blockDim.x + threadIdx.x;
	u64 begin = stream * 65536ULL;
	if (begin >= n) return;
	u64 end = begin + 65536ULL < n ? begin + 65536ULL : n;
	u64 hi = seed, lo = stream;
	for (u64 i = begin; i < end; i++) {
		double v = __dmul_rn((double)(pcg_uint64(hi, lo) << 11 >> 11) / 9007199254740992.0, top);
		dst[i] = (T)v;
	}
}
extern "C" __global__ void gtune_fill_float(float *dst, u64 n, u64 seed, double top) { fill<float>(dst, n, seed, top); }
extern "C" __global__ void gtune_fill_double(double *dst, u64 n, u64 seed, double top) { fill<double>(dst, n, seed, top); }
`

// fillThreads is the random fill kernel's thread block: one stream a
// thread.
const fillThreads = 128

// gpuFill is the random fill kernel loaded in a worker's context.
type gpuFill struct {
	mod uintptr
	fn  map[scalarKind]uintptr
}

// compileFill starts compiling the random fill kernel (compileOwn).
func compileFill(major, minor int) func() (*backend.Binary, error) {
	return compileOwn(fillSource, "gtune_fill.cu", "gtune_fill_float", major, minor)
}

// loadFill loads the fill kernel once per worker; a failure is told once
// and the host fills from then on.
func (w *worker) loadFill() *gpuFill {
	if w.fill != nil || w.fillErr != nil || w.fillBin == nil {
		return w.fill
	}
	w.fillErr = w.tryLoadFill()
	if w.fillErr != nil {
		fmt.Fprintf(os.Stderr, "gtune cuda worker: random fill kernel: %v (the host draws random arguments)\n", w.fillErr)
	}
	return w.fill
}

func (w *worker) tryLoadFill() error {
	mod, fns, err := w.loadOwn(w.fillBin, "gtune_fill_float", "gtune_fill_double")
	if err != nil {
		return err
	}
	w.fill = &gpuFill{mod: mod, fn: map[scalarKind]uintptr{kFloat: fns[0], kDouble: fns[1]}}
	return nil
}

// fillRandomDevice draws a Random fill f of t into the device buffer at
// ptr (bytes long) on the GPU, and checks its first and last streams
// against the host's draw. ok is false where it
// did not fill (a type the kernel lacks, no kernel, or a check that
// failed: the caller fills on the host); err is a CUDA failure.
func (w *worker) fillRandomDevice(ptr uint64, bytes int64, t elemType, f backend.Fill) (ok bool, err error) {
	if f.Type != "Random" || (t.Kind != kFloat && t.Kind != kDouble) {
		return false, nil
	}
	t0 := time.Now()
	g := w.loadFill()
	w.traceStep("random fill kernel ready", t0)
	if g == nil {
		return false, nil
	}
	n := bytes / int64(t.CompSize)
	top := f.Value
	if top == 0 {
		top = 1
	}
	streams := (n + fillChunk - 1) / fillChunk
	blocks := (streams + fillThreads - 1) / fillThreads
	if err := w.launchOwn(g.fn[t.Kind], blocks, fillThreads, ptr, uint64(n), uint64(f.Seed), math.Float64bits(top)); err != nil {
		return false, err
	}
	// The first and the last stream, drawn on the host, must be the
	// GPU's bytes.
	for _, first := range []int64{0, (streams - 1) * fillChunk} {
		m := min(n-first, fillChunk)
		want := make([]byte, m*int64(t.CompSize))
		if err := fillBytes(want, t, f, first); err != nil {
			return false, err
		}
		got := make([]byte, len(want))
		if err := w.download(got, ptr+uint64(first*int64(t.CompSize))); err != nil {
			return false, err
		}
		if string(got) != string(want) {
			if !w.fillNoted {
				w.fillNoted = true
				fmt.Fprintf(os.Stderr, "gtune cuda worker: the GPU's random numbers differ from the host's (stream at component %d); the host draws them\n", first)
			}
			w.traceStep(fmt.Sprintf("random fill on the GPU differs from the host's at component %d", first), time.Now())
			w.fill, w.fillErr = nil, fmt.Errorf("differs from the host's draw")
			w.d.cuModuleUnload(g.mod)
			return false, nil
		}
	}
	w.traceStep("random fill on the GPU, checked", t0)
	return true, nil
}
