package expr

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SyntaxError is returned by Parse for an expression that is not in the
// supported Python subset.
type SyntaxError struct {
	Source string // the expression as given
	Column int    // 1-based column (in characters) where the problem is
	Msg    string
}

// Error gives the message, then the source with a caret under the column
// (tabs and line breaks shown as spaces, to keep the caret in place). A
// source longer than ExcerptLen characters is shown as a window of about
// ExcerptLen characters around the column, so that the error of a huge
// expression stays short.
func (e *SyntaxError) Error() string {
	line, caret := sourceWindow(e.Source, e.Column)
	return fmt.Sprintf("syntax error at column %d: %s\n    %s\n    %s^", e.Column, e.Msg, line, strings.Repeat(" ", caret))
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tInt
	tFloat
	tStr
	tName
	tOp
)

// token is 32 bytes: a source of MaxSourceLen bytes can have a token per
// byte or two, and their values are kept aside.
type token struct {
	kind tokKind
	lit  int32  // literal: index of its value in lexer.lits
	pos  int    // byte offset
	text string // operator text, name, or raw literal
}

var keywords = map[string]bool{"and": true, "or": true, "not": true, "in": true, "if": true, "else": true, "for": true,
	"True": true, "False": true, "None": true, "is": true, "lambda": true}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isIdentPart(r rune) bool  { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

type lexer struct {
	src  string
	toks []token
	lits []Value
}

func (lx *lexer) literal(kind tokKind, pos int, text string, v Value) token {
	lx.lits = grow(lx.lits)
	lx.lits = append(lx.lits, v)
	return token{kind: kind, lit: int32(len(lx.lits) - 1), pos: pos, text: text}
}

func (lx *lexer) add(t token) {
	lx.toks = grow(lx.toks)
	lx.toks = append(lx.toks, t)
}

// grow doubles a full slice: append grows large slices by a quarter, which
// for the tokens of a long source allocates five times their final size.
func grow[T any](s []T) []T {
	if len(s) < cap(s) || len(s) < 256 {
		return s
	}
	return append(make([]T, 0, 2*cap(s)), s...)
}

func (lx *lexer) errAt(pos int, format string, a ...any) *SyntaxError {
	return &SyntaxError{Source: lx.src, Column: utf8.RuneCountInString(lx.src[:min(pos, len(lx.src))]) + 1, Msg: fmt.Sprintf(format, a...)}
}

var ops3 = []string{"**=", "//=", ">>=", "<<="}
var ops2 = []string{"**", "//", "==", "!=", "<=", ">=", "<<", ">>", "<>", "+=", "-=", "*=", "/=", ":="}

func (lx *lexer) run() *SyntaxError {
	s := lx.src
	i := 0
	for i < len(s) {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			i++
			continue
		}
		start := i
		switch {
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j, tk, err := lx.number(i)
			if err != nil {
				return err
			}
			lx.add(tk)
			i = j
			continue
		case c == '\'' || c == '"':
			j, v, err := lx.str(i)
			if err != nil {
				return err
			}
			lx.add(lx.literal(tStr, start, "", Str(v)))
			i = j
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if isIdentStart(r) {
			j := i + w
			for j < len(s) {
				r2, w2 := utf8.DecodeRuneInString(s[j:])
				if !isIdentPart(r2) {
					break
				}
				j += w2
			}
			word := s[i:j]
			// String prefixes (r'', b'', f'') are not supported.
			if j < len(s) && (s[j] == '\'' || s[j] == '"') {
				return lx.errAt(i, "string prefix %q is not supported", Excerpt(word))
			}
			lx.add(token{kind: tName, pos: i, text: word})
			i = j
			continue
		}
		op := ""
		for _, o := range ops3 {
			if strings.HasPrefix(s[i:], o) {
				op = o
			}
		}
		if op == "" {
			for _, o := range ops2 {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
		}
		if op == "" {
			if strings.ContainsRune("+-*/%<>()[],.:~&|^=!@{}", r) {
				op = string(r)
			} else if r == '#' {
				return lx.errAt(i, "comments are not supported")
			} else {
				return lx.errAt(i, "unexpected character %q", r)
			}
		}
		lx.add(token{kind: tOp, pos: i, text: op})
		i += len(op)
	}
	lx.add(token{kind: tEOF, pos: len(s)})
	return nil
}

func (lx *lexer) number(i int) (int, token, *SyntaxError) {
	s := lx.src
	start := i
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' || c == '_' }
	if s[i] == '0' && i+1 < len(s) && strings.IndexByte("xXoObB", s[i+1]) >= 0 {
		base := map[byte]int{'x': 16, 'X': 16, 'o': 8, 'O': 8, 'b': 2, 'B': 2}[s[i+1]]
		j := i + 2
		for j < len(s) && (isHex(s[j]) || s[j] == '_') {
			j++
		}
		txt := strings.ReplaceAll(s[i+2:j], "_", "")
		n, err := strconv.ParseInt(txt, base, 64)
		if err != nil {
			return 0, token{}, lx.errAt(start, "invalid or too large integer literal %q", Excerpt(s[start:j]))
		}
		return lx.afterNumber(j, lx.literal(tInt, start, s[start:j], Int(n)))
	}
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	isFloat := false
	if j < len(s) && s[j] == '.' {
		isFloat = true
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && s[k] >= '0' && s[k] <= '9' {
			isFloat = true
			j = k
			for j < len(s) && isDigit(s[j]) {
				j++
			}
		}
	}
	txt := strings.ReplaceAll(s[start:j], "_", "")
	if strings.HasPrefix(txt, ".") {
		txt = "0" + txt
	}
	if isFloat {
		f, err := strconv.ParseFloat(txt, 64)
		if err != nil && !strings.Contains(err.Error(), "range") {
			return 0, token{}, lx.errAt(start, "invalid float literal %q", Excerpt(s[start:j]))
		}
		return lx.afterNumber(j, lx.literal(tFloat, start, s[start:j], Float(f)))
	}
	if len(txt) > 1 && txt[0] == '0' && strings.Trim(txt, "0") != "" {
		return 0, token{}, lx.errAt(start, "leading zeros in decimal integer literals are not permitted")
	}
	n, err := strconv.ParseInt(txt, 10, 64)
	if err != nil {
		return 0, token{}, lx.errAt(start, "integer literal %q exceeds 64-bit range", Excerpt(s[start:j]))
	}
	return lx.afterNumber(j, lx.literal(tInt, start, s[start:j], Int(n)))
}

func (lx *lexer) afterNumber(j int, tk token) (int, token, *SyntaxError) {
	if j < len(lx.src) {
		r, _ := utf8.DecodeRuneInString(lx.src[j:])
		if isIdentPart(r) {
			return 0, token{}, lx.errAt(j, "invalid number literal")
		}
	}
	return j, tk, nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (lx *lexer) str(i int) (int, string, *SyntaxError) {
	s := lx.src
	q := s[i]
	start := i
	if strings.HasPrefix(s[i:], strings.Repeat(string(q), 3)) {
		return 0, "", lx.errAt(i, "triple-quoted strings are not supported")
	}
	i++
	var b strings.Builder
	for i < len(s) {
		c := s[i]
		switch {
		case c == q:
			return i + 1, b.String(), nil
		case c == '\n':
			return 0, "", lx.errAt(start, "unterminated string literal")
		case c == '\\':
			if i+1 >= len(s) {
				return 0, "", lx.errAt(start, "unterminated string literal")
			}
			e := s[i+1]
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case '\\', '\'', '"':
				b.WriteByte(e)
			case 'x':
				if i+3 >= len(s) || !isHex(s[i+2]) || !isHex(s[i+3]) {
					return 0, "", lx.errAt(i, "invalid \\x escape")
				}
				n, _ := strconv.ParseUint(s[i+2:i+4], 16, 8)
				b.WriteRune(rune(n))
				i += 2
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
			i += 2
		default:
			b.WriteByte(c)
			i++
		}
	}
	return 0, "", lx.errAt(start, "unterminated string literal")
}

// ---- AST ----

type opcode uint8

const (
	opConst opcode = iota
	opName
	opNeg
	opPos
	opInvert
	opNot
	opAnd
	opOr
	opCond // kids: then, cond, else
	opAdd
	opSub
	opMul
	opDiv
	opFloorDiv
	opMod
	opPow
	opBitAnd
	opBitOr
	opBitXor
	opShl
	opShr
	opCompare // kids: operands; cmps: operators
	opList
	opComp  // kids[0]: element; clauses
	opCall  // name: builtin; kids: args
	opIndex // kids: container, index
)

type cmpOp uint8

const (
	cmpEq cmpOp = iota
	cmpNe
	cmpLt
	cmpLe
	cmpGt
	cmpGe
	cmpIn
	cmpNotIn
)

var cmpText = [...]string{"==", "!=", "<", "<=", ">", ">=", "in", "not in"}

type clause struct {
	name  string
	iter  *node
	conds []*node
}

type node struct {
	op      opcode
	pos     int
	h       int // nesting depth of the subtree (see mk)
	val     Value
	name    string
	kids    []*node
	cmps    []cmpOp
	clauses []clause
}

// builtins are the only callable names.
var builtins = map[string]bool{"range": true, "min": true, "max": true, "len": true, "abs": true,
	"int": true, "float": true, "list": true, "sum": true, "round": true}

type parser struct {
	lx   *lexer
	toks []token
	i    int
	// depth counts the levels that enclose the tokens being parsed and
	// will be ancestors of what is parsed there (brackets, unary and
	// conditional operators, the right side of **). It never counts a level
	// that the finished tree lacks, so refusing depth > MaxDepth refuses
	// only trees that are too deep, and it stops the recursive descent
	// before the Go stack grows with it.
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}
func (p *parser) isOp(s string) bool { t := p.peek(); return t.kind == tOp && t.text == s }
func (p *parser) isKw(s string) bool { t := p.peek(); return t.kind == tName && t.text == s }

func (p *parser) errTok(t token, format string, a ...any) *SyntaxError {
	return p.lx.errAt(t.pos, format, a...)
}

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of expression"
	case tOp:
		return fmt.Sprintf("%q", t.text)
	case tName:
		if keywords[t.text] {
			return fmt.Sprintf("keyword %q", t.text)
		}
		return fmt.Sprintf("name %q", Excerpt(t.text))
	case tStr:
		return "string literal"
	}
	return fmt.Sprintf("number %s", Excerpt(t.text))
}

func (p *parser) unexpected(t token) *SyntaxError {
	if t.kind == tOp {
		switch t.text {
		case ".":
			return p.errTok(t, "attribute access is not supported")
		case "=", "+=", "-=", "*=", "/=", "**=", "//=", ">>=", "<<=", ":=":
			return p.errTok(t, "assignment is not supported (use == to compare)")
		case "{", "}":
			return p.errTok(t, "dicts and sets are not supported")
		case ":":
			return p.errTok(t, "slices and lambdas are not supported")
		case "<>", "!", "@":
			return p.errTok(t, "invalid operator %q", t.text)
		}
	}
	if t.kind == tName {
		switch t.text {
		case "None":
			return p.errTok(t, "None is not supported")
		case "is":
			return p.errTok(t, "'is' is not supported (use ==)")
		case "lambda":
			return p.errTok(t, "lambda is not supported")
		}
	}
	return p.errTok(t, "unexpected %s", describe(t))
}

func (p *parser) expect(s string) *SyntaxError {
	if p.isOp(s) || p.isKw(s) {
		p.next()
		return nil
	}
	t := p.peek()
	if t.kind == tEOF {
		return p.errTok(t, "expected %q, got end of expression", s)
	}
	if e := p.unexpected(t); !strings.HasPrefix(e.Msg, "unexpected") {
		return e
	}
	return p.errTok(t, "expected %q, got %s", s, describe(t))
}

// open enters a level at token t; close leaves it. The level may have
// nothing below it ([], max()), so only the level itself is sure.
func (p *parser) open(t token) *SyntaxError {
	p.depth++
	if p.depth > MaxDepth {
		return p.tooDeep(t.pos, p.depth)
	}
	return nil
}

func (p *parser) close() { p.depth-- }

// mk sets n.h, the nesting depth of n's subtree, and refuses n when the
// levels that enclose it and its depth exceed MaxDepth. Left-deep chains
// (a+b+c, a and b and c, x[0][1]) are built by loops, not recursion, so they
// are caught here: a chain of n operands is n deep.
//
// Depth counts one level per node, plus one per pair of parentheses (they
// recurse like any other level) and one per for clause of a comprehension
// (compiled as nested loops): h(leaf) = 1, h(n) = 1 + max h(kids),
// h((x)) = 1 + h(x), h(comprehension) = clauses + max h(element, iterables,
// conditions). measureDepth computes the same without a tree.
func (p *parser) mk(n *node) (*node, *SyntaxError) {
	h := 0
	for _, k := range n.kids {
		h = max(h, k.h)
	}
	if n.op == opComp {
		for _, cl := range n.clauses {
			h = max(h, cl.iter.h)
			for _, c := range cl.conds {
				h = max(h, c.h)
			}
		}
		n.h = h + len(n.clauses)
	} else {
		n.h = h + 1
	}
	if p.depth+n.h > MaxDepth {
		return nil, p.tooDeep(n.pos, p.depth+n.h)
	}
	return n, nil
}

// tooDeep reports the depth of the whole expression, measured without
// recursion, not only the depth (atLeast) where the parser stopped.
func (p *parser) tooDeep(pos, atLeast int) *SyntaxError {
	d := max(measureDepth(p.toks), atLeast)
	return p.lx.errAt(pos, "expression nested too deeply: depth %d (the limit is %d)", d, MaxDepth)
}

// expr := or_test ['if' or_test 'else' expr]
func (p *parser) expr() (*node, *SyntaxError) {
	n, err := p.orTest()
	if err != nil {
		return nil, err
	}
	if p.isKw("if") {
		t := p.next()
		if err := p.open(t); err != nil {
			return nil, err
		}
		c, err := p.orTest()
		if err != nil {
			return nil, err
		}
		if err := p.expect("else"); err != nil {
			return nil, err
		}
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		p.close()
		return p.mk(&node{op: opCond, pos: t.pos, kids: []*node{n, c, e}})
	}
	return n, nil
}

func (p *parser) orTest() (*node, *SyntaxError) {
	n, err := p.andTest()
	if err != nil {
		return nil, err
	}
	for p.isKw("or") {
		t := p.next()
		r, err := p.andTest()
		if err != nil {
			return nil, err
		}
		if n, err = p.mk(&node{op: opOr, pos: t.pos, kids: []*node{n, r}}); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func (p *parser) andTest() (*node, *SyntaxError) {
	n, err := p.notTest()
	if err != nil {
		return nil, err
	}
	for p.isKw("and") {
		t := p.next()
		r, err := p.notTest()
		if err != nil {
			return nil, err
		}
		if n, err = p.mk(&node{op: opAnd, pos: t.pos, kids: []*node{n, r}}); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func (p *parser) notTest() (*node, *SyntaxError) {
	if p.isKw("not") {
		t := p.next()
		if err := p.open(t); err != nil {
			return nil, err
		}
		x, err := p.notTest()
		if err != nil {
			return nil, err
		}
		p.close()
		return p.mk(&node{op: opNot, pos: t.pos, kids: []*node{x}})
	}
	return p.comparison()
}

func (p *parser) cmpOperator() (cmpOp, bool) {
	t := p.peek()
	if t.kind == tOp {
		switch t.text {
		case "==":
			return cmpEq, true
		case "!=":
			return cmpNe, true
		case "<":
			return cmpLt, true
		case "<=":
			return cmpLe, true
		case ">":
			return cmpGt, true
		case ">=":
			return cmpGe, true
		}
	}
	if t.kind == tName {
		if t.text == "in" {
			return cmpIn, true
		}
		if t.text == "not" && p.toks[p.i+1].kind == tName && p.toks[p.i+1].text == "in" {
			return cmpNotIn, true
		}
	}
	return 0, false
}

func (p *parser) comparison() (*node, *SyntaxError) {
	first, err := p.bitOr()
	if err != nil {
		return nil, err
	}
	op, ok := p.cmpOperator()
	if !ok {
		return first, nil
	}
	n := &node{op: opCompare, pos: p.peek().pos, kids: []*node{first}}
	for ok {
		p.next()
		if op == cmpNotIn {
			p.next()
		}
		r, err := p.bitOr()
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, r)
		n.cmps = append(n.cmps, op)
		op, ok = p.cmpOperator()
	}
	return p.mk(n)
}

func (p *parser) binary(ops map[string]opcode, next func() (*node, *SyntaxError)) (*node, *SyntaxError) {
	n, err := next()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tOp {
			return n, nil
		}
		op, ok := ops[t.text]
		if !ok {
			return n, nil
		}
		p.next()
		r, err := next()
		if err != nil {
			return nil, err
		}
		if n, err = p.mk(&node{op: op, pos: t.pos, kids: []*node{n, r}}); err != nil {
			return nil, err
		}
	}
}

var (
	orOps    = map[string]opcode{"|": opBitOr}
	xorOps   = map[string]opcode{"^": opBitXor}
	andOps   = map[string]opcode{"&": opBitAnd}
	shiftOps = map[string]opcode{"<<": opShl, ">>": opShr}
	arithOps = map[string]opcode{"+": opAdd, "-": opSub}
	termOps  = map[string]opcode{"*": opMul, "/": opDiv, "//": opFloorDiv, "%": opMod}
)

func (p *parser) bitOr() (*node, *SyntaxError)  { return p.binary(orOps, p.bitXor) }
func (p *parser) bitXor() (*node, *SyntaxError) { return p.binary(xorOps, p.bitAnd) }
func (p *parser) bitAnd() (*node, *SyntaxError) { return p.binary(andOps, p.shift) }
func (p *parser) shift() (*node, *SyntaxError)  { return p.binary(shiftOps, p.arith) }
func (p *parser) arith() (*node, *SyntaxError)  { return p.binary(arithOps, p.term) }
func (p *parser) term() (*node, *SyntaxError)   { return p.binary(termOps, p.factor) }

// factor := ('+'|'-'|'~') factor | power
func (p *parser) factor() (*node, *SyntaxError) {
	t := p.peek()
	if t.kind == tOp && (t.text == "-" || t.text == "+" || t.text == "~") {
		p.next()
		if err := p.open(t); err != nil {
			return nil, err
		}
		x, err := p.factor()
		if err != nil {
			return nil, err
		}
		p.close()
		op := map[string]opcode{"-": opNeg, "+": opPos, "~": opInvert}[t.text]
		return p.mk(&node{op: op, pos: t.pos, kids: []*node{x}})
	}
	return p.power()
}

// power := primary ['**' factor]   (right-associative; -2**2 == -4; 2**-1 == 0.5)
func (p *parser) power() (*node, *SyntaxError) {
	n, err := p.primary()
	if err != nil {
		return nil, err
	}
	if p.isOp("**") {
		t := p.next()
		if err := p.open(t); err != nil {
			return nil, err
		}
		r, err := p.factor()
		if err != nil {
			return nil, err
		}
		p.close()
		return p.mk(&node{op: opPow, pos: t.pos, kids: []*node{n, r}})
	}
	return n, nil
}

func (p *parser) primary() (*node, *SyntaxError) {
	n, err := p.atom()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tOp {
			return n, nil
		}
		switch t.text {
		case "(":
			if n.op != opName {
				return nil, p.errTok(t, "only the builtins %s can be called", builtinList())
			}
			if !builtins[n.name] {
				return nil, p.lx.errAt(n.pos, "%q is not callable (only the builtins %s can be called)", Excerpt(n.name), builtinList())
			}
			p.next()
			if err := p.open(t); err != nil {
				return nil, err
			}
			call := &node{op: opCall, pos: n.pos, name: n.name}
			if !p.isOp(")") {
				for {
					a, err := p.expr()
					if err != nil {
						return nil, err
					}
					if p.isKw("for") {
						// A generator expression as sole argument: sum(i for i in x).
						if len(call.kids) > 0 {
							return nil, p.errTok(p.peek(), "generator expression must be the only argument")
						}
						// The call's level is open, as it should be: the
						// call encloses the comprehension.
						if a, err = p.comprehension(a, a.pos); err != nil {
							return nil, err
						}
						if a, err = p.mk(a); err != nil {
							return nil, err
						}
						call.kids = append(call.kids, a)
						break
					}
					call.kids = append(call.kids, a)
					if p.isOp("=") {
						return nil, p.errTok(p.peek(), "keyword arguments are not supported")
					}
					if !p.isOp(",") {
						break
					}
					p.next()
					if p.isOp(")") {
						break
					}
				}
			}
			if err := p.expect(")"); err != nil {
				return nil, err
			}
			p.close()
			if n, err = p.mk(call); err != nil {
				return nil, err
			}
		case "[":
			p.next()
			if err := p.open(t); err != nil {
				return nil, err
			}
			idx, err := p.expr()
			if err != nil {
				return nil, err
			}
			if p.isOp(":") {
				return nil, p.errTok(p.peek(), "slices are not supported")
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			p.close()
			if n, err = p.mk(&node{op: opIndex, pos: t.pos, kids: []*node{n, idx}}); err != nil {
				return nil, err
			}
		case ".":
			return nil, p.errTok(t, "attribute access is not supported")
		default:
			return n, nil
		}
	}
}

func builtinList() string {
	return "range, min, max, len, abs, int, float, list, sum, round"
}

func (p *parser) atom() (*node, *SyntaxError) {
	t := p.next()
	switch t.kind {
	case tInt, tFloat:
		return &node{op: opConst, pos: t.pos, h: 1, val: p.lx.lits[t.lit]}, nil
	case tStr:
		s := p.lx.lits[t.lit].Str()
		if p.peek().kind == tStr { // adjacent literals concatenate
			var b strings.Builder
			b.WriteString(s)
			for p.peek().kind == tStr {
				b.WriteString(p.lx.lits[p.next().lit].Str())
			}
			s = b.String()
		}
		return &node{op: opConst, pos: t.pos, h: 1, val: Str(s)}, nil
	case tName:
		switch t.text {
		case "True":
			return &node{op: opConst, pos: t.pos, h: 1, val: Bool(true)}, nil
		case "False":
			return &node{op: opConst, pos: t.pos, h: 1, val: Bool(false)}, nil
		}
		if keywords[t.text] {
			return nil, p.unexpected(t)
		}
		return &node{op: opName, pos: t.pos, h: 1, name: t.text}, nil
	case tOp:
		switch t.text {
		case "(":
			if err := p.open(t); err != nil {
				return nil, err
			}
			if p.isOp(")") {
				return nil, p.errTok(p.peek(), "tuples are not supported")
			}
			n, err := p.expr()
			if err != nil {
				return nil, err
			}
			if p.isKw("for") {
				return nil, p.errTok(p.peek(), "generator expressions are only supported as the sole argument of a call")
			}
			if p.isOp(",") {
				return nil, p.errTok(p.peek(), "tuples are not supported")
			}
			if err := p.expect(")"); err != nil {
				return nil, err
			}
			p.close()
			// Parentheses make no node, but they are a level: n is new,
			// so its depth can take them in.
			n.h++
			if p.depth+n.h > MaxDepth {
				return nil, p.tooDeep(t.pos, p.depth+n.h)
			}
			return n, nil
		case "[":
			if err := p.open(t); err != nil {
				return nil, err
			}
			l := &node{op: opList, pos: t.pos}
			if p.isOp("]") {
				p.next()
				p.close()
				return p.mk(l)
			}
			first, err := p.expr()
			if err != nil {
				return nil, err
			}
			if p.isKw("for") {
				c, err := p.comprehension(first, t.pos)
				if err != nil {
					return nil, err
				}
				if err := p.expect("]"); err != nil {
					return nil, err
				}
				p.close() // the comprehension is the bracket's level
				return p.mk(c)
			}
			l.kids = append(l.kids, first)
			for p.isOp(",") {
				p.next()
				if p.isOp("]") {
					break
				}
				e, err := p.expr()
				if err != nil {
					return nil, err
				}
				l.kids = append(l.kids, e)
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			p.close()
			return p.mk(l)
		}
	}
	return nil, p.unexpected(t)
}

// comprehension parses the clauses after the element: (for NAME in or_test
// (if or_test)*)+. The caller sets the depth (mk) once the levels that
// enclose the comprehension are right.
func (p *parser) comprehension(elt *node, pos int) (*node, *SyntaxError) {
	c := &node{op: opComp, pos: pos, kids: []*node{elt}}
	for p.isKw("for") {
		p.next()
		t := p.next()
		if t.kind != tName || keywords[t.text] {
			return nil, p.errTok(t, "expected a loop variable name, got %s", describe(t))
		}
		if p.isOp(",") {
			return nil, p.errTok(p.peek(), "tuple loop variables are not supported")
		}
		if err := p.expect("in"); err != nil {
			return nil, err
		}
		it, err := p.orTest()
		if err != nil {
			return nil, err
		}
		cl := clause{name: t.text, iter: it}
		for p.isKw("if") {
			p.next()
			cond, err := p.orTest()
			if err != nil {
				return nil, err
			}
			cl.conds = append(cl.conds, cond)
		}
		c.clauses = append(c.clauses, cl)
	}
	return c, nil
}

func parse(src string) (*node, error) {
	if len(src) > MaxSourceLen {
		return nil, errTooLong(src)
	}
	lx := &lexer{src: src}
	if err := lx.run(); err != nil {
		return nil, err
	}
	p := &parser{lx: lx, toks: lx.toks}
	if p.peek().kind == tEOF {
		return nil, p.errTok(p.peek(), "empty expression")
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		if t.kind == tOp && t.text == "," {
			return nil, p.errTok(t, "tuples are not supported")
		}
		return nil, p.unexpected(t)
	}
	return n, nil
}
