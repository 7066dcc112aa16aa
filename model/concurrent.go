package model

import (
	"math"
	"sort"

	"github.com/gtune/gtune/device"
)

// KernelRun is one launch of a plan as the block scheduler sees it
// (ConcurrentTimes).
type KernelRun struct {
	Stream  int
	Blocks  int     // thread blocks in the grid
	BlockMs float64 // one block's duration when the SM holds only blocks of this kernel at its occupancy (t_wave), ms
	PerSM   int     // resident blocks per SM alone (occupancy.Result.ActiveBlocksPerSM)
	Use     SMUse   // SM resources one resident block holds (BlockUse)
	// Compute and Memory are the shares of one resident block in its
	// SM's instruction throughput and in the chip's memory bandwidth
	// when the kernel runs alone at PerSM blocks per SM.
	Compute, Memory float64
	OverheadMs      float64 // host-side launch cost before its first block, ms
}

// SMUse is what one resident thread block holds of an SM: threads,
// registers, shared memory (bytes) and a resident-block slot.
type SMUse struct{ threads, regs, smem, blocks int }

func (a SMUse) add(b SMUse, k int) SMUse {
	return SMUse{a.threads + k*b.threads, a.regs + k*b.regs, a.smem + k*b.smem, a.blocks + k*b.blocks}
}

func (a SMUse) fits(cap SMUse) bool {
	return a.threads <= cap.threads && a.regs <= cap.regs && a.smem <= cap.smem && a.blocks <= cap.blocks
}

// BlockUse is one block's share of an SM: threads rounded to whole warps,
// registers allocated per warp in RegisterAllocUnit, shared memory (static
// + dynamic + the driver's reservation) in SharedMemoryAllocUnit, one
// resident-block slot — the quantities of CUDA's occupancy calculator
// (package occupancy).
func BlockUse(d *device.Description, threads, regs, smem int) SMUse {
	warps := (threads + d.WarpSize - 1) / d.WarpSize
	regsPerWarp := 0
	if regs > 0 {
		regsPerWarp = (regs*d.WarpSize + d.RegisterAllocUnit - 1) / d.RegisterAllocUnit * d.RegisterAllocUnit
	}
	sm := 0
	if smem > 0 || d.ReservedSharedMemoryPerBlock > 0 {
		unit := max(d.SharedMemoryAllocUnit, 1)
		sm = (smem + d.ReservedSharedMemoryPerBlock + unit - 1) / unit * unit
	}
	return SMUse{threads: warps * d.WarpSize, regs: regsPerWarp * warps, smem: sm, blocks: 1}
}

// cohort is a group of identical resident blocks of one kernel on one
// SM, started together.
type cohort struct {
	kernel, count int
	left          float64 // work left per block, ms at the unshared rate
}

// ConcurrentTimes runs the plan's launches through a model of the GPU's
// block scheduler (symbiotic-scheduling-concurrent-kernels.md, section 3)
// and returns each launch's time (first block issued to last block done,
// its launch overhead included) and the whole plan's, ms.
//
// The scheduler, as the paper describes it (the "left-over" policy):
// thread blocks are dispatched in kernel launch order, each to an SM with
// room for it, breadth first over the SMs; a kernel's blocks are all
// dispatched before any block of the next kernel in launch order, and a
// block that fits on no SM holds back every block behind it until a
// resident block finishes and frees registers, shared memory, warps or a
// block slot. Launches on one stream wait for the previous launch of that
// stream to finish; launches on different streams only for the dispatch
// order.
//
// Rates: a block of kernel k does blockMs of work. Alone at its
// occupancy it uses a share compute_k of its SM's instruction throughput
// and memory_k of the chip's memory bandwidth, so that a full SM of its
// blocks uses the kernel's own utilisations (Prediction.ComputeUtil and
// MemoryUtil). When blocks of different kernels share the chip, a block
// slows down by the oversubscription of what it mostly needs:
// s = c·max(1, C_sm) + m·max(1, M) with c, m its kernel's compute and
// memory fractions and C_sm, M the summed shares on its SM and on the
// chip. A kernel alone is therefore timed as Prediction does (waves ×
// t_wave), and two kernels that need different resources overlap (the
// paper's "symbiotic" pairs), while two that need the same one share it.
// This is a throughput model, not a cycle model: it ignores caches,
// warp-scheduler details and the launch-to-launch gap.
func ConcurrentTimes(d *device.Description, ks []KernelRun) (launchMs []float64, planMs float64) {
	n := len(ks)
	cap := SMUse{threads: d.MaxThreadsPerSM, regs: d.RegistersPerSM, smem: d.SharedMemoryPerSM, blocks: d.MaxBlocksPerSM}
	used := make([]SMUse, d.SMs)
	resident := make([][]cohort, d.SMs)
	perKernel := make([][]int, d.SMs) // resident blocks of each kernel per SM
	for s := range perKernel {
		perKernel[s] = make([]int, n)
	}
	pending := make([]int, n)
	live := make([]int, n) // resident blocks
	start := make([]float64, n)
	end := make([]float64, n)
	released := make([]bool, n) // its stream predecessor has finished (or it has none)
	for k := range ks {
		pending[k] = ks[k].Blocks
		start[k], end[k] = -1, -1
		released[k] = true
		for j := k - 1; j >= 0; j-- {
			if ks[j].Stream == ks[k].Stream {
				released[k] = false
				break
			}
		}
	}
	rr := 0 // breadth-first pointer over the SMs
	now := 0.0
	room := make([]int, d.SMs) // blocks of the kernel being dispatched each SM can still take
	take := make([]int, d.SMs) // and takes in this dispatch
	dispatch := func() {
		for k := range ks {
			if pending[k] == 0 {
				continue
			}
			if !released[k] {
				return // in-order dispatch: nothing behind it goes first
			}
			if start[k] < 0 {
				start[k] = now
			}
			// The scheduler's passes, one block per SM each, breadth first
			// from rr (rr moving one SM a pass), computed in bulk: SM s
			// takes a block in pass p exactly when room[s] > p, so passes
			// 0..P-1 place sum(min(room, P)) blocks; the pass in which
			// the kernel's blocks run out gives one more to the first of
			// the SMs with room left, in that pass's order.
			most, total := 0, 0
			for s := range room {
				room[s] = roomFor(used[s], cap, ks[k].Use, ks[k].PerSM-perKernel[s][k])
				most = max(most, room[s])
				total += room[s]
			}
			P, extra := most, 0 // full passes; blocks of the partial pass P
			if pending[k] < total {
				placedBy := func(p int) int {
					n := 0
					for _, r := range room {
						n += min(r, p)
					}
					return n
				}
				P = sort.Search(most, func(p int) bool { return placedBy(p+1) >= pending[k] })
				extra = pending[k] - placedBy(P)
			}
			for s := range room {
				take[s] = min(room[s], P)
			}
			if extra > 0 {
				from := (rr + P) % d.SMs
				for i := 0; i < d.SMs && extra > 0; i++ {
					if s := (from + i) % d.SMs; room[s] > P {
						take[s]++
						extra--
					}
				}
			}
			placed := 0
			for s, t := range take {
				if t == 0 {
					continue
				}
				used[s] = used[s].add(ks[k].Use, t)
				perKernel[s][k] += t
				live[k] += t
				placed += t
				addCohort(&resident[s], k, ks[k].BlockMs, t)
			}
			pending[k] -= placed
			if pending[k] > 0 {
				// Every SM is full for this kernel: the passes that placed
				// blocks, then one that placed none, which stops dispatch
				// (left-over policy: nothing behind the head block goes).
				rr = (rr + most + 1) % d.SMs
				return
			}
			if placed == total {
				rr = (rr + most) % d.SMs // the last full pass placed the last block
			} else {
				rr = (rr + P + 1) % d.SMs // full passes 0..P-1, then the partial pass P
			}
		}
	}
	// Launch overheads: the first launch's blocks start after it; the
	// host issues the others while the GPU runs, so only the first delays
	// the plan (a stream successor pays its own when released).
	if n > 0 {
		now = ks[0].OverheadMs
	}
	dispatch()
	// Per event: each SM's compute demand, the chip's memory demand, and
	// each resident cohort's slowdown (computed once, used for the step
	// and for the progress), buffers reused across events.
	comp := make([]float64, d.SMs)
	slows := make([][]float64, d.SMs)
	for {
		mem := 0.0
		for s := range resident {
			comp[s] = 0
			for _, c := range resident[s] {
				comp[s] += float64(c.count) * ks[c.kernel].Compute
				mem += float64(c.count) * ks[c.kernel].Memory
			}
		}
		memOver := math.Max(1, mem)
		dt := math.Inf(1)
		for s := range resident {
			compOver := math.Max(1, comp[s])
			sl := slows[s][:0]
			for _, c := range resident[s] {
				// s = c·max(1, C_sm) + m·max(1, M), normalised by c + m.
				cf, mf := ks[c.kernel].Compute, ks[c.kernel].Memory
				f := 1.0
				if cf+mf > 0 {
					f = (cf*compOver + mf*memOver) / (cf + mf)
				}
				sl = append(sl, f)
				if x := c.left * f; x < dt {
					dt = x
				}
			}
			slows[s] = sl
		}
		if math.IsInf(dt, 1) {
			break // nothing resident: everything done (or nothing to run)
		}
		now += dt
		for s := range resident {
			rest := resident[s][:0]
			for i, c := range resident[s] {
				c.left -= dt / slows[s][i]
				if c.left > 1e-12 {
					rest = append(rest, c)
					continue
				}
				k := c.kernel
				used[s] = used[s].add(ks[k].Use, -c.count)
				perKernel[s][k] -= c.count
				live[k] -= c.count
				if live[k] == 0 && pending[k] == 0 {
					end[k] = now
					for j := k + 1; j < n; j++ {
						if ks[j].Stream == ks[k].Stream {
							released[j] = true
							break
						}
					}
				}
			}
			resident[s] = rest
		}
		dispatch()
	}
	launchMs = make([]float64, n)
	for k := range ks {
		if start[k] < 0 {
			start[k], end[k] = now, now
		}
		launchMs[k] = end[k] - start[k] + ks[k].OverheadMs
		planMs = math.Max(planMs, end[k])
	}
	return launchMs, planMs
}

// addCohort adds n blocks with work left to an SM's resident cohorts,
// joining a cohort of the same kernel started at the same instant.
func addCohort(cs *[]cohort, kernel int, left float64, n int) {
	for i := range *cs {
		if c := &(*cs)[i]; c.kernel == kernel && c.left == left {
			c.count += n
			return
		}
	}
	*cs = append(*cs, cohort{kernel: kernel, count: n, left: left})
}

// roomFor is how many more blocks of use an SM at used can take: at most
// left (its resident-block limit for the kernel), and as many as every
// resource of cap allows.
func roomFor(used, cap, use SMUse, left int) int {
	n := max(left, 0)
	for _, r := range [][3]int{{used.threads, cap.threads, use.threads}, {used.regs, cap.regs, use.regs}, {used.smem, cap.smem, use.smem}, {used.blocks, cap.blocks, use.blocks}} {
		if r[2] > 0 {
			n = min(n, max(r[1]-r[0], 0)/r[2])
		} else if r[0] > r[1] {
			n = 0
		}
	}
	return n
}
