package expr

// Read-only inspection of the syntax tree, for analyses outside this
// package (e.g. package space's interval forward checking). Nothing here
// changes how expressions parse or evaluate.

// Node is a copy of one node of an expression's syntax tree.
//
// Op is one of: "const" (Value), "name" (Name), the unary "neg" (-x),
// "pos" (+x), "invert" (~x), "not"; "and", "or" (Kids: left, right);
// "cond" (Kids: then, condition, else — a if c else b); the binary
// "+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>" (Kids:
// left, right); "compare" (Kids: n operands, Cmps: n-1 operators among
// "==", "!=", "<", "<=", ">", ">=", "in", "not in"; a chain a < b < c);
// "list" (Kids: elements); "call" (Name: the builtin, Kids: arguments);
// "index" (Kids: container, index); "comp" (a list comprehension or
// generator: not expanded, Kids is nil — its variables are not free
// names).
type Node struct {
	Op    string
	Value Value
	Name  string
	Kids  []*Node
	Cmps  []string
}

var opNames = map[opcode]string{
	opConst: "const", opName: "name", opNeg: "neg", opPos: "pos", opInvert: "invert", opNot: "not",
	opAnd: "and", opOr: "or", opCond: "cond", opAdd: "+", opSub: "-", opMul: "*", opDiv: "/",
	opFloorDiv: "//", opMod: "%", opPow: "**", opBitAnd: "&", opBitOr: "|", opBitXor: "^",
	opShl: "<<", opShr: ">>", opCompare: "compare", opList: "list", opComp: "comp", opCall: "call",
	opIndex: "index",
}

// Tree gives a copy of the expression's syntax tree (see Node). Changing
// the copy does not change e. Parse refused trees deeper than MaxDepth, so
// the copy can be walked recursively.
func (e *Expr) Tree() *Node { return exportNode(e.root) }

func exportNode(n *node) *Node {
	out := &Node{Op: opNames[n.op], Value: n.val, Name: n.name}
	if n.op == opComp {
		return out
	}
	if n.op == opConst {
		out.Name = ""
	}
	for _, k := range n.kids {
		out.Kids = append(out.Kids, exportNode(k))
	}
	for _, c := range n.cmps {
		out.Cmps = append(out.Cmps, cmpText[c])
	}
	return out
}
