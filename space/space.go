// Package space holds the tunable parameters of a kernel, its restrictions,
// and the search space: the list of valid configurations (those for which
// every restriction is true), built once by constraint-satisfaction
// backtracking (Build), with neighbourhoods (Neighbors), uniform and Latin
// hypercube sampling.
//
// Configurations are numbered 0..Len()-1 in the order of Python's
// itertools.product over the parameters in the order given (the first
// parameter varies slowest), which is Kernel Tuner's order. A configuration
// is stored as its value indexes (the position of each value in its
// parameter's list) packed into one uint64 when they fit.
package space

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"

	"github.com/gtune/gtune/expr"
)

// Param is one tunable parameter with its list of values, in the order
// written.
type Param struct {
	Name   string
	Values []expr.Value
}

// Restriction is a boolean expression over parameter names (and
// constants); a configuration is valid when every restriction is truthy.
type Restriction struct {
	Expr   *expr.Expr
	Source string // where it came from, for messages (e.g. the spec field); Expr.Source() if empty
	// Scope prefixes every name the expression reads: with Scope "lud.",
	// "block_size_x" reads the parameter (or constant) "lud.block_size_x".
	// A combined space of several kernels (package workload) keeps each
	// kernel's restrictions as written this way, its parameters and
	// constants renamed with the kernel's prefix.
	Scope string
}

// scoped returns the name table and constants r reads through its Scope.
func (r Restriction) scoped(pos map[string]int, consts expr.Env) (map[string]int, expr.Env) {
	if r.Scope == "" {
		return pos, consts
	}
	view := map[string]int{}
	for name, i := range pos {
		if rest, ok := strings.CutPrefix(name, r.Scope); ok {
			view[rest] = i
		}
	}
	if consts != nil {
		consts = scopedEnv{consts, r.Scope}
	}
	return view, consts
}

// scopedEnv reads the constants of one scope (Restriction.Scope).
type scopedEnv struct {
	env   expr.Env
	scope string
}

func (s scopedEnv) Lookup(name string) (expr.Value, bool) { return s.env.Lookup(s.scope + name) }

func (r Restriction) label() string {
	if r.Source != "" && r.Source != r.Expr.Source() {
		return fmt.Sprintf("%s (%q)", r.Source, r.Expr.Source())
	}
	return fmt.Sprintf("%q", r.Expr.Source())
}

// Space is an immutable search space, safe for concurrent use.
//
// Storage: each valid configuration is its value indexes packed into
// words uint64 words (parameter p in bits [shift[p], shift[p]+width[p]) of
// word[p], the first parameter most significant, a single-valued parameter
// taking no bits), so configurations in itertools.product order are in
// ascending code order and a prefix of parameters is a contiguous range.
// Membership (Lookup, IndexOf) goes through an open-addressing hash table
// of int32 (built on first use, at most 50% full). For the benchmark
// spaces this is one word, 8 bytes per configuration, plus 4 to 16 bytes
// of table: see BytesPerConfig.
type Space struct {
	params       []Param
	restrictions []Restriction
	n            int // valid configurations
	raw          float64
	strs         [][]string         // PyStr of each value, per parameter
	valIdx       []map[string]int32 // PyStr -> value index, per parameter
	splitKeys    bool               // keys can be split at ","

	words int      // uint64 words per configuration
	word  []int    // per parameter: which word holds its field
	shift []uint8  // per parameter: bit offset of its field in that word
	mask  []uint64 // per parameter: field mask (0 for a single value)
	codes []uint64 // n*words, ascending

	once  sync.Once
	table []int32 // open addressing: configuration+1, 0 empty
	tbits uint
	byKey map[string]int32 // only when !splitKeys

	presentOnce sync.Once
	present     [][]bool // per parameter: value index used by some valid configuration
}

// layout packs the fields of the parameters into words, first parameter
// in the most significant bits, never splitting a field across words.
func (s *Space) layout() {
	np := len(s.params)
	s.word = make([]int, np)
	s.shift = make([]uint8, np)
	s.mask = make([]uint64, np)
	w, free := 0, 64
	for p, prm := range s.params {
		b := bits.Len(uint(len(prm.Values) - 1))
		if b > free {
			w, free = w+1, 64
		}
		free -= b
		s.word[p], s.shift[p] = w, uint8(free)
		s.mask[p] = (uint64(1) << b) - 1
	}
	s.words = w + 1
}

// field gives the value index of parameter p in configuration i.
func (s *Space) field(i, p int) int32 {
	return int32((s.codes[i*s.words+s.word[p]] >> s.shift[p]) & s.mask[p])
}

// Build is BuildContext with context.Background() and the default
// options: at most DefaultMaxConfigurations valid configurations.
func Build(params []Param, restrictions []Restriction, consts expr.Env) (*Space, error) {
	return BuildContext(context.Background(), params, restrictions, consts, BuildOptions{})
}

// BuildContext enumerates the valid configurations of params under
// restrictions, as a constraint satisfaction problem. consts supplies
// names restrictions may read besides the parameters (may be nil).
//
// Method (see build.go): parameters are bound in the order of orderParams
// (single-valued ones first, then the parameters of the most restrictive
// restrictions first, free parameters last) by backtracking. Each
// restriction is compiled once (expr.Bind) and checked as soon as all the
// parameters it reads are bound. A restriction whose parameters span at
// most 8,192 raw combinations is tabulated up front, with its exact
// projections onto each prefix of its parameters, so that the values of
// the parameter being bound are filtered by table lookup (forward
// checking, e.g. 32 <= x*y <= 1024, a % b == 0, a == b*c) and the most
// selective table supplies the candidate values directly. A larger one is
// forward-checked by interval arithmetic over its syntax tree (unbound
// parameters as [min, max]; exact for bounded sums and products) and
// evaluated in full once complete. The codes are then sorted into
// itertools.product order, so the result is exactly what BuildBruteForce
// gives.
//
// Limits: a space with more than opts.MaxConfigurations valid
// configurations (DefaultMaxConfigurations when 0; see BuildOptions) is
// refused with a *TooLargeError: up front, allocating nothing in
// proportion to the space, when the restrictions are all small enough to
// tabulate and prove it (no restriction and RawCount() above the limit;
// or restrictions that exclude too little, counted exactly over their own
// parameters), otherwise once the enumeration has found one configuration more than
// the limit, having stored only the limit's worth. The time taken is not
// bounded (a huge raw space with few valid configurations takes long to
// search), but ctx is looked at every 1,024 search nodes or tabulated
// evaluations and every 65,536 elements of the final sort: once ctx is
// done, BuildContext returns an error wrapping ctx.Err() (errors.Is(err,
// context.Canceled) or context.DeadlineExceeded) and no space, typically
// within a millisecond (0.05 to 0.3 ms in the tests on 10^9-raw spaces),
// longer only when 1,024 evaluations of the restrictions take longer.
//
// Errors: no parameters; a parameter with no values or a duplicate name;
// more than 2^31-1 values for one parameter; a restriction reading a name
// that is neither a parameter nor a constant (the error names the
// restriction and the name); a restriction whose evaluation fails (e.g.
// ZeroDivisionError), naming the restriction and the partial configuration
// (the bound parameters, in spec order) — Kernel Tuner would raise there
// too; *TooLargeError; the context's error. Note that a restriction is
// only evaluated on partial configurations that passed the checks made
// earlier (in binding order), so an error hidden behind another
// restriction is not reported, and which of two failing restrictions is
// reported may differ from Kernel Tuner; likewise a space refused as too
// large is not searched further for failing restrictions.
func BuildContext(ctx context.Context, params []Param, restrictions []Restriction, consts expr.Env, opts BuildOptions) (*Space, error) {
	pl := newPoller(ctx).withOptions(opts)
	if pl.now() {
		return nil, pl.err
	}
	s, _, rs, empty, err := prepare(pl, params, restrictions, consts, true)
	if err != nil || empty {
		return s, err
	}
	limit := opts.limit()
	lb := float64(0)
	if s.raw > float64(limit) {
		if lb = lowerBound(params, rs); lb > float64(limit) {
			return nil, &TooLargeError{RawCount: s.raw, AtLeast: lb, Limit: limit, LimitName: opts.LimitName}
		}
	} else {
		// Exact sizing of the codes is worth computing only when they
		// might be large enough for append's regrowth to matter.
		if s.raw*float64(s.words) >= 1<<16 {
			lb = lowerBound(params, rs)
		}
	}
	// Sized up front only to a point: a space that is cancelled or fails
	// should not have reserved gigabytes.
	lb = min(lb, DefaultMaxConfigurations)
	if err := s.enumerate(pl, rs, limit, int(lb), opts.LimitName); err != nil {
		return nil, err
	}
	return s, nil
}

// prepare checks the parameters, lays out the packed codes and compiles
// the restrictions (with selectivity estimates when sel).
func prepare(pl *poller, params []Param, restrictions []Restriction, consts expr.Env, sel bool) (s *Space, pos map[string]int, rs []*rinfo, empty bool, err error) {
	if len(params) == 0 {
		return nil, nil, nil, false, fmt.Errorf("space: no tunable parameters")
	}
	np := len(params)
	pos = make(map[string]int, np)
	s = &Space{params: params, restrictions: restrictions, raw: 1, splitKeys: true}
	s.strs = make([][]string, np)
	s.valIdx = make([]map[string]int32, np)
	for i, p := range params {
		if _, dup := pos[p.Name]; dup {
			return nil, nil, nil, false, fmt.Errorf("space: duplicate tunable parameter %q", p.Name)
		}
		if len(p.Values) == 0 {
			return nil, nil, nil, false, fmt.Errorf("space: tunable parameter %q has no values", p.Name)
		}
		if len(p.Values) > math.MaxInt32 {
			return nil, nil, nil, false, fmt.Errorf("space: tunable parameter %q has too many values", p.Name)
		}
		pos[p.Name] = i
		s.raw *= float64(len(p.Values))
		s.strs[i] = make([]string, len(p.Values))
		s.valIdx[i] = make(map[string]int32, len(p.Values))
		for j, v := range p.Values {
			str := v.PyStr()
			s.strs[i][j] = str
			if _, dup := s.valIdx[i][str]; !dup {
				s.valIdx[i][str] = int32(j)
			}
			if strings.Contains(str, ",") {
				s.splitKeys = false
			}
		}
	}
	s.layout()

	rs, empty, err = analyse(pl, params, pos, restrictions, consts, sel)
	if err != nil {
		return nil, nil, nil, false, err
	}
	return s, pos, rs, empty, nil
}

func describe(params []Param, vals []expr.Value) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range vals {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%s", params[i].Name, v.String())
	}
	b.WriteByte('}')
	return b.String()
}

// Params gives the tunable parameters in order. Do not modify.
func (s *Space) Params() []Param { return s.params }

// Restrictions gives the restrictions the space was built with.
func (s *Space) Restrictions() []Restriction { return s.restrictions }

// RawCount is the size of the Cartesian product of the parameter values
// (before restrictions), as a float64 because it may exceed int64.
func (s *Space) RawCount() float64 { return s.raw }

// Len is the number of valid configurations.
func (s *Space) Len() int { return s.n }

// Indexes gives the value index of each parameter of configuration i
// (0 <= i < Len()), in a new slice.
func (s *Space) Indexes(i int) []int32 { return s.IndexesTo(nil, i) }

// IndexesTo is Indexes writing into dst (grown as needed), for loops that
// must not allocate.
func (s *Space) IndexesTo(dst []int32, i int) []int32 {
	np := len(s.params)
	if cap(dst) < np {
		dst = make([]int32, np)
	}
	dst = dst[:np]
	row := s.codes[i*s.words : (i+1)*s.words]
	for p := range dst {
		dst[p] = int32((row[s.word[p]] >> s.shift[p]) & s.mask[p])
	}
	return dst
}

// Values gives the parameter values of configuration i, in parameter
// order, in a new slice.
func (s *Space) Values(i int) []expr.Value {
	out := make([]expr.Value, len(s.params))
	for p := range out {
		out[p] = s.params[p].Values[s.field(i, p)]
	}
	return out
}

// Key is the Kernel Tuner cache key of configuration i: the values' Python
// str() (16, 1.5, True, abc) joined by "," in parameter order.
func (s *Space) Key(i int) string { return s.KeyOf(s.Indexes(i)) }

// KeyOf is the key of the configuration with the given value indexes (which
// need not be valid).
func (s *Space) KeyOf(indexes []int32) string {
	var b strings.Builder
	for p, j := range indexes {
		if p > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s.strs[p][j])
	}
	return b.String()
}

// hash mixes the words of a packed configuration (Fibonacci hashing).
func hash(ws []uint64) uint64 {
	h := uint64(0)
	for _, w := range ws {
		h = (h ^ w) * 0x9E3779B97F4A7C15
		h ^= h >> 29
	}
	return h * 0x9E3779B97F4A7C15
}

// index builds the lookup table on first use, so that building a space
// for enumeration alone does not pay for it.
func (s *Space) index() {
	s.once.Do(func() {
		s.tbits = tableBits(s.n)
		s.table = make([]int32, 1<<s.tbits)
		m := uint64(len(s.table) - 1)
		for i := 0; i < s.n; i++ {
			h := hash(s.codes[i*s.words:(i+1)*s.words]) >> (64 - s.tbits)
			for s.table[h] != 0 {
				h = (h + 1) & m
			}
			s.table[h] = int32(i + 1)
		}
		if !s.splitKeys {
			s.byKey = make(map[string]int32, s.n)
			for i := 0; i < s.n; i++ {
				s.byKey[s.Key(i)] = int32(i)
			}
		}
	})
}

// tableBits sizes the membership table: a power of two at least 2n.
func tableBits(n int) uint {
	return max(1, uint(bits.Len(uint(2*n-1))))
}

// find gives the configuration whose packed code is ws.
func (s *Space) find(ws []uint64) (int, bool) {
	s.index()
	m := uint64(len(s.table) - 1)
	h := hash(ws) >> (64 - s.tbits)
	for {
		e := s.table[h]
		if e == 0 {
			return 0, false
		}
		i := int(e - 1)
		if slices.Equal(s.codes[i*s.words:(i+1)*s.words], ws) {
			return i, true
		}
		h = (h + 1) & m
	}
}

// IndexOf gives the number of the valid configuration with these value
// indexes (one per parameter), or false when it is not valid or the
// indexes are out of range. O(1) expected (open-addressing hash of the
// packed code, built on first use).
func (s *Space) IndexOf(indexes []int32) (int, bool) {
	if len(indexes) != len(s.params) {
		return 0, false
	}
	var buf [4]uint64
	var ws []uint64
	if s.words <= len(buf) {
		ws = buf[:s.words]
	} else {
		ws = make([]uint64, s.words)
	}
	for p, j := range indexes {
		if j < 0 || int(j) >= len(s.params[p].Values) {
			return 0, false
		}
		ws[s.word[p]] |= uint64(j) << s.shift[p]
	}
	return s.find(ws)
}

// Lookup gives the number of the valid configuration with this Kernel Tuner
// key (see Key), or false. O(1) expected after a one-time index build.
func (s *Space) Lookup(key string) (int, bool) {
	if !s.splitKeys {
		s.index()
		i, ok := s.byKey[key]
		return int(i), ok
	}
	ix := make([]int32, len(s.params))
	rest := key
	for p := range s.params {
		part := rest
		if p < len(s.params)-1 {
			c := strings.IndexByte(rest, ',')
			if c < 0 {
				return 0, false
			}
			part, rest = rest[:c], rest[c+1:]
		} else if strings.IndexByte(rest, ',') >= 0 {
			return 0, false
		}
		j, ok := s.valIdx[p][part]
		if !ok {
			return 0, false
		}
		ix[p] = j
	}
	return s.IndexOf(ix)
}

// BytesPerConfig is the memory the stored space takes per valid
// configuration, in bytes: the packed codes plus the membership table
// (counted whether or not it was built yet), excluding the per-parameter
// value lists, which do not grow with the space. 0 for an empty space.
func (s *Space) BytesPerConfig() float64 {
	if s.n == 0 {
		return 0
	}
	return float64(8*len(s.codes)+4*(1<<tableBits(s.n))) / float64(s.n)
}

// IndexesOf maps parameter values (one per parameter, in order) to value
// indexes, comparing with Python == (so 16.0 finds 16). ok is false when a
// value is not in its parameter's list.
func (s *Space) IndexesOf(values []expr.Value) ([]int32, bool) {
	if len(values) != len(s.params) {
		return nil, false
	}
	out := make([]int32, len(values))
	for p, v := range values {
		found := false
		for j, w := range s.params[p].Values {
			if v.Equal(w) {
				out[p], found = int32(j), true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return out, true
}

// Subset is the space of configurations idx of s (numbers 0..Len()-1,
// in any order, repeats counted once) with s's parameters and
// restrictions, numbered in s's order: for measuring a chosen set of
// configurations again (a profiling pass over a run's valid ones).
// Errors: a number out of range.
func (s *Space) Subset(idx []int) (*Space, error) {
	sorted := slices.Clone(idx)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	if len(sorted) > 0 && (sorted[0] < 0 || sorted[len(sorted)-1] >= s.n) {
		return nil, fmt.Errorf("space: subset: configuration number out of range 0..%d", s.n-1)
	}
	sub := &Space{params: s.params, restrictions: s.restrictions, n: len(sorted), raw: s.raw,
		strs: s.strs, valIdx: s.valIdx, splitKeys: s.splitKeys,
		words: s.words, word: s.word, shift: s.shift, mask: s.mask,
		codes: make([]uint64, 0, len(sorted)*s.words)}
	for _, i := range sorted {
		sub.codes = append(sub.codes, s.codes[i*s.words:(i+1)*s.words]...)
	}
	return sub, nil
}
