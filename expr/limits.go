package expr

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits. Every expression comes from a user's spec file, so no input may
// crash the process (Go's stack overflow is fatal, not a panic) or keep it
// busy or growing without end: Parse, Bind and Eval are bounded by these.
const (
	// MaxSourceLen is the longest source Parse accepts, in bytes: far more
	// than any real spec needs (a literal list of 100,000 numbers fits),
	// and small enough that the tokens, syntax tree and compiled closures
	// of the longest source stay within a few hundred MB.
	MaxSourceLen = 1 << 20

	// MaxDepth is the deepest nesting Parse accepts (see the package
	// documentation for how depth is counted). Parsing, compiling and
	// evaluating recurse once per level, so this bounds their stack use to
	// a few MB, far below Go's fatal 1 GB. It is five times CPython's limit
	// of 200 nested brackets, and accepts chains a+b+c+... of up to 1000
	// operands; CPython's compiler also recurses per operand and gives up
	// on chains some thousands long.
	MaxDepth = 1000

	// MaxListLen is the longest list (in elements) or str (in bytes) that
	// evaluation builds: range, repetition, concatenation, comprehensions,
	// list() and iteration over a str.
	MaxListLen = 1 << 22

	// MaxSteps bounds the work of one evaluation: list and str elements
	// built or visited, plus the nodes evaluated by each comprehension
	// iteration. It is about half a second of work and at most about 1 GB
	// of allocation (a Value is 32 bytes), and nesting comprehensions
	// cannot multiply it. A comprehension over range(2**22) with a small
	// body fits.
	MaxSteps = 1 << 25
)

// freeSteps is the work an operation may do without being counted when the
// evaluation has no frame: small lists and strings (x in [1, 2, 4]) keep the
// frameless, allocation-free path. Outside comprehensions each node runs
// once per evaluation, so uncounted work is at most freeSteps per node.
const freeSteps = 1024

// ExcerptLen is the most characters Excerpt returns.
const ExcerptLen = 80

// Excerpt shortens an expression's source (or any text) for an error
// message: text of at most ExcerptLen characters is returned unchanged;
// longer text is cut to its first characters followed by "…" and the total
// length, e.g. "1+1+1+…(800001 characters)", at most ExcerptLen characters
// in all.
func Excerpt(src string) string {
	if len(src) <= ExcerptLen {
		return src
	}
	n := utf8.RuneCountInString(src)
	if n <= ExcerptLen {
		return src
	}
	suffix := fmt.Sprintf("…(%d characters)", n)
	return src[:runeOffset(src, ExcerptLen-utf8.RuneCountInString(suffix))] + suffix
}

// runeOffset gives the byte offset of the k-th character of s (len(s) when
// s is shorter).
func runeOffset(s string, k int) int {
	i := 0
	for ; k > 0 && i < len(s); k-- {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return i
}

// sourceWindow gives the part of src to print under a syntax error and the
// caret's offset in it for the 1-based character column col. Tabs and line
// breaks are shown as spaces so that the caret lines up.
func sourceWindow(src string, col int) (string, int) {
	caret := max(col-1, 0)
	flat := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '\n' || r == '\r' || r == '\t' {
				return ' '
			}
			return r
		}, s)
	}
	if len(src) <= ExcerptLen || utf8.RuneCountInString(src) <= ExcerptLen {
		return flat(src), caret
	}
	const before = ExcerptLen / 2
	start := max(caret-before, 0)
	i := runeOffset(src, start)
	j := i + runeOffset(src[i:], ExcerptLen)
	line := flat(src[i:j])
	if start > 0 {
		line = "…" + line
		caret = caret - start + 1
	}
	if j < len(src) {
		line += "…"
	}
	return line, caret
}

func errTooLong(src string) *SyntaxError {
	cut := MaxSourceLen
	for cut > 0 && !utf8.RuneStart(src[cut]) {
		cut--
	}
	return &SyntaxError{Source: src, Column: utf8.RuneCountInString(src[:cut]) + 1,
		Msg: fmt.Sprintf("expression too long: %d bytes (the limit is %d)", len(src), MaxSourceLen)}
}

// frame is the per-evaluation state that not every evaluation needs: the
// comprehension variables and the work done so far. A program first runs
// with a nil frame, which allocates nothing; a comprehension, or an
// operation that would do more than freeSteps of work, then returns
// errNeedFrame, and the program runs again with a frame. Evaluation has no
// side effects, so the rerun gives the same result.
type frame struct {
	steps  int
	locals []Value
	buf    [4]Value // locals of small comprehensions, in the same allocation
}

var errNeedFrame = errors.New("expr: internal: evaluation needs a frame")

func newFrame(nLocals int) *frame {
	f := &frame{}
	if nLocals <= len(f.buf) {
		f.locals = f.buf[:nLocals]
	} else {
		f.locals = make([]Value, nLocals)
	}
	return f
}

// charge counts n steps of work against MaxSteps. It is small enough to be
// inlined: the frameless path of x in [1, 2, 4] is hot.
func (f *frame) charge(n int) error {
	if f == nil && n <= freeSteps {
		return nil
	}
	return f.chargeSlow(n)
}

func (f *frame) chargeSlow(n int) error {
	if f == nil {
		return errNeedFrame
	}
	f.steps += n
	if f.steps > MaxSteps {
		return errf("MemoryError", "evaluation too costly: %d steps so far (elements built or visited, comprehension iterations); the limit is %d", f.steps, MaxSteps)
	}
	return nil
}

// build refuses a list of n elements, or a str of n bytes, longer than
// MaxListLen, and charges for building it.
func (f *frame) build(what string, n int64) error {
	if n > MaxListLen {
		unit := "elements"
		if strings.HasPrefix(what, "str ") {
			unit = "bytes"
		}
		return errf("MemoryError", "%s would have %d %s (the limit is %d)", what, n, unit, MaxListLen)
	}
	return f.charge(int(n))
}

// Kinds of pending operators and open brackets of measureDepth.
const (
	mPrefix = iota
	mBinary
	mCompare // n-ary: a < b < c
	mIf      // a if b, waiting for else
	mElse    // a if b else c
)

type mOp struct {
	kind, prec, n int // n: operands of an mCompare
}

type mFrame struct {
	kind     byte // 0 the whole expression, '(' parentheses, '[' list, 'c' call, 'i' index
	ops      int  // where the frame's operators start on the stack
	vals     int  // where its operand depths start
	maxPart  int  // deepest finished part: list element, argument, comprehension part, indexed container
	clauses  int  // for clauses; > 0 makes it a comprehension
	trailing bool // the last token was a comma: a closing bracket may follow
}

var binaryPrec = map[string]int{"or": 2, "and": 3, "|": 6, "^": 7, "&": 8, "<<": 9, ">>": 9,
	"+": 10, "-": 10, "*": 11, "/": 11, "//": 11, "%": 11, "**": 13}

const (
	precIf      = 1
	precNot     = 4
	precCompare = 5
	precUnary   = 12
	precPow     = 13
)

// measureDepth gives the nesting depth that mk would give the expression
// in toks, computed with explicit stacks (operator precedence) instead of
// recursion, so that the error for an expression nested 100,000 deep can say
// how deep it is. For a valid expression it equals the root's h (the fuzz
// test checks this); for an invalid one it gives the depth of the part
// before the first token it cannot place, with open brackets closed.
func measureDepth(toks []token) int {
	var (
		vals    []int
		ops     []mOp
		frames  = []mFrame{{}}
		operand = true // the next token must start an operand
	)
	top := func() *mFrame { return &frames[len(frames)-1] }
	pop := func() int {
		if len(vals) <= top().vals {
			return 0 // an operand is missing: invalid input
		}
		v := vals[len(vals)-1]
		vals = vals[:len(vals)-1]
		return v
	}
	apply := func(o mOp) {
		n := 2 // mBinary, mIf
		switch o.kind {
		case mPrefix:
			n = 1
		case mCompare:
			n = o.n
		case mElse:
			n = 3
		}
		h := 0
		for range n {
			h = max(h, pop())
		}
		vals = append(vals, h+1)
	}
	// reduce applies the frame's pending operators that bind tighter than
	// an incoming one: those with prec > above.
	reduce := func(above int) {
		for len(ops) > top().ops && ops[len(ops)-1].prec > above {
			o := ops[len(ops)-1]
			ops = ops[:len(ops)-1]
			apply(o)
		}
	}
	// part finishes an element, argument or comprehension part.
	part := func() {
		reduce(0)
		f := top()
		f.maxPart = max(f.maxPart, pop())
	}
	closeFrame := func() {
		part()
		f := frames[len(frames)-1]
		frames = frames[:len(frames)-1]
		vals, ops = vals[:f.vals], ops[:f.ops]
		h := f.maxPart + 1
		switch {
		case f.kind == '[' && f.clauses > 0:
			h = f.maxPart + f.clauses
		case f.kind == 'c' && f.clauses > 0:
			h = f.maxPart + f.clauses + 1
		}
		vals = append(vals, h)
		operand = false
	}
	isKw := func(i int, kw string) bool { return i < len(toks) && toks[i].kind == tName && toks[i].text == kw }

	i := 0
scan:
	for ; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tEOF {
			break
		}
		f := top()
		trailing := f.trailing
		f.trailing = false
		if operand {
			switch {
			case t.kind == tInt || t.kind == tFloat:
			case t.kind == tStr:
				for i+1 < len(toks) && toks[i+1].kind == tStr {
					i++
				}
			case t.kind == tName && t.text == "not":
				ops = append(ops, mOp{kind: mPrefix, prec: precNot})
				continue
			case t.kind == tName:
				if keywords[t.text] && t.text != "True" && t.text != "False" {
					break scan
				}
			case t.kind == tOp && (t.text == "-" || t.text == "+" || t.text == "~"):
				ops = append(ops, mOp{kind: mPrefix, prec: precUnary})
				continue
			case t.kind == tOp && (t.text == "(" || t.text == "["):
				frames = append(frames, mFrame{kind: t.text[0], ops: len(ops), vals: len(vals)})
				if t.text == "[" && i+1 < len(toks) && toks[i+1].kind == tOp && toks[i+1].text == "]" {
					i++
					closeFrame()
				}
				continue
			case t.kind == tOp && trailing && (t.text == ")" && f.kind == 'c' || t.text == "]" && f.kind == '['):
				closeFrame()
				continue
			default:
				break scan
			}
			vals = append(vals, 1)
			operand = false
			continue
		}
		if t.kind == tName && t.text == "not" && isKw(i+1, "in") {
			i++
			t = toks[i]
		}
		if p, ok := binaryPrec[t.text]; ok && (t.kind == tOp || t.text == "or" || t.text == "and") {
			if p == precPow {
				reduce(p) // right-associative
			} else {
				reduce(p - 1)
			}
			ops = append(ops, mOp{kind: mBinary, prec: p})
			operand = true
			continue
		}
		switch {
		case t.kind == tOp && strings.Contains(" == != < <= > >= ", " "+t.text+" ") || t.kind == tName && t.text == "in":
			reduce(precCompare)
			if n := len(ops); n > f.ops && ops[n-1].kind == mCompare {
				ops[n-1].n++
			} else {
				ops = append(ops, mOp{kind: mCompare, prec: precCompare, n: 2})
			}
			operand = true
		case t.kind == tName && t.text == "if" && f.clauses > 0: // a comprehension's filter
			part()
			operand = true
		case t.kind == tName && t.text == "if":
			reduce(precIf)
			ops = append(ops, mOp{kind: mIf, prec: precIf})
			operand = true
		case t.kind == tName && t.text == "else":
			reduce(precIf)
			if n := len(ops); n == f.ops || ops[n-1].kind != mIf {
				break scan
			}
			ops[len(ops)-1].kind = mElse
			operand = true
		case t.kind == tName && t.text == "for" && (f.kind == '[' || f.kind == 'c'):
			part()
			f.clauses++
			if i+2 >= len(toks) || toks[i+1].kind != tName || keywords[toks[i+1].text] || !isKw(i+2, "in") {
				break scan
			}
			i += 2
			operand = true
		case t.kind == tOp && t.text == "," && (f.kind == '[' && f.clauses == 0 || f.kind == 'c'):
			part()
			f.trailing = true
			operand = true
		case t.kind == tOp && (t.text == ")" && (f.kind == '(' || f.kind == 'c') || t.text == "]" && (f.kind == '[' || f.kind == 'i')):
			closeFrame()
		case t.kind == tOp && t.text == "(": // a call: the callee is not a level of its own
			pop()
			frames = append(frames, mFrame{kind: 'c', ops: len(ops), vals: len(vals)})
			if i+1 < len(toks) && toks[i+1].kind == tOp && toks[i+1].text == ")" {
				i++
				closeFrame()
			} else {
				operand = true
			}
		case t.kind == tOp && t.text == "[": // indexing: the container is a part
			c := pop()
			frames = append(frames, mFrame{kind: 'i', ops: len(ops), vals: len(vals), maxPart: c})
			operand = true
		default:
			break scan
		}
	}
	for len(frames) > 1 {
		closeFrame()
	}
	reduce(0)
	h := 0
	for _, v := range vals {
		h = max(h, v)
	}
	return h
}
