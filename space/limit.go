package space

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"
)

// DefaultMaxConfigurations is the limit on valid configurations that Build
// and BuildBruteForce apply, and BuildContext when
// BuildOptions.MaxConfigurations is 0: 2^24 = 16,777,216.
//
// Why this figure: memory grows with the valid configurations, and a
// space that does not fit must be refused rather than end the process
// (the kernel's OOM killer gives no message). Per valid configuration,
// with the usual one-word code (all value indexes in 64 bits):
//
//   - the stored space: 8 B of codes plus the membership table, int32
//     slots numbering a power of two at least twice the count (8 to 16 B;
//     8 B at exactly 2^24): at most 24 B;
//   - the construction's transient peak, while append grows the codes
//     (old and new slice, 1 + 1.25 times) or the radix sort holds its
//     buffer: about 18 B;
//   - the tuner's own state per configuration: a float64 score and a bool
//     (9 B), a cache entry pointer (8 B), and for the strategies that
//     keep coordinates a float64 per parameter (80 B for 10 parameters).
//
// That is at most 24 + 9 + 8 + 80 = 121 B × 2^24 ≈ 1.9 GiB in all, of
// which the space itself is at most 24 B × 2^24 = 384 MiB (256 MiB at
// exactly 2^24): it fits comfortably in a few GiB, while the 10^9
// configurations of a 9-parameter, 10-value product would need 16 GiB
// for the space alone and over 100 GiB with the tuner's state. The
// benchmark hub's spaces (spec/testdata) have thousands to hundreds of
// thousands of valid configurations; BuildOptions raises the limit for a
// machine with more memory.
const DefaultMaxConfigurations = 1 << 24

// maxStored is the storage format's own bound: configurations are
// numbered by int32 (membership table entries, IndexOf).
const maxStored = math.MaxInt32

// BuildOptions bound BuildContext and BuildBruteForceContext. The zero
// value gives the defaults.
type BuildOptions struct {
	// MaxConfigurations is the largest number of valid configurations
	// accepted; a space with more is refused with *TooLargeError. 0 means
	// DefaultMaxConfigurations; a negative value, or one above
	// 2,147,483,647 (2^31-1, configurations being numbered by int32),
	// means 2,147,483,647, whose space alone can take 32 GiB (16 B per
	// configuration): only for machines that have it.
	MaxConfigurations int

	// MaxExamined bounds the partial configurations the construction
	// examines (search nodes and tabulated evaluations; about 10^7 a
	// second): past it the build stops with *TooSlowError. 0: no bound.
	MaxExamined uint64
	// ExaminedName says how the user raises MaxExamined (a flag).
	ExaminedName string
	// Progress, when set, is called at most once a second during the
	// construction with the partial configurations examined so far and
	// the fraction of the search done (NaN before the enumeration).
	Progress func(examined uint64, fraction float64)

	// LimitName says how the user raises MaxConfigurations (e.g. a flag,
	// "--max-configurations"), named in TooLargeError's message; empty: the
	// message says only "raise the limit".
	LimitName string
}

// limit gives the effective MaxConfigurations.
func (o BuildOptions) limit() int {
	switch {
	case o.MaxConfigurations == 0:
		return DefaultMaxConfigurations
	case o.MaxConfigurations < 0 || o.MaxConfigurations > maxStored:
		return maxStored
	}
	return o.MaxConfigurations
}

// TooLargeError refuses a space with more valid configurations than the
// limit (BuildOptions.MaxConfigurations). It is returned up front, before
// anything in proportion to the space is allocated, when the restrictions show that
// more than Limit configurations are certainly valid (e.g. there are none
// and RawCount > Limit); otherwise as soon as the enumeration has found
// Limit+1 valid configurations, having stored no more than that.
type TooLargeError struct {
	RawCount float64 // configurations of the Cartesian product, as Space.RawCount
	// AtLeast is a number of valid configurations there certainly are,
	// always above Limit: Limit+1 when found by the enumeration, a lower
	// bound (often the exact count) when refused up front. A float64
	// because it may exceed int64 (exact below 2^53).
	AtLeast   float64
	Limit     int    // the limit applied (the effective MaxConfigurations)
	LimitName string // BuildOptions.LimitName, for the message
}

// Error is one line: the raw size, that more than Limit configurations
// are valid, and the remedies; never the parameters' values.
func (e *TooLargeError) Error() string {
	raise := "raise the limit"
	if e.LimitName != "" {
		raise += " (" + e.LimitName + ")"
	}
	valid := fmt.Sprintf("more than the limit of %s are valid", groupInt(float64(e.Limit)))
	if e.AtLeast > float64(e.Limit)+1 {
		valid = fmt.Sprintf("at least %s are valid, more than the limit of %s", groupInt(e.AtLeast), groupInt(float64(e.Limit)))
	}
	return fmt.Sprintf("space: search space too large: %s raw configurations, of which %s; add restrictions, use fewer parameter values, or %s",
		groupInt(e.RawCount), valid, raise)
}

// groupInt writes an integral count with thousands separators while it is
// exact in a float64, else in scientific notation.
func groupInt(x float64) string {
	if x < 0 || x >= 1<<53 || x != math.Trunc(x) {
		return strconv.FormatFloat(x, 'g', 4, 64)
	}
	s := strconv.FormatInt(int64(x), 10)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// pollEvery is how many units of work (search nodes, tabulated
// evaluations, raw configurations of the brute force) pass between two
// looks at the context: a non-blocking channel receive costs ~10 ns,
// 1/1024 of that is noise, and 1,024 nodes take well under 1 ms unless
// the restrictions are very costly, so cancellation is seen promptly.
// (The sort looks every sortChunk elements instead.)
const pollEvery = 1024

// poller looks at a context every pollEvery calls of stop.
type poller struct {
	ctx  context.Context
	done <-chan struct{} // nil: never cancelled (context.Background)
	n    uint32
	err  error // set once stop has seen the context done

	// examined counts the units of work; past maxExamined (0: no bound)
	// the build stops with *TooSlowError. progress, when set, hears of
	// the count and the fraction of the search done (frac, when the
	// enumeration has begun) at most every progressEvery.
	examined    uint64
	maxExamined uint64
	limitName   string
	progress    func(examined uint64, fraction float64)
	frac        func() float64
	lastReport  time.Time
}

// progressEvery is the shortest time between two progress reports.
const progressEvery = time.Second

func newPoller(ctx context.Context) *poller {
	return &poller{ctx: ctx, done: ctx.Done()}
}

// withOptions adds opts' bound on the work and its progress report.
func (p *poller) withOptions(o BuildOptions) *poller {
	p.maxExamined, p.progress, p.limitName = o.MaxExamined, o.Progress, o.ExaminedName
	p.lastReport = time.Now()
	return p
}

// active reports whether stop can ever be true or report: callers skip
// calling it otherwise.
func (p *poller) active() bool { return p.done != nil || p.maxExamined > 0 || p.progress != nil }

// stop reports whether the build must stop (the context is done, or the
// bound on the work is passed), looking only every pollEvery calls.
func (p *poller) stop() bool {
	if !p.active() {
		return false
	}
	p.n++
	if p.n%pollEvery != 0 {
		return false
	}
	p.examined += pollEvery
	if p.maxExamined > 0 && p.examined > p.maxExamined && p.err == nil {
		p.err = &TooSlowError{Examined: p.examined, Limit: p.maxExamined, LimitName: p.limitName}
		return true
	}
	if p.progress != nil && time.Since(p.lastReport) >= progressEvery {
		p.lastReport = time.Now()
		f := math.NaN()
		if p.frac != nil {
			f = p.frac()
		}
		p.progress(p.examined, f)
	}
	return p.now()
}

// TooSlowError is a search space whose construction examined more
// partial configurations (search nodes and tabulated evaluations) than
// BuildOptions.MaxExamined: a huge raw space with restrictions that prune
// little before its last parameters.
type TooSlowError struct {
	Examined, Limit uint64
	LimitName       string // how the user raises the limit
}

func (e *TooSlowError) Error() string {
	raise := "raise the limit"
	if e.LimitName != "" {
		raise = "raise " + e.LimitName
	}
	return fmt.Sprintf("space: building the search space examined more than %s partial configurations without finishing; add restrictions that exclude values early (on fewer parameters), use fewer parameter values, or %s",
		groupInt(float64(e.Limit)), raise)
}

// now looks at the context at once.
func (p *poller) now() bool {
	if p.err != nil {
		return true
	}
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		p.err = fmt.Errorf("space: building the search space: %w", p.ctx.Err())
		return true
	default:
		return false
	}
}

// lowerBound gives a number of configurations certainly valid (unless a
// restriction's evaluation fails, which Build reports as an error
// instead), from the exact tabulations of analyse; 0 when nothing can be
// said (a restriction too large to tabulate). The float64 is rounded
// toward zero, so it stays a lower bound beyond 2^53.
//
// Parameters are split into independent groups (connected by the
// restrictions that read them); the valid count is the product over the
// groups. A parameter no restriction reads is a group of its own, all
// valid. A group's valid count is at least its raw size minus what each
// of its restrictions excludes on its own (Bonferroni's inequality):
// restriction r, not true on fail_r of its size_r tabulated combinations,
// excludes fail_r × raw/size_r configurations of the group. This is exact
// for a group of one restriction, and for restrictions that exclude
// nothing. Integers are big: a group's raw size may exceed 2^64, and the
// subtraction must not lose the small difference of two large numbers.
func lowerBound(params []Param, rs []*rinfo) float64 {
	np := len(params)
	root := make([]int, np)
	for p := range root {
		root[p] = p
	}
	find := func(p int) int {
		for root[p] != p {
			root[p] = root[root[p]]
			p = root[p]
		}
		return p
	}
	for _, ri := range rs {
		if ri.size > tabLimit {
			return 0
		}
		for _, p := range ri.params[1:] {
			root[find(p)] = find(ri.params[0])
		}
	}
	raw := make([]*big.Int, np) // per group root: product of its value counts
	for p := range np {
		g := find(p)
		if raw[g] == nil {
			raw[g] = big.NewInt(1)
		}
		raw[g].Mul(raw[g], big.NewInt(int64(len(params[p].Values))))
	}
	valid := make([]*big.Int, np) // per group root: raw − Σ excluded
	for g, r := range raw {
		if r != nil {
			valid[g] = new(big.Int).Set(r)
		}
	}
	var x big.Int
	for _, ri := range rs {
		g := find(ri.params[0])
		x.Quo(raw[g], big.NewInt(int64(ri.size)))
		x.Mul(&x, big.NewInt(int64(ri.size-ri.trues)))
		valid[g].Sub(valid[g], &x)
	}
	lb := big.NewInt(1)
	for _, v := range valid {
		if v == nil {
			continue
		}
		if v.Sign() <= 0 {
			return 0
		}
		lb.Mul(lb, v)
	}
	f, acc := new(big.Float).SetInt(lb).Float64()
	if acc == big.Above {
		f = math.Nextafter(f, 0)
	}
	return f
}
