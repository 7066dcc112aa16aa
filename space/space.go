// Package space holds the tunable parameters of a kernel, its restrictions,
// and the search space: the list of valid configurations (those for which
// every restriction is true), built once by backtracking.
//
// Configurations are numbered 0..Len()-1 in the order of Python's
// itertools.product over the parameters in the order given (the first
// parameter varies slowest), which is Kernel Tuner's order. A configuration
// is stored as one value index per parameter.
package space

import (
	"fmt"
	"math"
	"math/bits"
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
}

func (r Restriction) label() string {
	if r.Source != "" && r.Source != r.Expr.Source() {
		return fmt.Sprintf("%s (%q)", r.Source, r.Expr.Source())
	}
	return fmt.Sprintf("%q", r.Expr.Source())
}

// Space is an immutable search space, safe for concurrent use.
type Space struct {
	params       []Param
	restrictions []Restriction
	n            int     // valid configurations
	idx          []int32 // row-major: configuration i is idx[i*np : (i+1)*np]
	raw          float64
	strs         [][]string         // PyStr of each value, per parameter
	valIdx       []map[string]int32 // PyStr -> value index, per parameter
	splitKeys    bool               // keys can be split at ","
	radix        []uint64           // mixed-radix strides (when codesOK)
	codesOK      bool

	once    sync.Once
	byCode  map[uint64]int32
	byKey   map[string]int32 // only when !splitKeys
	byIdxes map[string]int32 // only when !codesOK
}

// Build enumerates the valid configurations of params under restrictions.
// consts supplies names restrictions may read besides the parameters (may
// be nil). Each restriction is compiled once (expr.Bind) and evaluated as
// soon as the parameters it reads are bound, so a prefix that violates it
// prunes every configuration below it.
//
// Errors: no parameters; a parameter with no values or a duplicate name;
// more than 2^31-1 values for one parameter; a restriction reading a name
// that is neither a parameter nor a constant (the error names the
// restriction and the name); a restriction whose evaluation fails (e.g.
// ZeroDivisionError), naming the restriction and the partial configuration
// — Kernel Tuner would raise there too. Note that a restriction is only
// evaluated on partial configurations that passed the restrictions
// checkable earlier, so an error hidden behind another restriction is not
// reported.
func Build(params []Param, restrictions []Restriction, consts expr.Env) (*Space, error) {
	if len(params) == 0 {
		return nil, fmt.Errorf("space: no tunable parameters")
	}
	np := len(params)
	pos := make(map[string]int, np)
	s := &Space{params: params, restrictions: restrictions, raw: 1, splitKeys: true, codesOK: true}
	s.strs = make([][]string, np)
	s.valIdx = make([]map[string]int32, np)
	s.radix = make([]uint64, np)
	for i, p := range params {
		if _, dup := pos[p.Name]; dup {
			return nil, fmt.Errorf("space: duplicate tunable parameter %q", p.Name)
		}
		if len(p.Values) == 0 {
			return nil, fmt.Errorf("space: tunable parameter %q has no values", p.Name)
		}
		if len(p.Values) > math.MaxInt32 {
			return nil, fmt.Errorf("space: tunable parameter %q has too many values", p.Name)
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
	// Strides for the mixed-radix code of a configuration (first parameter
	// most significant), usable when the raw count fits in a uint64.
	stride := uint64(1)
	for i := np - 1; i >= 0; i-- {
		s.radix[i] = stride
		hi, lo := bits.Mul64(stride, uint64(len(params[i].Values)))
		if hi != 0 {
			s.codesOK = false
		}
		stride = lo
	}

	// levels[d]: restrictions checkable once parameters 0..d are bound.
	levels := make([][]*expr.Bound, np)
	levelSrc := make([][]Restriction, np)
	slot := func(name string) (int, bool) { i, ok := pos[name]; return i, ok }
	for _, r := range restrictions {
		if r.Expr == nil {
			return nil, fmt.Errorf("space: restriction %s has no expression", r.Source)
		}
		last := -1
		for _, n := range r.Expr.Names() {
			if i, ok := pos[n]; ok {
				last = max(last, i)
				continue
			}
			if consts != nil {
				if _, ok := consts.Lookup(n); ok {
					continue
				}
			}
			return nil, fmt.Errorf("space: restriction %s reads %q, which is neither a tunable parameter nor a constant", r.label(), n)
		}
		b, err := r.Expr.Bind(slot, consts)
		if err != nil {
			return nil, fmt.Errorf("space: restriction %s: %v", r.label(), err)
		}
		if last < 0 {
			// Reads no parameter: decides the whole space at once.
			ok, err := b.Truthy(nil)
			if err != nil {
				return nil, fmt.Errorf("space: restriction %s: %v", r.label(), err)
			}
			if !ok {
				return s, nil
			}
			continue
		}
		levels[last] = append(levels[last], b)
		levelSrc[last] = append(levelSrc[last], r)
	}

	vals := make([]expr.Value, np)
	cur := make([]int32, np)
	var out []int32
	var fail error
	var rec func(d int) bool
	rec = func(d int) bool {
		p := params[d]
		for j, v := range p.Values {
			vals[d] = v
			cur[d] = int32(j)
			ok := true
			for k, b := range levels[d] {
				t, err := b.Truthy(vals)
				if err != nil {
					fail = fmt.Errorf("space: restriction %s failed at %s: %v", levelSrc[d][k].label(), describe(params, vals[:d+1]), err)
					return false
				}
				if !t {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
			if d == np-1 {
				out = append(out, cur...)
				s.n++
				if s.n > math.MaxInt32 {
					fail = fmt.Errorf("space: more than %d valid configurations", math.MaxInt32)
					return false
				}
				continue
			}
			if !rec(d + 1) {
				return false
			}
		}
		return true
	}
	rec(0)
	if fail != nil {
		return nil, fail
	}
	s.idx = out
	return s, nil
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
// (0 <= i < Len()). The slice is a view into the space: do not modify it.
func (s *Space) Indexes(i int) []int32 {
	np := len(s.params)
	return s.idx[i*np : (i+1)*np : (i+1)*np]
}

// Values gives the parameter values of configuration i, in parameter
// order, in a new slice.
func (s *Space) Values(i int) []expr.Value {
	ix := s.Indexes(i)
	out := make([]expr.Value, len(ix))
	for p, j := range ix {
		out[p] = s.params[p].Values[j]
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

func (s *Space) code(ix []int32) uint64 {
	var c uint64
	for p, j := range ix {
		c += uint64(j) * s.radix[p]
	}
	return c
}

func idxString(ix []int32) string {
	var b strings.Builder
	for _, j := range ix {
		fmt.Fprintf(&b, "%d,", j)
	}
	return b.String()
}

// index builds the lookup tables on first use, so that building a space
// for enumeration alone does not pay for them.
func (s *Space) index() {
	s.once.Do(func() {
		if s.codesOK {
			s.byCode = make(map[uint64]int32, s.n)
		} else {
			s.byIdxes = make(map[string]int32, s.n)
		}
		if !s.splitKeys {
			s.byKey = make(map[string]int32, s.n)
		}
		for i := 0; i < s.n; i++ {
			ix := s.Indexes(i)
			if s.codesOK {
				s.byCode[s.code(ix)] = int32(i)
			} else {
				s.byIdxes[idxString(ix)] = int32(i)
			}
			if !s.splitKeys {
				s.byKey[s.KeyOf(ix)] = int32(i)
			}
		}
	})
}

// IndexOf gives the number of the valid configuration with these value
// indexes (one per parameter), or false when it is not valid or the
// indexes are out of range. O(1) after a one-time index build.
func (s *Space) IndexOf(indexes []int32) (int, bool) {
	if len(indexes) != len(s.params) {
		return 0, false
	}
	for p, j := range indexes {
		if j < 0 || int(j) >= len(s.params[p].Values) {
			return 0, false
		}
	}
	s.index()
	var i int32
	var ok bool
	if s.codesOK {
		i, ok = s.byCode[s.code(indexes)]
	} else {
		i, ok = s.byIdxes[idxString(indexes)]
	}
	return int(i), ok
}

// Lookup gives the number of the valid configuration with this Kernel Tuner
// key (see Key), or false. O(1) after a one-time index build.
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
