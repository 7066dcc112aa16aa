// sw_score: Smith-Waterman local alignment scores of many independent short
// sequence pairs, in the spirit of the SW kernel of the symbiotic-
// scheduling paper (CUDASW++-style inter-task parallelism: one pair per
// thread), written for gtune. Integer dynamic programming only.
//
// Pair p aligns query a (seq_len letters) with target b (seq_len letters),
// letters 0..3 (DNA), stored letter-major (a[i*num_pairs + p]) so that
// consecutive threads read consecutive words. Scoring: match +MATCH,
// mismatch MISMATCH, affine gaps (Gotoh) with opening cost GAP_OPEN (the
// first gap letter) and extension cost GAP_EXTEND:
//
//   E[i][j] = max(E[i][j-1] - GAP_EXTEND, H[i][j-1] - GAP_OPEN)
//   F[i][j] = max(F[i-1][j] - GAP_EXTEND, H[i-1][j] - GAP_OPEN)
//   H[i][j] = max(0, H[i-1][j-1] + s(a_i, b_j), E[i][j], F[i][j])
//   score[p] = max over i, j of H[i][j]
//
// The thread walks the matrix row by row and keeps one DP row of seq_len
// 32-bit words: word j packs H[i-1][j] (bits 0-7), F[i-1][j] + GAP_OPEN
// (bits 8-15) and the target letter b_j (bits 16-23), so a cell is one
// load, one store and about 18 integer operations (byte extraction,
// add, max, compare/select): integer-bound. The query letter of the next
// row is fetched while the current row is computed.
//
// Where the row lives is what shared_kib changes: with shared_kib == 0 it
// is a local array (local memory, cached in L1); with shared_kib > 0 the
// first ROWS_SH threads of the block keep their row in the dynamic shared
// buffer (word j of thread t at buf[j*ROWS_SH + t], conflict-free), the
// others still use a local array. Every thread computes its own pairs
// from start to end in the same order, so every configuration writes
// identical scores.
//
// Tunable parameters, passed by gtune as -Dname=value:
//   block_size_x   threads per thread block (one pair per thread)
//   blocks_per_sm  thread blocks per SM; the grid is blocks_per_sm*num_sms
//                  (the kernel reads the grid from gridDim, grid-stride)
//   shared_kib     KiB of dynamic shared memory per block, the home of
//                  shared_kib*1024/(4*seq_len) DP rows
// Problem size, passed in the spec's CompilerOptions:
//   num_pairs      sequence pairs
//   seq_len        letters per sequence

#ifndef block_size_x
#error "block_size_x must be defined (-Dblock_size_x=...)"
#endif
#ifndef shared_kib
#error "shared_kib must be defined (-Dshared_kib=...)"
#endif
#if !defined(num_pairs) || !defined(seq_len)
#error "num_pairs and seq_len must be defined"
#endif

#define MATCH 2
#define MISMATCH (-1)
#define GAP_OPEN 3
#define GAP_EXTEND 1
#if MATCH * seq_len > 255
#error "H must fit in 8 bits: MATCH*seq_len <= 255"
#endif

#define SH_INTS (shared_kib * 1024 / 4)     // ints of dynamic shared memory
#define SH_ROWS (SH_INTS / seq_len)          // DP rows the buffer holds
#define ROWS_SH (SH_ROWS < block_size_x ? SH_ROWS : block_size_x)  // rows used

extern __shared__ __align__(16) int sw_buf[];

template <bool SHARED>
__device__ __forceinline__ int sw_pair(const int *__restrict__ qa, const int *__restrict__ tb, int pair)
{
    int lrow[SHARED ? 1 : seq_len];
    int *const row = SHARED ? sw_buf + threadIdx.x : lrow;
    const int rs = SHARED ? ROWS_SH : 1;

    // Row -1: H = 0, F + GAP_OPEN = 0 (F = -GAP_OPEN acts as minus
    // infinity here), and the target letters.
#pragma unroll 4
    for (int j = 0; j < seq_len; j++)
        row[j * rs] = tb[j * num_pairs + pair] << 16;

    int best = 0;
    int a_next = qa[pair];
#pragma unroll 1
    for (int i = 0; i < seq_len; i++) {
        const int a = a_next;
        if (i + 1 < seq_len)
            a_next = qa[(i + 1) * num_pairs + pair];
        int diag = 0;           // H[i-1][j-1]
        int hleft = 0;          // H[i][j-1]
        int e = -GAP_OPEN;      // E[i][j-1] (minus infinity at j = 0)
#pragma unroll 4
        for (int j = 0; j < seq_len; j++) {
            const int v = row[j * rs];
            const int hup = v & 0xff;
            const int fo = max(((v >> 8) & 0xff) - GAP_EXTEND, hup); // F[i][j] + GAP_OPEN
            const int f = fo - GAP_OPEN;
            e = max(e - GAP_EXTEND, hleft - GAP_OPEN);
            const int s = (a == (v >> 16)) ? MATCH : MISMATCH;
            const int h = max(max(diag + s, 0), max(e, f));
            row[j * rs] = (v & ~0xffff) | (fo << 8) | h;
            diag = hup;
            hleft = h;
            best = max(best, h);
        }
    }
    return best;
}

extern "C" __global__ void __launch_bounds__(block_size_x)
sw_score(const int *__restrict__ qa, const int *__restrict__ tb, int *__restrict__ score)
{
#if shared_kib > 0
    // Clear the whole buffer once, so that all of it is touched even when
    // fewer rows than it holds are used; the barrier keeps the clearing
    // apart from the rows.
    for (int k = threadIdx.x; k < SH_INTS; k += block_size_x)
        sw_buf[k] = 0;
    __syncthreads();
    const bool in_shared = threadIdx.x < ROWS_SH;
#endif
    for (int pair = blockIdx.x * block_size_x + threadIdx.x; pair < num_pairs;
         pair += gridDim.x * block_size_x) {
#if shared_kib > 0
        score[pair] = in_shared ? sw_pair<true>(qa, tb, pair) : sw_pair<false>(qa, tb, pair);
#else
        score[pair] = sw_pair<false>(qa, tb, pair);
#endif
    }
}
