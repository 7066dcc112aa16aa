package space

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/gtune/gtune/expr"
)

// Construction as constraint satisfaction (see Build).

// tabLimit is the largest raw sub-space (product of the value counts of
// the parameters a restriction reads) that is tabulated: evaluated once
// per combination up front, then checked by table lookup.
const tabLimit = 1 << 13

// rinfo is one restriction that reads at least one parameter.
type rinfo struct {
	r      Restriction
	pos    map[string]int // the names r reads (its Scope applied)
	consts expr.Env
	b      *expr.Bound
	params []int   // spec positions read, ascending
	size   int     // raw sub-space size, capped at tabLimit+1
	sel    float64 // estimated fraction of the raw sub-space that passes
	trues  int     // tabulated combinations where it is true (size <= tabLimit, sel)
	tree   *expr.Node
}

// analyse checks and compiles the restrictions. empty is true when a
// restriction reading no parameter is false (no configuration is valid).
func analyse(pl *poller, params []Param, pos map[string]int, restrictions []Restriction, consts expr.Env, sel bool) (rs []*rinfo, empty bool, err error) {
	for _, r := range restrictions {
		if r.Expr == nil {
			return nil, false, fmt.Errorf("space: restriction %s has no expression", r.Source)
		}
		pos, consts := r.scoped(pos, consts)
		slot := func(name string) (int, bool) { i, ok := pos[name]; return i, ok }
		ri := &rinfo{r: r, size: 1, pos: pos, consts: consts}
		for _, n := range r.Expr.Names() {
			if i, ok := pos[n]; ok {
				ri.params = append(ri.params, i)
				continue
			}
			if consts != nil {
				if _, ok := consts.Lookup(n); ok {
					continue
				}
			}
			return nil, false, fmt.Errorf("space: restriction %s reads %q, which is neither a tunable parameter nor a constant", r.label(), n)
		}
		ri.b, err = r.Expr.Bind(slot, consts)
		if err != nil {
			return nil, false, fmt.Errorf("space: restriction %s: %v", r.label(), err)
		}
		if len(ri.params) == 0 {
			// Reads no parameter: decides the whole space at once.
			ok, err := ri.b.Truthy(nil)
			if err != nil {
				return nil, false, fmt.Errorf("space: restriction %s: %v", r.label(), err)
			}
			if !ok {
				empty = true
			}
			continue
		}
		slices.Sort(ri.params)
		for _, p := range ri.params {
			ri.size = min(ri.size*len(params[p].Values), tabLimit+1)
		}
		rs = append(rs, ri)
	}
	if empty || !sel {
		return rs, empty, nil
	}
	// Selectivity: exact over the raw sub-space when it is small enough to
	// tabulate, else from 256 pseudo-random points (fixed seed, so the
	// order is reproducible). A point whose evaluation fails counts as
	// passing, as it does not prune.
	vals := make([]expr.Value, len(params))
	rng := rand.New(rand.NewPCG(0x67746e75, 0x6e65))
	for _, ri := range rs {
		pass, total := 0, 0
		if ri.size <= tabLimit {
			forEach(params, ri.params, vals, func([]int) bool {
				t, err := ri.b.Truthy(vals)
				if err != nil || t {
					pass++
				}
				if err == nil && t {
					ri.trues++
				}
				total++
				return !pl.stop()
			})
			if pl.err != nil {
				return nil, false, pl.err
			}
		} else {
			for range 256 {
				for _, p := range ri.params {
					vals[p] = params[p].Values[rng.IntN(len(params[p].Values))]
				}
				if t, err := ri.b.Truthy(vals); err != nil || t {
					pass++
				}
				total++
			}
		}
		ri.sel = float64(pass) / float64(total)
	}
	return rs, false, nil
}

// forEach calls f for every combination of the values of ps (the last
// varying fastest), with vals[p] set and ix[k] the value index of ps[k],
// until f returns false.
func forEach(params []Param, ps []int, vals []expr.Value, f func(ix []int) bool) {
	ix := make([]int, len(ps))
	for _, p := range ps {
		vals[p] = params[p].Values[0]
	}
	for {
		if !f(ix) {
			return
		}
		k := len(ps) - 1
		for ; k >= 0; k-- {
			p := ps[k]
			ix[k]++
			if ix[k] < len(params[p].Values) {
				vals[p] = params[p].Values[ix[k]]
				break
			}
			ix[k] = 0
			vals[p] = params[p].Values[0]
		}
		if k < 0 {
			return
		}
	}
}

// orderParams gives the order in which parameters are bound:
//
//  1. parameters with a single value (they never branch);
//  2. then restriction by restriction, most restrictive first (smallest
//     estimated pass fraction; ties: fewer parameters, then as written),
//     the parameters the restriction reads that are not placed yet,
//     largest value count first (ties: spec order) — the wide parameters
//     of a bounded product (block_size_x in block_size_x*tile_size_x*... <=
//     C) then make the interval check of the others tight, and a
//     restriction is completed, so checked exactly, as early as possible;
//  3. then the parameters no restriction reads, in spec order: they only
//     multiply the leaves, so binding them last costs no checks.
func orderParams(params []Param, rs []*rinfo) []int {
	np := len(params)
	placed := make([]bool, np)
	order := make([]int, 0, np)
	for p := range np {
		if len(params[p].Values) == 1 {
			order = append(order, p)
			placed[p] = true
		}
	}
	byRestrict := slices.Clone(rs)
	slices.SortStableFunc(byRestrict, func(a, b *rinfo) int {
		if a.sel != b.sel {
			if a.sel < b.sel {
				return -1
			}
			return 1
		}
		return len(a.params) - len(b.params)
	})
	for _, ri := range byRestrict {
		var add []int
		for _, p := range ri.params {
			if !placed[p] {
				add = append(add, p)
				placed[p] = true
			}
		}
		slices.SortStableFunc(add, func(a, b int) int { return len(params[b].Values) - len(params[a].Values) })
		order = append(order, add...)
	}
	for p := range np {
		if !placed[p] {
			order = append(order, p)
		}
	}
	return order
}

// orderHook replaces orderParams in tests and experiments.
var orderHook func(params []Param, rs []*rinfo) []int

// tabCheck is a tabulated restriction checked at one level: the table is
// over the restriction's parameters bound so far (mixed radix in level
// order, the parameter of this level fastest). For the level that
// completes the restriction, entries are 0 (false), 1 (true) or 2 (the
// evaluation failed: re-evaluated there to report the error); for an
// earlier level, an entry is 1 when some completion is not 0 (forward
// checking by exact projection).
type tabCheck struct {
	ri      *rinfo
	params  []int
	strides []int
	table   []uint8
	full    bool
	pass    int       // non-zero entries
	cands   [][]int32 // per prefix: the value indexes of this level's parameter that pass
}

type ivalCheck struct {
	ri *rinfo
	f  ifn
}

type level struct {
	p      int
	driver *tabCheck // generates the candidate values (nil: all)
	tabs   []*tabCheck
	ivals  []ivalCheck
	fulls  []*rinfo
}

// plan builds the checks of each level for the given order; nil when pl
// stops it.
func plan(pl *poller, params []Param, rs []*rinfo, order []int) []level {
	np := len(params)
	lvOf := make([]int, np)
	for d, p := range order {
		lvOf[p] = d
	}
	numeric := make([]bool, np)
	for p := range np {
		numeric[p] = true
		for _, v := range params[p].Values {
			if _, ok := numVal(v); !ok {
				numeric[p] = false
				break
			}
		}
	}
	levels := make([]level, np)
	for d, p := range order {
		levels[d].p = p
	}
	vals := make([]expr.Value, np)
	for _, ri := range rs {
		ps := slices.Clone(ri.params)
		slices.SortFunc(ps, func(a, b int) int { return lvOf[a] - lvOf[b] })
		last := lvOf[ps[len(ps)-1]]
		if ri.size > tabLimit {
			levels[last].fulls = append(levels[last].fulls, ri)
			if len(ps) > 1 {
				if f, ok := compileInterval(ri.r.Expr.Tree(), ri.pos, numeric, ri.consts); ok {
					for _, p := range ps[:len(ps)-1] {
						levels[lvOf[p]].ivals = append(levels[lvOf[p]].ivals, ivalCheck{ri, f})
					}
				}
			}
			continue
		}
		table := make([]uint8, 0, ri.size)
		forEach(params, ps, vals, func([]int) bool {
			t, err := ri.b.Truthy(vals)
			switch {
			case err != nil:
				table = append(table, 2)
			case t:
				table = append(table, 1)
			default:
				table = append(table, 0)
			}
			return !pl.stop()
		})
		if pl.err != nil {
			return nil
		}
		// Projections onto each prefix of ps, longest first.
		cur := table
		for k := len(ps) - 1; k >= 0; k-- {
			tc := &tabCheck{ri: ri, params: ps[:k+1], table: cur, full: k == len(ps)-1}
			tc.strides = make([]int, k+1)
			st := 1
			for m := k; m >= 0; m-- {
				tc.strides[m] = st
				st *= len(params[ps[m]].Values)
			}
			for _, e := range cur {
				if e != 0 {
					tc.pass++
				}
			}
			if tc.full || tc.pass < len(cur) {
				lv := &levels[lvOf[ps[k]]]
				lv.tabs = append(lv.tabs, tc)
			}
			if k == 0 {
				break
			}
			n := len(params[ps[k]].Values)
			proj := make([]uint8, len(cur)/n)
			for i := range proj {
				for _, e := range cur[i*n : (i+1)*n] {
					if e != 0 {
						proj[i] = 1
						break
					}
				}
			}
			cur = proj
		}
	}
	// The tabulated check passing the fewest values drives each level.
	for d := range levels {
		lv := &levels[d]
		best := -1
		for i, tc := range lv.tabs {
			if best < 0 || tc.pass*len(lv.tabs[best].table) < lv.tabs[best].pass*len(tc.table) {
				best = i
			}
		}
		if best < 0 {
			continue
		}
		tc := lv.tabs[best]
		n := len(params[lv.p].Values)
		tc.cands = make([][]int32, len(tc.table)/n)
		for i := range tc.cands {
			for j, e := range tc.table[i*n : (i+1)*n] {
				if e != 0 {
					tc.cands[i] = append(tc.cands[i], int32(j))
				}
			}
		}
		lv.driver = tc
		lv.tabs = slices.Delete(lv.tabs, best, best+1)
	}
	return levels
}

type enumerator struct {
	s      *Space
	levels []level
	vals   []expr.Value
	cur    []int32 // value index per spec position
	lo, hi []float64
	dlo    []float64 // domain [min, max] per parameter (numeric ones)
	dhi    []float64
	fv     [][]float64
	code   []uint64
	out    []uint64
	fail   error
	stats  []int // candidates tried per level, when non-nil (statsHook)

	pl   *poller
	done bool // pl can stop (its context can be cancelled, a bound, progress)
	// levelK and levelN are the candidate being tried at each level and
	// the level's candidate count: the search's position (fraction).
	levelK, levelN []int
	n, limit       int // valid configurations found; the most accepted
	limitName      string
}

// statsHook, when set, receives the binding order and the number of
// candidate values tried per level (tests and experiments).
var statsHook func(order []int, tried []int)

// enumerate fills s.codes with the valid configurations: backtracking in
// the order of orderParams, each restriction checked once all the
// parameters it reads are bound, forward checks at the levels before, and
// a final sort into itertools.product order when the binding order is not
// the spec order. It stops with *TooLargeError at limit+1 valid
// configurations, and with pl.err when pl stops it. atLeast (a lower
// bound on the count, 0 if unknown) sizes the codes up front, sparing
// append's regrowth.
func (s *Space) enumerate(pl *poller, rs []*rinfo, limit, atLeast int, limitName string) error {
	params := s.params
	np := len(params)
	order := orderParams(params, rs)
	if orderHook != nil {
		order = orderHook(params, rs)
	}
	levels := plan(pl, params, rs, order)
	if pl.err != nil {
		return pl.err
	}
	e := &enumerator{
		s: s, levels: levels,
		vals: make([]expr.Value, np), cur: make([]int32, np),
		lo: make([]float64, np), hi: make([]float64, np), dlo: make([]float64, np), dhi: make([]float64, np),
		fv: make([][]float64, np), code: make([]uint64, s.words),
		pl: pl, done: pl.active(), limit: limit, limitName: limitName,
		levelK: make([]int, np), levelN: make([]int, np),
	}
	// The construction ends at the end of the search or at limit+1 valid
	// configurations, whichever comes first: the progress is the further
	// of the two, so that a capped build does not promise hours of a
	// search it will not finish.
	pl.frac = func() float64 {
		return max(e.fraction(), float64(len(e.out)/max(s.words, 1))/float64(limit+1))
	}
	if atLeast > 0 {
		e.out = make([]uint64, 0, min(atLeast, limit)*s.words)
	}
	for p := range np {
		e.fv[p] = make([]float64, len(params[p].Values))
		e.dlo[p], e.dhi[p] = math.Inf(1), math.Inf(-1)
		for j, v := range params[p].Values {
			f, ok := numVal(v)
			if !ok {
				f = math.NaN()
			}
			e.fv[p][j] = f
			e.dlo[p], e.dhi[p] = min(e.dlo[p], f), max(e.dhi[p], f)
		}
		e.lo[p], e.hi[p] = e.dlo[p], e.dhi[p]
	}
	if statsHook != nil {
		e.stats = make([]int, np)
	}
	e.rec(0)
	if statsHook != nil {
		statsHook(order, e.stats)
	}
	if e.fail != nil {
		return e.fail
	}
	s.codes = e.out
	s.n = len(e.out) / s.words
	if !slices.IsSorted(order) {
		if !s.sortCodes(pl) {
			return pl.err
		}
	}
	return nil
}

// fraction is the part of the search tree behind the current position:
// the candidates tried at each level, weighted by the share of the tree
// each stands for (levels deeper than the first few add nothing visible).
func (e *enumerator) fraction() float64 {
	f, share := 0.0, 1.0
	for d := range e.levelN {
		if e.levelN[d] == 0 || share < 1e-9 {
			break
		}
		share /= float64(e.levelN[d])
		f += float64(e.levelK[d]) * share
	}
	return f
}

func (e *enumerator) tabIndex(tc *tabCheck) int {
	i := 0
	for k, p := range tc.params {
		i += int(e.cur[p]) * tc.strides[k]
	}
	return i
}

func (e *enumerator) rec(d int) bool {
	lv := &e.levels[d]
	p := lv.p
	s := e.s
	values := s.params[p].Values
	w, sh := s.word[p], s.shift[p]
	base := e.code[w]
	last := d == len(e.levels)-1
	var cands []int32
	n := len(values)
	if lv.driver != nil {
		// The prefix index of the driver: its table index with this
		// level's parameter at 0, divided by its count.
		e.cur[p] = 0
		cands = lv.driver.cands[e.tabIndex(lv.driver)/n]
		n = len(cands)
	}
next:
	for k := range n {
		j := int32(k)
		if cands != nil {
			j = cands[k]
		}
		if e.done {
			e.levelK[d], e.levelN[d] = k, n
			if e.pl.stop() {
				e.fail = e.pl.err
				return false
			}
		}
		e.cur[p] = j
		e.vals[p] = values[j]
		if e.stats != nil {
			e.stats[d]++
		}
		e.lo[p], e.hi[p] = e.fv[p][j], e.fv[p][j]
		if tc := lv.driver; tc != nil && tc.full && tc.table[e.tabIndex(tc)] == 2 {
			if !e.evalFull(tc.ri, d) {
				return false
			}
		}
		for _, tc := range lv.tabs {
			switch tc.table[e.tabIndex(tc)] {
			case 0:
				continue next
			case 2:
				if tc.full && !e.evalFull(tc.ri, d) {
					return false
				}
			}
		}
		for _, ic := range lv.ivals {
			if truth(ic.f(e.lo, e.hi)) == 0 {
				continue next
			}
		}
		for _, ri := range lv.fulls {
			t, err := ri.b.Truthy(e.vals)
			if err != nil {
				e.failAt(ri, d, err)
				return false
			}
			if !t {
				continue next
			}
		}
		e.code[w] = base | uint64(j)<<sh
		if last {
			if e.n == e.limit {
				e.fail = &TooLargeError{RawCount: s.raw, AtLeast: float64(e.limit) + 1, Limit: e.limit, LimitName: e.limitName}
				return false
			}
			e.n++
			e.out = append(e.out, e.code...)
			continue
		}
		if !e.rec(d + 1) {
			return false
		}
	}
	e.code[w] = base
	e.lo[p], e.hi[p] = e.dlo[p], e.dhi[p]
	return true
}

// evalFull re-evaluates a tabulated restriction whose evaluation failed at
// tabulation, to report the error (true if it now passes, which cannot
// happen for these deterministic expressions).
func (e *enumerator) evalFull(ri *rinfo, d int) bool {
	t, err := ri.b.Truthy(e.vals)
	if err != nil {
		e.failAt(ri, d, err)
		return false
	}
	_ = t
	return true
}

func (e *enumerator) failAt(ri *rinfo, d int, err error) {
	bound := make([]int, 0, d+1)
	for _, lv := range e.levels[:d+1] {
		bound = append(bound, lv.p)
	}
	slices.Sort(bound)
	var b strings.Builder
	b.WriteByte('{')
	for k, p := range bound {
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%s", e.s.params[p].Name, e.vals[p].String())
	}
	b.WriteByte('}')
	e.fail = fmt.Errorf("space: restriction %s failed at %s: %v", ri.r.label(), b.String(), err)
}

// sortCodes puts the configurations in ascending code order, which is
// itertools.product order; false when pl stopped it (the codes are then
// in no particular order).
func (s *Space) sortCodes(pl *poller) bool {
	if s.words == 1 {
		return radixSort(s.codes, pl)
	}
	return radixSortRows(s.codes, s.words, pl)
}

// sortChunk is how many elements a radix pass handles between two looks
// at the context (~0.1 ms of work).
const sortChunk = 1 << 16

// radixSort sorts distinct-bits-bounded keys: LSD radix sort on bytes, over
// only as many bytes as the largest key uses. false when pl stopped it.
func radixSort(a []uint64, pl *poller) bool {
	if len(a) < 256 {
		slices.Sort(a)
		return true
	}
	var or uint64
	for _, x := range a {
		or |= x
	}
	buf := make([]uint64, len(a))
	src, dst := a, buf
	for shift := uint(0); shift < 64 && or>>shift != 0; shift += 8 {
		var count [257]int
		for lo := 0; lo < len(src); lo += sortChunk {
			if pl.now() {
				return false
			}
			for _, x := range src[lo:min(lo+sortChunk, len(src))] {
				count[(x>>shift)&0xff+1]++
			}
		}
		for i := 1; i < 257; i++ {
			count[i] += count[i-1]
		}
		for lo := 0; lo < len(src); lo += sortChunk {
			if pl.now() {
				return false
			}
			for _, x := range src[lo:min(lo+sortChunk, len(src))] {
				b := (x >> shift) & 0xff
				dst[count[b]] = x
				count[b]++
			}
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
	return true
}

// radixSortRows sorts rows of w words (the first most significant) in
// place: LSD radix sort on bytes, from the last word's lowest byte to the
// first word's highest, skipping the bytes that are zero in every row.
// Linear time, so the rare spaces of more than 64 bits of value indexes
// sort as fast per word as the others, and the context is looked at
// between chunks. false when pl stopped it.
func radixSortRows(a []uint64, w int, pl *poller) bool {
	n := len(a) / w
	if n < 2 {
		return true
	}
	or := make([]uint64, w)
	for i := range n {
		for k := range w {
			or[k] |= a[i*w+k]
		}
	}
	buf := make([]uint64, len(a))
	src, dst := a, buf
	for k := w - 1; k >= 0; k-- {
		for shift := uint(0); shift < 64 && or[k]>>shift != 0; shift += 8 {
			var count [257]int
			for lo := 0; lo < n; lo += sortChunk {
				if pl.now() {
					return false
				}
				for i := lo; i < min(lo+sortChunk, n); i++ {
					count[(src[i*w+k]>>shift)&0xff+1]++
				}
			}
			for i := 1; i < 257; i++ {
				count[i] += count[i-1]
			}
			for lo := 0; lo < n; lo += sortChunk {
				if pl.now() {
					return false
				}
				for i := lo; i < min(lo+sortChunk, n); i++ {
					b := (src[i*w+k] >> shift) & 0xff
					copy(dst[count[b]*w:(count[b]+1)*w], src[i*w:(i+1)*w])
					count[b]++
				}
			}
			src, dst = dst, src
		}
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
	return true
}

// BuildBruteForce is BuildBruteForceContext with context.Background()
// and the default options: at most DefaultMaxConfigurations valid
// configurations.
func BuildBruteForce(params []Param, restrictions []Restriction, consts expr.Env) (*Space, error) {
	return BuildBruteForceContext(context.Background(), params, restrictions, consts, BuildOptions{})
}

// BuildBruteForceContext is the reference construction: every
// configuration of the Cartesian product, in itertools.product order,
// evaluated against every restriction (no pruning, no tabulation). It
// gives the same space as BuildContext, far more slowly (time in
// proportion to RawCount()); it exists to check BuildContext and to
// measure what it saves. Errors as BuildContext, except that every raw
// configuration is evaluated, so any failing restriction met before the
// limit is reported; a space is refused up front only when there is no
// restriction (RawCount() valid configurations), else at limit+1 found;
// ctx is looked at every 1,024 raw configurations.
func BuildBruteForceContext(ctx context.Context, params []Param, restrictions []Restriction, consts expr.Env, opts BuildOptions) (*Space, error) {
	pl := newPoller(ctx)
	if pl.now() {
		return nil, pl.err
	}
	s, _, rs, empty, err := prepare(pl, params, restrictions, consts, false)
	if err != nil || empty {
		return s, err
	}
	limit := opts.limit()
	if len(rs) == 0 && s.raw > float64(limit) {
		return nil, &TooLargeError{RawCount: s.raw, AtLeast: s.raw, Limit: limit, LimitName: opts.LimitName}
	}
	np := len(params)
	all := make([]int, np)
	for p := range all {
		all[p] = p
	}
	vals := make([]expr.Value, np)
	code := make([]uint64, s.words)
	var out []uint64
	var fail error
	n := 0
	forEach(params, all, vals, func(ix []int) bool {
		if pl.stop() {
			fail = pl.err
			return false
		}
		for _, ri := range rs {
			t, err := ri.b.Truthy(vals)
			if err != nil {
				fail = fmt.Errorf("space: restriction %s failed at %s: %v", ri.r.label(), describe(params, vals), err)
				return false
			}
			if !t {
				return true
			}
		}
		if n == limit {
			fail = &TooLargeError{RawCount: s.raw, AtLeast: float64(limit) + 1, Limit: limit, LimitName: opts.LimitName}
			return false
		}
		n++
		clear(code)
		for p, j := range ix {
			code[s.word[p]] |= uint64(j) << s.shift[p]
		}
		out = append(out, code...)
		return true
	})
	if fail != nil {
		return nil, fail
	}
	s.codes = out
	s.n = len(out) / s.words
	return s, nil
}
