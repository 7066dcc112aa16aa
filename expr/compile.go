package expr

import "math"

// evalFn evaluates one compiled node. vals are the bound slots, locals the
// comprehension variables of this evaluation. Values are returned by value,
// so the scalar path allocates nothing.
type evalFn func(vals, locals []Value) (Value, error)

// code is a compiled node: either a constant (folded at compile time) or a
// function. dyn says the node reads a slot; minScope is the outermost
// comprehension scope whose variables it reads (math.MaxInt: none).
type code struct {
	fn       evalFn
	cst      bool
	val      Value
	dyn      bool
	minScope int
}

// resolver maps a free name to a slot or a constant.
type resolver func(name string) (slot int, cst Value, isConst bool, err error)

type compiler struct {
	resolve resolver
	scopes  []map[string]int // comprehension variable -> local index
	nLocals int
}

func constCode(v Value) code {
	return code{cst: true, val: v, minScope: math.MaxInt, fn: func(_, _ []Value) (Value, error) { return v, nil }}
}

// fold turns a code with no dependencies into a constant when it evaluates
// without error (an error is kept for run time, where Python raises it).
func (c *compiler) fold(k code, depth int) code {
	if k.cst || k.dyn || k.minScope < depth {
		return k
	}
	v, err := k.fn(nil, make([]Value, c.nLocals))
	if err != nil {
		return k
	}
	return constCode(v)
}

func merge(ks ...code) (dyn bool, ms int) {
	ms = math.MaxInt
	for _, k := range ks {
		dyn = dyn || k.dyn
		ms = min(ms, k.minScope)
	}
	return
}

func (c *compiler) compile(n *node) (code, error) {
	k, err := c.compile1(n)
	if err != nil {
		return code{}, err
	}
	return c.fold(k, math.MaxInt), nil
}

func (c *compiler) compile1(n *node) (code, error) {
	switch n.op {
	case opConst:
		return constCode(n.val), nil
	case opName:
		for d := len(c.scopes) - 1; d >= 0; d-- {
			if li, ok := c.scopes[d][n.name]; ok {
				return code{minScope: d, fn: func(_, locals []Value) (Value, error) { return locals[li], nil }}, nil
			}
		}
		slot, v, isConst, err := c.resolve(n.name)
		if err != nil {
			return code{}, err
		}
		if isConst {
			return constCode(v), nil
		}
		return code{dyn: true, minScope: math.MaxInt, fn: func(vals, _ []Value) (Value, error) { return vals[slot], nil }}, nil
	case opNeg, opPos, opInvert, opNot:
		x, err := c.compile(n.kids[0])
		if err != nil {
			return code{}, err
		}
		op, xf := n.op, x.fn
		k := code{dyn: x.dyn, minScope: x.minScope}
		if op == opNot {
			k.fn = func(v, l []Value) (Value, error) {
				a, err := xf(v, l)
				if err != nil {
					return Value{}, err
				}
				return Bool(!a.Truthy()), nil
			}
		} else {
			k.fn = func(v, l []Value) (Value, error) {
				a, err := xf(v, l)
				if err != nil {
					return Value{}, err
				}
				return unary(op, a)
			}
		}
		return k, nil
	case opAnd, opOr:
		l, err := c.compile(n.kids[0])
		if err != nil {
			return code{}, err
		}
		r, err := c.compile(n.kids[1])
		if err != nil {
			return code{}, err
		}
		isAnd := n.op == opAnd
		if l.cst {
			if l.val.Truthy() == isAnd {
				return r, nil
			}
			return l, nil
		}
		lf, rf := l.fn, r.fn
		dyn, ms := merge(l, r)
		return code{dyn: dyn, minScope: ms, fn: func(v, lc []Value) (Value, error) {
			a, err := lf(v, lc)
			if err != nil || a.Truthy() != isAnd {
				return a, err
			}
			return rf(v, lc)
		}}, nil
	case opCond:
		t, err := c.compile(n.kids[0])
		if err != nil {
			return code{}, err
		}
		cd, err := c.compile(n.kids[1])
		if err != nil {
			return code{}, err
		}
		e, err := c.compile(n.kids[2])
		if err != nil {
			return code{}, err
		}
		if cd.cst {
			if cd.val.Truthy() {
				return t, nil
			}
			return e, nil
		}
		tf, cf, ef := t.fn, cd.fn, e.fn
		dyn, ms := merge(t, cd, e)
		return code{dyn: dyn, minScope: ms, fn: func(v, l []Value) (Value, error) {
			x, err := cf(v, l)
			if err != nil {
				return Value{}, err
			}
			if x.Truthy() {
				return tf(v, l)
			}
			return ef(v, l)
		}}, nil
	case opAdd, opSub, opMul, opDiv, opFloorDiv, opMod, opPow, opBitAnd, opBitOr, opBitXor, opShl, opShr:
		l, err := c.compile(n.kids[0])
		if err != nil {
			return code{}, err
		}
		r, err := c.compile(n.kids[1])
		if err != nil {
			return code{}, err
		}
		return binCode(n.op, l, r), nil
	case opCompare:
		ks := make([]code, len(n.kids))
		for i, kid := range n.kids {
			k, err := c.compile(kid)
			if err != nil {
				return code{}, err
			}
			ks[i] = k
		}
		return compareCode(n.cmps, ks), nil
	case opList:
		ks := make([]evalFn, len(n.kids))
		cs := make([]code, len(n.kids))
		for i, kid := range n.kids {
			k, err := c.compile(kid)
			if err != nil {
				return code{}, err
			}
			ks[i], cs[i] = k.fn, k
		}
		dyn, ms := merge(cs...)
		return code{dyn: dyn, minScope: ms, fn: func(v, l []Value) (Value, error) {
			out := make([]Value, len(ks))
			for i, f := range ks {
				x, err := f(v, l)
				if err != nil {
					return Value{}, err
				}
				out[i] = x
			}
			return List(out), nil
		}}, nil
	case opIndex:
		ct, err := c.compile(n.kids[0])
		if err != nil {
			return code{}, err
		}
		ix, err := c.compile(n.kids[1])
		if err != nil {
			return code{}, err
		}
		cf, xf := ct.fn, ix.fn
		dyn, ms := merge(ct, ix)
		return code{dyn: dyn, minScope: ms, fn: func(v, l []Value) (Value, error) {
			a, err := cf(v, l)
			if err != nil {
				return Value{}, err
			}
			b, err := xf(v, l)
			if err != nil {
				return Value{}, err
			}
			return index(a, b)
		}}, nil
	case opCall:
		return c.call(n)
	case opComp:
		return c.comprehension(n)
	}
	return code{}, errf("InternalError", "unknown node")
}

func binCode(op opcode, l, r code) code {
	lf, rf := l.fn, r.fn
	dyn, ms := merge(l, r)
	k := code{dyn: dyn, minScope: ms}
	switch {
	case r.cst:
		rv := r.val
		k.fn = func(v, lc []Value) (Value, error) {
			a, err := lf(v, lc)
			if err != nil {
				return Value{}, err
			}
			return arith(op, a, rv)
		}
	case l.cst:
		lv := l.val
		k.fn = func(v, lc []Value) (Value, error) {
			b, err := rf(v, lc)
			if err != nil {
				return Value{}, err
			}
			return arith(op, lv, b)
		}
	default:
		k.fn = func(v, lc []Value) (Value, error) {
			a, err := lf(v, lc)
			if err != nil {
				return Value{}, err
			}
			b, err := rf(v, lc)
			if err != nil {
				return Value{}, err
			}
			return arith(op, a, b)
		}
	}
	return k
}

func compareCode(cmps []cmpOp, ks []code) code {
	dyn, ms := merge(ks...)
	k := code{dyn: dyn, minScope: ms}
	if len(ks) == 2 {
		op, lf, rf := cmps[0], ks[0].fn, ks[1].fn
		if ks[1].cst {
			rv := ks[1].val
			k.fn = func(v, lc []Value) (Value, error) {
				a, err := lf(v, lc)
				if err != nil {
					return Value{}, err
				}
				b, err := compare(op, a, rv)
				return Bool(b), err
			}
			return k
		}
		k.fn = func(v, lc []Value) (Value, error) {
			a, err := lf(v, lc)
			if err != nil {
				return Value{}, err
			}
			b, err := rf(v, lc)
			if err != nil {
				return Value{}, err
			}
			t, err := compare(op, a, b)
			return Bool(t), err
		}
		return k
	}
	fns := make([]evalFn, len(ks))
	for i := range ks {
		fns[i] = ks[i].fn
	}
	// a < b < c is a < b and b < c, with b evaluated once.
	k.fn = func(v, lc []Value) (Value, error) {
		a, err := fns[0](v, lc)
		if err != nil {
			return Value{}, err
		}
		for i, op := range cmps {
			b, err := fns[i+1](v, lc)
			if err != nil {
				return Value{}, err
			}
			t, err := compare(op, a, b)
			if err != nil || !t {
				return Bool(false), err
			}
			a = b
		}
		return Bool(true), nil
	}
	return k
}

func (c *compiler) call(n *node) (code, error) {
	fns := make([]evalFn, len(n.kids))
	cs := make([]code, len(n.kids))
	for i, kid := range n.kids {
		k, err := c.compile(kid)
		if err != nil {
			return code{}, err
		}
		fns[i], cs[i] = k.fn, k
	}
	name := n.name
	dyn, ms := merge(cs...)
	k := code{dyn: dyn, minScope: ms}
	switch len(fns) {
	case 1:
		f0 := fns[0]
		k.fn = func(v, l []Value) (Value, error) {
			a, err := f0(v, l)
			if err != nil {
				return Value{}, err
			}
			return callBuiltin(name, []Value{a})
		}
	case 2:
		f0, f1 := fns[0], fns[1]
		k.fn = func(v, l []Value) (Value, error) {
			a, err := f0(v, l)
			if err != nil {
				return Value{}, err
			}
			b, err := f1(v, l)
			if err != nil {
				return Value{}, err
			}
			return callBuiltin(name, []Value{a, b})
		}
	default:
		k.fn = func(v, l []Value) (Value, error) {
			args := make([]Value, len(fns))
			for i, f := range fns {
				x, err := f(v, l)
				if err != nil {
					return Value{}, err
				}
				args[i] = x
			}
			return callBuiltin(name, args)
		}
	}
	return k, nil
}

type compClause struct {
	local int
	iter  evalFn
	conds []evalFn
}

func (c *compiler) comprehension(n *node) (code, error) {
	depth := len(c.scopes)
	c.scopes = append(c.scopes, map[string]int{})
	defer func() { c.scopes = c.scopes[:depth] }()
	var all []code
	clauses := make([]compClause, len(n.clauses))
	for i, cl := range n.clauses {
		// The first iterable is evaluated in the enclosing scope (Python
		// semantics); later ones see earlier loop variables.
		var it code
		var err error
		if i == 0 {
			saved := c.scopes
			c.scopes = c.scopes[:depth]
			it, err = c.compile(cl.iter)
			c.scopes = saved
		} else {
			it, err = c.compile(cl.iter)
		}
		if err != nil {
			return code{}, err
		}
		li := c.nLocals
		c.nLocals++
		c.scopes[depth][cl.name] = li
		cc := compClause{local: li, iter: it.fn}
		all = append(all, it)
		for _, cn := range cl.conds {
			k, err := c.compile(cn)
			if err != nil {
				return code{}, err
			}
			cc.conds = append(cc.conds, k.fn)
			all = append(all, k)
		}
		clauses[i] = cc
	}
	elt, err := c.compile(n.kids[0])
	if err != nil {
		return code{}, err
	}
	all = append(all, elt)
	ef := elt.fn
	dyn, ms := merge(all...)
	if ms >= depth {
		ms = math.MaxInt // reads only its own variables
	}
	var run func(k int, v, l []Value, out *[]Value) error
	run = func(k int, v, l []Value, out *[]Value) error {
		if k == len(clauses) {
			x, err := ef(v, l)
			if err != nil {
				return err
			}
			if len(*out) >= maxListLen {
				return errf("MemoryError", "list comprehension longer than %d", maxListLen)
			}
			*out = append(*out, x)
			return nil
		}
		cl := clauses[k]
		itv, err := cl.iter(v, l)
		if err != nil {
			return err
		}
		items, err := iterate(itv)
		if err != nil {
			return err
		}
	next:
		for _, it := range items {
			l[cl.local] = it
			for _, cf := range cl.conds {
				t, err := cf(v, l)
				if err != nil {
					return err
				}
				if !t.Truthy() {
					continue next
				}
			}
			if err := run(k+1, v, l, out); err != nil {
				return err
			}
		}
		return nil
	}
	k := code{dyn: dyn, minScope: ms, fn: func(v, l []Value) (Value, error) {
		var out []Value
		if err := run(0, v, l, &out); err != nil {
			return Value{}, err
		}
		return List(out), nil
	}}
	return k, nil
}
