package expr

import "math"

// evalFn evaluates one compiled node. vals are the bound slots; f holds the
// comprehension variables and the work done by this evaluation, and is nil
// in the first, frameless run of each evaluation (see frame). Values are
// returned by value, so the scalar path allocates nothing.
type evalFn func(vals []Value, f *frame) (Value, error)

// code is a compiled node: either a constant (folded at compile time) or a
// function. dyn says the node reads a slot; minScope is the outermost
// comprehension scope whose variables it reads (math.MaxInt: none); noFold
// says that folding it, or a node below it, failed, so that folding it
// again would only repeat the failing evaluation.
type code struct {
	fn       evalFn
	cst      bool
	val      Value
	dyn      bool
	noFold   bool
	minScope int
}

// resolver maps a free name to a slot or a constant.
type resolver func(name string) (slot int, cst Value, isConst bool, err error)

// binding is a comprehension variable in scope: the comprehension's nesting
// level and the variable's index in frame.locals.
type binding struct{ scope, local int }

type compiler struct {
	resolve resolver
	vars    map[string][]binding // innermost binding last
	scopes  int                  // comprehensions enclosing the node being compiled
	nLocals int
	nodes   int // nodes compiled so far, for the cost of comprehension iterations
	// foldSteps is the work of all constant folding so far: one budget of
	// MaxSteps for the whole compilation, as for one evaluation.
	foldSteps int
}

func constCode(v Value) code {
	return code{cst: true, val: v, minScope: math.MaxInt, fn: func([]Value, *frame) (Value, error) { return v, nil }}
}

// fold turns a code with no dependencies into a constant when it evaluates
// without error (an error is kept for run time, where Python raises it).
func (c *compiler) fold(k code) code {
	if k.cst || k.dyn || k.noFold || k.minScope != math.MaxInt {
		return k
	}
	f := newFrame(c.nLocals)
	f.steps = c.foldSteps
	v, err := k.fn(nil, f)
	c.foldSteps = f.steps
	if err != nil {
		k.noFold = true
		return k
	}
	return constCode(v)
}

func merge(ks ...code) code {
	m := code{minScope: math.MaxInt}
	for _, k := range ks {
		m.dyn = m.dyn || k.dyn
		m.noFold = m.noFold || k.noFold
		m.minScope = min(m.minScope, k.minScope)
	}
	return m
}

func (c *compiler) compile(n *node) (code, error) {
	c.nodes++
	k, err := c.compile1(n)
	if err != nil {
		return code{}, err
	}
	return c.fold(k), nil
}

func (c *compiler) compile1(n *node) (code, error) {
	switch n.op {
	case opConst:
		return constCode(n.val), nil
	case opName:
		if bs := c.vars[n.name]; len(bs) > 0 {
			b := bs[len(bs)-1]
			li := b.local
			return code{minScope: b.scope, fn: func(_ []Value, f *frame) (Value, error) { return f.locals[li], nil }}, nil
		}
		slot, v, isConst, err := c.resolve(n.name)
		if err != nil {
			return code{}, err
		}
		if isConst {
			return constCode(v), nil
		}
		return code{dyn: true, minScope: math.MaxInt, fn: func(vals []Value, _ *frame) (Value, error) { return vals[slot], nil }}, nil
	case opNeg, opPos, opInvert, opNot:
		x, err := c.compile(n.kids[0])
		if err != nil {
			return code{}, err
		}
		op, xf := n.op, x.fn
		k := merge(x)
		if op == opNot {
			k.fn = func(v []Value, f *frame) (Value, error) {
				a, err := xf(v, f)
				if err != nil {
					return Value{}, err
				}
				return Bool(!a.Truthy()), nil
			}
		} else {
			k.fn = func(v []Value, f *frame) (Value, error) {
				a, err := xf(v, f)
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
		k := merge(l, r)
		k.fn = func(v []Value, f *frame) (Value, error) {
			a, err := lf(v, f)
			if err != nil || a.Truthy() != isAnd {
				return a, err
			}
			return rf(v, f)
		}
		return k, nil
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
		k := merge(t, cd, e)
		k.fn = func(v []Value, f *frame) (Value, error) {
			x, err := cf(v, f)
			if err != nil {
				return Value{}, err
			}
			if x.Truthy() {
				return tf(v, f)
			}
			return ef(v, f)
		}
		return k, nil
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
		// No charge for the elements: there are as many as nodes, which a
		// comprehension charges per iteration, and outside comprehensions
		// every node runs once.
		k := merge(cs...)
		k.fn = func(v []Value, f *frame) (Value, error) {
			out := make([]Value, len(ks))
			for i, kf := range ks {
				x, err := kf(v, f)
				if err != nil {
					return Value{}, err
				}
				out[i] = x
			}
			return List(out), nil
		}
		return k, nil
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
		k := merge(ct, ix)
		k.fn = func(v []Value, f *frame) (Value, error) {
			a, err := cf(v, f)
			if err != nil {
				return Value{}, err
			}
			b, err := xf(v, f)
			if err != nil {
				return Value{}, err
			}
			return index(a, b)
		}
		return k, nil
	case opCall:
		return c.call(n)
	case opComp:
		return c.comprehension(n)
	}
	return code{}, errf("InternalError", "unknown node")
}

func binCode(op opcode, l, r code) code {
	lf, rf := l.fn, r.fn
	k := merge(l, r)
	switch {
	case r.cst:
		rv := r.val
		k.fn = func(v []Value, f *frame) (Value, error) {
			a, err := lf(v, f)
			if err != nil {
				return Value{}, err
			}
			if isIntLike(a) && isIntLike(rv) { // the hot path, one call shorter
				return intArith(op, a, rv)
			}
			return arith(op, a, rv, f)
		}
	case l.cst:
		lv := l.val
		k.fn = func(v []Value, f *frame) (Value, error) {
			b, err := rf(v, f)
			if err != nil {
				return Value{}, err
			}
			if isIntLike(lv) && isIntLike(b) {
				return intArith(op, lv, b)
			}
			return arith(op, lv, b, f)
		}
	default:
		k.fn = func(v []Value, f *frame) (Value, error) {
			a, err := lf(v, f)
			if err != nil {
				return Value{}, err
			}
			b, err := rf(v, f)
			if err != nil {
				return Value{}, err
			}
			if isIntLike(a) && isIntLike(b) {
				return intArith(op, a, b)
			}
			return arith(op, a, b, f)
		}
	}
	return k
}

func compareCode(cmps []cmpOp, ks []code) code {
	k := merge(ks...)
	if len(ks) == 2 {
		op, lf, rf := cmps[0], ks[0].fn, ks[1].fn
		if ks[1].cst {
			rv := ks[1].val
			k.fn = func(v []Value, f *frame) (Value, error) {
				a, err := lf(v, f)
				if err != nil {
					return Value{}, err
				}
				b, err := compare(op, a, rv, f)
				return Bool(b), err
			}
			return k
		}
		k.fn = func(v []Value, f *frame) (Value, error) {
			a, err := lf(v, f)
			if err != nil {
				return Value{}, err
			}
			b, err := rf(v, f)
			if err != nil {
				return Value{}, err
			}
			t, err := compare(op, a, b, f)
			return Bool(t), err
		}
		return k
	}
	fns := make([]evalFn, len(ks))
	for i := range ks {
		fns[i] = ks[i].fn
	}
	// a < b < c is a < b and b < c, with b evaluated once.
	k.fn = func(v []Value, f *frame) (Value, error) {
		a, err := fns[0](v, f)
		if err != nil {
			return Value{}, err
		}
		for i, op := range cmps {
			b, err := fns[i+1](v, f)
			if err != nil {
				return Value{}, err
			}
			t, err := compare(op, a, b, f)
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
	k := merge(cs...)
	switch len(fns) {
	case 1:
		f0 := fns[0]
		k.fn = func(v []Value, f *frame) (Value, error) {
			a, err := f0(v, f)
			if err != nil {
				return Value{}, err
			}
			return callBuiltin(name, []Value{a}, f)
		}
	case 2:
		f0, f1 := fns[0], fns[1]
		k.fn = func(v []Value, f *frame) (Value, error) {
			a, err := f0(v, f)
			if err != nil {
				return Value{}, err
			}
			b, err := f1(v, f)
			if err != nil {
				return Value{}, err
			}
			return callBuiltin(name, []Value{a, b}, f)
		}
	default:
		k.fn = func(v []Value, f *frame) (Value, error) {
			args := make([]Value, len(fns))
			for i, af := range fns {
				x, err := af(v, f)
				if err != nil {
					return Value{}, err
				}
				args[i] = x
			}
			return callBuiltin(name, args, f)
		}
	}
	return k, nil
}

type compClause struct {
	local int
	iter  evalFn
	conds []evalFn
	// cost is the steps charged per item of this clause's iterable: the
	// item, its conditions, and the next clause's iterable or the element
	// (the nodes evaluated for it, an upper bound on the work done there
	// apart from operations that charge for themselves).
	cost int
}

func (c *compiler) comprehension(n *node) (code, error) {
	depth := c.scopes
	c.scopes++
	var declared []string
	defer func() {
		c.scopes = depth
		for _, name := range declared {
			c.vars[name] = c.vars[name][:len(c.vars[name])-1]
		}
	}()
	var all []code
	clauses := make([]compClause, len(n.clauses))
	nextCost := make([]int, len(n.clauses)+1) // nodes of clause i's iterable; the last: the element's
	for i, cl := range n.clauses {
		// The first iterable is evaluated in the enclosing scope (Python
		// semantics): this comprehension's variables are not declared yet,
		// and it may fold as a constant there. Later ones see earlier loop
		// variables.
		start := c.nodes
		it, err := c.compile(cl.iter)
		if err != nil {
			return code{}, err
		}
		nextCost[i] = c.nodes - start
		li := c.nLocals
		c.nLocals++
		if c.vars == nil {
			c.vars = map[string][]binding{}
		}
		c.vars[cl.name] = append(c.vars[cl.name], binding{scope: depth, local: li})
		declared = append(declared, cl.name)
		cc := compClause{local: li, iter: it.fn, cost: 1}
		all = append(all, it)
		start = c.nodes
		for _, cn := range cl.conds {
			k, err := c.compile(cn)
			if err != nil {
				return code{}, err
			}
			cc.conds = append(cc.conds, k.fn)
			all = append(all, k)
		}
		cc.cost += c.nodes - start
		clauses[i] = cc
	}
	start := c.nodes
	elt, err := c.compile(n.kids[0])
	if err != nil {
		return code{}, err
	}
	nextCost[len(n.clauses)] = c.nodes - start
	for i := range clauses {
		clauses[i].cost += nextCost[i+1]
	}
	all = append(all, elt)
	ef := elt.fn
	k := merge(all...)
	if k.minScope >= depth {
		k.minScope = math.MaxInt // reads only its own variables
	}
	var run func(i int, v []Value, f *frame, out *[]Value) error
	run = func(i int, v []Value, f *frame, out *[]Value) error {
		if i == len(clauses) {
			x, err := ef(v, f)
			if err != nil {
				return err
			}
			if len(*out) >= MaxListLen {
				return errf("MemoryError", "list comprehension would have more than %d elements (the limit is %d)", MaxListLen, MaxListLen)
			}
			*out = append(*out, x)
			return nil
		}
		cl := clauses[i]
		itv, err := cl.iter(v, f)
		if err != nil {
			return err
		}
		items, err := iterate(itv, f)
		if err != nil {
			return err
		}
	next:
		for _, it := range items {
			if f.steps += cl.cost; f.steps > MaxSteps {
				return f.chargeSlow(0)
			}
			f.locals[cl.local] = it
			for _, cf := range cl.conds {
				t, err := cf(v, f)
				if err != nil {
					return err
				}
				if !t.Truthy() {
					continue next
				}
			}
			if err := run(i+1, v, f, out); err != nil {
				return err
			}
		}
		return nil
	}
	k.fn = func(v []Value, f *frame) (Value, error) {
		if f == nil {
			return Value{}, errNeedFrame
		}
		var out []Value
		if err := run(0, v, f, &out); err != nil {
			return Value{}, err
		}
		return List(out), nil
	}
	return k, nil
}
