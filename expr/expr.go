// Package expr is the small, safe Python-subset expression language of T1
// kernel specifications (tunable parameter values, restrictions, sizes,
// metrics).
//
// Supported: int, float, bool (True/False) and string literals; names;
// + - * / // % ** and unary - + ~; & | ^ << >> on ints; comparisons
// == != < <= > >= in, not in, chained (32 <= x*y <= 1024); and, or, not
// (short-circuit, returning the deciding operand as Python does);
// a if c else b; list literals, list + and * (also str); list
// comprehensions with one or more for clauses and if filters (a generator
// expression is accepted as the sole argument of a call: sum(i for i in x));
// indexing with negative indexes; calls of the builtins range, min, max,
// len, abs, int, float, list, sum and round — nothing else is callable and
// there is no attribute access (a.b is a syntax error), so an expression
// cannot reach files, the environment or the network.
//
// Semantics are Python 3's: / is true division giving a float, // floors,
// % takes the sign of the divisor (CPython's float_divmod for floats),
// int ** negative int is a float, ints and floats compare exactly, bool is
// an int in arithmetic, division by zero is a ZeroDivisionError. Deviation:
// ints are int64; a result that does not fit is an OverflowError rather
// than a big integer. Names are looked up eagerly: evaluating an expression
// whose free names are not all defined is a NameError even if
// short-circuiting would skip the name.
//
// Limits. Expressions come from users' spec files, so no input may crash
// the process or run away with its memory or time:
//
//   - Parse refuses a source longer than MaxSourceLen bytes, and one nested
//     deeper than MaxDepth, with a *SyntaxError that names the limit, the
//     actual length or depth, and the column. Depth counts a level per node
//     of the syntax tree, per pair of parentheses and per for clause of a
//     comprehension. A left-deep chain counts too: a+b+c+... with n
//     operands (likewise and, or, x[i][j]...) is n deep, as parsing,
//     compiling and evaluating it recurse n levels; a long sum is written
//     sum([a, b, c, ...]) instead, which is 2 deep. A chained comparison
//     a < b < c < ... is 2 deep at any length.
//   - Bind and Eval only see trees Parse accepted, so they recurse at most
//     MaxDepth levels.
//   - Evaluation refuses, as a MemoryError, a list longer than MaxListLen
//     elements or a str longer than MaxListLen bytes (range(10**12),
//     [0]*10**10, concatenation, comprehensions, list()), before building
//     it, and an evaluation that would take more than MaxSteps steps (list
//     and str elements built or visited, plus the nodes evaluated per
//     comprehension iteration): nested comprehensions and quadratic
//     sum(lists, []) cannot multiply their way around MaxListLen. Constant
//     folding in Parse and Bind shares one such budget per compilation.
//     ** on ints is by repeated squaring with overflow checks, so a huge
//     exponent is an OverflowError at once.
//   - Messages quote source, names and values through Excerpt, so an error
//     never echoes a megabyte of input.
//
// Evaluation is compiled: Parse builds an AST once and compiles it to a
// tree of closures; constant sub-expressions are folded; the scalar path
// (ints, floats, bools) allocates nothing. Bind resolves names to slots of
// a []Value once, for the millions of evaluations of space construction.
package expr

import (
	"slices"
	"sort"
)

// Env supplies the values of free names.
type Env interface {
	Lookup(name string) (Value, bool)
}

// MapEnv is an Env backed by a map.
type MapEnv map[string]Value

// Lookup implements Env.
func (m MapEnv) Lookup(name string) (Value, bool) {
	v, ok := m[name]
	return v, ok
}

// Expr is a parsed expression. It is immutable and safe for concurrent use.
type Expr struct {
	src   string
	root  *node
	names []string
	prog  program // compiled with slot i = names[i]
}

type program struct {
	fn      evalFn
	nLocals int
}

// run evaluates without a frame first, so that evaluations that need none
// (no comprehension left after folding, no big lists) allocate nothing.
func (p program) run(vals []Value) (Value, error) {
	v, err := p.fn(vals, nil)
	if err != errNeedFrame {
		return v, err
	}
	return p.fn(vals, newFrame(p.nLocals))
}

// Parse parses src. The error is a *SyntaxError with the 1-based column of
// the problem, also when src is longer than MaxSourceLen or nested deeper
// than MaxDepth (see the package documentation on limits). Parse also
// compiles src, folding constant sub-expressions, so it can take up to
// about MaxSteps steps.
func Parse(src string) (*Expr, error) {
	root, err := parse(src)
	if err != nil {
		return nil, err
	}
	e := &Expr{src: src, root: root}
	e.names = freeNames(root)
	idx := make(map[string]int, len(e.names))
	for i, n := range e.names {
		idx[n] = i
	}
	e.prog, err = compileProgram(root, func(name string) (int, Value, bool, error) {
		return idx[name], Value{}, false, nil
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// MustParse is Parse that panics on error, for expressions fixed in code.
func MustParse(src string) *Expr {
	e, err := Parse(src)
	if err != nil {
		panic(err)
	}
	return e
}

func compileProgram(root *node, r resolver) (program, error) {
	c := &compiler{resolve: r}
	k, err := c.compile(root)
	if err != nil {
		return program{}, err
	}
	return program{fn: k.fn, nLocals: c.nLocals}, nil
}

// Source gives the expression as written.
func (e *Expr) Source() string { return e.src }

// String gives the expression as written.
func (e *Expr) String() string { return e.src }

// Names gives the free names the expression reads, sorted and unique:
// comprehension variables (inside their comprehension) and the names of
// called builtins are not included. A builtin's name used as a plain value
// (not called) is a free name.
func (e *Expr) Names() []string { return slices.Clone(e.names) }

// Eval evaluates the expression with names from env. Every free name must
// be defined in env (*NameError otherwise); run-time errors are *EvalError,
// a MemoryError among them when a limit (MaxListLen, MaxSteps) is exceeded.
func (e *Expr) Eval(env Env) (Value, error) {
	vals := make([]Value, len(e.names))
	for i, n := range e.names {
		v, ok := env.Lookup(n)
		if !ok {
			return Value{}, &NameError{Name: n}
		}
		vals[i] = v
	}
	return e.prog.run(vals)
}

// Bound is an expression compiled against a fixed layout of slots. It is
// immutable and safe for concurrent use.
type Bound struct {
	src  string
	prog program
}

// Bind compiles e for repeated evaluation: each free name is resolved once,
// first by slot (its index in the vals passed to Eval), else by consts
// (folded in as a constant). A name found in neither is a *NameError.
// slot and consts may be nil. Bind's recursion is bounded by MaxDepth, as
// Parse refused anything deeper; its constant folding by MaxSteps.
func (e *Expr) Bind(slot func(name string) (int, bool), consts Env) (*Bound, error) {
	p, err := compileProgram(e.root, func(name string) (int, Value, bool, error) {
		if slot != nil {
			if i, ok := slot(name); ok {
				return i, Value{}, false, nil
			}
		}
		if consts != nil {
			if v, ok := consts.Lookup(name); ok {
				return 0, v, true, nil
			}
		}
		return 0, Value{}, false, &NameError{Name: name}
	})
	if err != nil {
		return nil, err
	}
	return &Bound{src: e.src, prog: p}, nil
}

// Source gives the expression as written.
func (b *Bound) Source() string { return b.src }

// Eval evaluates with vals holding the slots given to Bind. vals must be
// long enough for every slot; it is only read. Errors are as for
// (*Expr).Eval; the scalar path (ints, floats, bools, and lists or strs of
// up to a thousand elements outside comprehensions) allocates nothing.
func (b *Bound) Eval(vals []Value) (Value, error) { return b.prog.run(vals) }

// Truthy evaluates and gives Python's truth value of the result.
func (b *Bound) Truthy(vals []Value) (bool, error) {
	v, err := b.prog.run(vals)
	if err != nil {
		return false, err
	}
	return v.Truthy(), nil
}

// freeNames walks the AST with comprehension scopes. The recursion is as
// deep as the tree, which Parse bounds by MaxDepth.
func freeNames(root *node) []string {
	set := map[string]bool{}
	bound := map[string]int{} // comprehension variables in scope: how many bind each name
	var walk func(n *node)
	walk = func(n *node) {
		switch n.op {
		case opName:
			if bound[n.name] == 0 {
				set[n.name] = true
			}
			return
		case opComp:
			for _, cl := range n.clauses {
				// The first iterable is read in the enclosing scope: none of
				// this comprehension's variables is bound yet.
				walk(cl.iter)
				bound[cl.name]++
				for _, c := range cl.conds {
					walk(c)
				}
			}
			walk(n.kids[0])
			for _, cl := range n.clauses {
				bound[cl.name]--
			}
			return
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	walk(root)
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
