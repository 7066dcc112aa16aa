// Package emulate is a functional emulator of one thread block of a
// kernel's PTX: the mini-emulation of
// ../shared/papers/performance-projection-heterogeneous-gpus.md section
// IV-C ("emulates just a single workgroup"). It runs the block's threads
// warp by warp on the kernel's arguments and counts what the projection
// divides by a device profile (package model): instructions by class,
// global-memory requests and the 32-byte sectors they touch (coalescing),
// shared-memory requests and their bank conflicts, and divergent
// branches. Scaling the counts to the grid is the caller's (Counts.Work).
//
// PTX is parsed from the text NVRTC (or nvcc -ptx) emits; an instruction
// the emulator does not know is an error naming it and its line.
package emulate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Kernel is one .entry of a PTX module.
type Kernel struct {
	Name   string
	Params []Param
	// Shared are the kernel's (and the module's) .shared variables, by
	// name: their offsets in the block's shared memory, bytes.
	Shared      map[string]int64
	SharedBytes int64
	// DynamicShared is where the module's .extern .shared arrays (CUDA's
	// extern __shared__, sized by the launch: Launch.DynamicSharedBytes)
	// begin, after the static ones; -1: the module declares none.
	DynamicShared int64
	// Local are the kernel's .local variables (a thread's stack frame,
	// __local_depot: arrays the compiler could not keep in registers),
	// by name: their offsets in each thread's LocalBytes of local memory.
	Local      map[string]int64
	LocalBytes int64
	// Const are the module's .const variables (CUDA __constant__), by
	// name: their offsets in constant memory, bytes; an argument buffer
	// of the same name fills one (gtune copies a Constant argument into
	// the symbol of its name).
	Const      map[string]int64
	ConstBytes int64
	constSize  map[string]int64
	instrs     []instr
	labels     map[string]int
	regs       map[string]int // register name → index
}

// Param is one kernel parameter: its name and size in bytes.
type Param struct {
	Name string
	Size int
}

type opKind int

const (
	opReg opKind = iota
	opImm
	opSpecial
	opSymbol
	opAddr
	opVec
)

type operand struct {
	kind opKind
	reg  int
	imm  uint64
	name string // special register (tid.x), symbol, label
	off  int64  // address offset
	base *operand
	vec  []operand
	// immFloat marks an immediate written as a float (0f..., 0d...).
	immFloat bool
}

type instr struct {
	line     int
	text     string
	op       string   // opcode without modifiers: add, ld, setp, ...
	mods     []string // modifiers in order: rn, f32, global, v4, ...
	guard    int      // predicate register, -1: none
	guardNeg bool
	args     []operand
	target   int // branch target (instruction index)
	// Derived once at parse time: the type modifier, its width in bits,
	// signedness and floatness, the class, and for ld/st the element
	// size (bytes), vector length and state space.
	ty            string
	w             int
	signed, float bool
	cls           Class
	size, vecN    int
	space         string
	// flow is the opcode's kind for exec's dispatch (flowALU, flowBranch,
	// ...), and spaceK the state space of ld/st (spaceGlobal, ...), so
	// that the per-instruction paths compare no strings.
	flow, spaceK int
	// f32op is the FP32 add (1), mul (2) or fma (3) whose operands are
	// registers or immediates: the emulator's hottest instructions, run
	// without the general path (0: none).
	f32op int
}

// Parse reads a PTX module and returns its entries. Errors name the line.
func Parse(ptx string) ([]*Kernel, error) {
	lines := strings.Split(ptx, "\n")
	var out []*Kernel
	decls := moduleDecls{shared: map[string]int64{}, dynamic: map[string]int64{}}
	var k *Kernel
	depth := 0
	var pendingLabels []string
	for n := 0; n < len(lines); n++ {
		line := strings.TrimSpace(stripComment(lines[n]))
		if line == "" {
			continue
		}
		switch {
		case strings.Contains(line, ".entry "):
			name := strings.TrimSpace(line[strings.Index(line, ".entry ")+len(".entry "):])
			name = strings.TrimSuffix(strings.TrimSpace(strings.SplitN(name, "(", 2)[0]), "(")
			k = &Kernel{Name: name, Shared: map[string]int64{}, Local: map[string]int64{}, Const: map[string]int64{}, constSize: map[string]int64{}, labels: map[string]int{}, regs: map[string]int{}}
			for _, c := range decls.consts {
				off := (k.ConstBytes + c.align - 1) / c.align * c.align
				k.Const[c.name], k.constSize[c.name], k.ConstBytes = off, c.size, off+c.size
			}
			for nm, off := range decls.shared {
				k.Shared[nm] = off
			}
			// Parameters up to the closing parenthesis.
			for ; n < len(lines); n++ {
				l := strings.TrimSpace(stripComment(lines[n]))
				if i := strings.Index(l, ".param "); i >= 0 {
					p, err := parseParam(l[i:])
					if err != nil {
						return nil, fmt.Errorf("ptx line %d: %v", n+1, err)
					}
					k.Params = append(k.Params, p)
				}
				if strings.Contains(l, ")") {
					break
				}
			}
			out = append(out, k)
			continue
		case line == "{":
			depth++
			continue
		case line == "}":
			depth--
			if depth == 0 && k != nil {
				if err := k.resolve(); err != nil {
					return nil, err
				}
				k = nil
			}
			continue
		case strings.HasPrefix(line, "."):
			if err := decls.declare(line, k); err != nil {
				return nil, fmt.Errorf("ptx line %d: %v", n+1, err)
			}
			continue
		}
		if k == nil {
			continue
		}
		if strings.HasSuffix(line, ":") {
			pendingLabels = append(pendingLabels, strings.TrimSuffix(line, ":"))
			continue
		}
		for _, lab := range pendingLabels {
			k.labels[lab] = len(k.instrs)
		}
		pendingLabels = nil
		in, err := k.parseInstr(strings.TrimSuffix(line, ";"), n+1)
		if err != nil {
			return nil, err
		}
		k.instrs = append(k.instrs, in)
	}
	for _, k := range out {
		for name, off := range k.Shared {
			if off < 0 { // a module-level variable: placed after the kernel's own
				k.Shared[name], k.SharedBytes = k.SharedBytes, k.SharedBytes-off
			}
		}
		k.DynamicShared = -1
		if len(decls.dynamic) > 0 {
			// Every extern shared array begins where the static ones
			// end, at the largest alignment any of them asks.
			align := int64(1)
			for _, a := range decls.dynamic {
				align = max(align, a)
			}
			k.DynamicShared = (k.SharedBytes + align - 1) / align * align
			for name := range decls.dynamic {
				k.Shared[name] = k.DynamicShared
			}
		}
	}
	return out, nil
}

// moduleDecls are a module's variables: .const ones (in order), static
// .shared ones declared outside a kernel (by name: minus their size, placed
// per kernel after its own), and .extern .shared arrays (by name: their
// alignment).
type moduleDecls struct {
	consts          []constVar
	shared, dynamic map[string]int64
}

type constVar struct {
	name        string
	size, align int64
}

// declare takes one directive line (starting with "."): a variable of
// the module, or of kernel k where k is not nil (.shared, .local);
// others (.reg, .version, .target) are ignored.
func (m *moduleDecls) declare(line string, k *Kernel) error {
	switch {
	case strings.HasPrefix(line, ".const"):
		name, size, align, err := parseShared(line)
		if err != nil {
			return err
		}
		m.consts = append(m.consts, constVar{name, size, align})
	case strings.HasPrefix(line, ".extern .shared"):
		name, _, align, err := parseShared(strings.Replace(strings.TrimPrefix(line, ".extern "), "[]", "[0]", 1))
		if err != nil {
			return err
		}
		m.dynamic[name] = align
	case strings.HasPrefix(line, ".local") && k != nil:
		name, size, align, err := parseShared(line)
		if err != nil {
			return err
		}
		off := (k.LocalBytes + align - 1) / align * align
		k.Local[name], k.LocalBytes = off, off+size
	case strings.HasPrefix(line, ".shared"):
		name, size, align, err := parseShared(line)
		if err != nil {
			return err
		}
		if k == nil {
			m.shared[name] = -size // placed per kernel
			return nil
		}
		off := (k.SharedBytes + align - 1) / align * align
		k.Shared[name], k.SharedBytes = off, off+size
	}
	return nil
}

func stripComment(s string) string {
	if i := strings.Index(s, "//"); i >= 0 {
		return s[:i]
	}
	return s
}

func parseParam(s string) (Param, error) {
	f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(s), ","))
	// .param .u64 name   |   .param .align 8 .b8 name[16]
	if len(f) < 3 {
		return Param{}, fmt.Errorf("parameter %q", s)
	}
	name := strings.TrimSuffix(f[len(f)-1], ",")
	size := typeSize(strings.TrimPrefix(f[len(f)-2], "."))
	if i := strings.Index(name, "["); i >= 0 {
		n, err := strconv.Atoi(strings.TrimSuffix(name[i+1:], "]"))
		if err != nil {
			return Param{}, fmt.Errorf("parameter %q", s)
		}
		size *= n
		name = name[:i]
	}
	return Param{Name: name, Size: size}, nil
}

// parseShared reads ".shared .align A .b8 name[N];".
func parseShared(s string) (name string, size, align int64, err error) {
	f := strings.Fields(strings.TrimSuffix(s, ";"))
	align = 4
	elem := int64(1)
	for i := 1; i < len(f); i++ {
		switch {
		case f[i] == ".align" && i+1 < len(f):
			a, e := strconv.ParseInt(f[i+1], 10, 64)
			if e != nil {
				return "", 0, 0, fmt.Errorf("shared variable %q", s)
			}
			align = a
			i++
		case strings.HasPrefix(f[i], "."):
			elem = int64(typeSize(strings.TrimPrefix(f[i], ".")))
		default:
			name = f[i]
		}
	}
	size = elem
	if i := strings.Index(name, "["); i >= 0 {
		n, e := strconv.ParseInt(strings.TrimSuffix(name[i+1:], "]"), 10, 64)
		if e != nil {
			return "", 0, 0, fmt.Errorf("shared variable %q", s)
		}
		size, name = elem*n, name[:i]
	}
	if name == "" {
		return "", 0, 0, fmt.Errorf("shared variable %q", s)
	}
	return name, size, max(align, 1), nil
}

func typeSize(t string) int {
	switch t {
	case "b8", "s8", "u8", "pred":
		return 1
	case "b16", "s16", "u16", "f16":
		return 2
	case "b32", "s32", "u32", "f32":
		return 4
	case "b64", "s64", "u64", "f64":
		return 8
	}
	return 0
}

func (k *Kernel) reg(name string) int {
	if i, ok := k.regs[name]; ok {
		return i
	}
	i := len(k.regs)
	k.regs[name] = i
	return i
}

func (k *Kernel) parseInstr(s string, line int) (instr, error) {
	in := instr{line: line, text: s, guard: -1, target: -1}
	if strings.HasPrefix(s, "@") {
		f := strings.Fields(s)
		g := strings.TrimPrefix(f[0], "@")
		if strings.HasPrefix(g, "!") {
			in.guardNeg, g = true, g[1:]
		}
		in.guard = k.reg(g)
		s = strings.TrimSpace(strings.TrimPrefix(s, f[0]))
	}
	head, rest, _ := strings.Cut(s, " ")
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		head, rest = s[:i], strings.TrimSpace(s[i:])
	} else {
		head, rest = s, ""
	}
	parts := strings.Split(head, ".")
	in.op, in.mods = parts[0], parts[1:]
	in.ty = typ(in.mods)
	for _, a := range splitArgs(rest) {
		op, err := k.parseOperand(a)
		if err != nil {
			return in, fmt.Errorf("ptx line %d: %q: %v", line, s, err)
		}
		in.args = append(in.args, op)
	}
	in.cls = classOf(&in)
	in.w, in.size = width(in.ty), typeSize(in.ty)
	in.signed = len(in.ty) > 0 && in.ty[0] == 's'
	in.float = in.ty == "f32" || in.ty == "f64"
	if in.ty == "f32" && len(in.args) > 0 && in.args[0].kind == opReg {
		simple := true
		for _, a := range in.args[1:] {
			simple = simple && (a.kind == opReg || a.kind == opImm)
		}
		switch {
		case simple && in.op == "add" && len(in.args) == 3:
			in.f32op = 1
		case simple && in.op == "mul" && len(in.args) == 3:
			in.f32op = 2
		case simple && in.op == "fma" && len(in.args) == 4:
			in.f32op = 3
		}
	}
	in.vecN, in.space = 1, "generic"
	for _, m := range in.mods {
		switch m {
		case "v2":
			in.vecN = 2
		case "v4":
			in.vecN = 4
		case "param", "global", "shared", "local", "const":
			in.space = m
		}
	}
	in.spaceK = spaceOf(in.space)
	switch in.op {
	case "bra":
		in.flow = flowBranch
	case "bar", "barrier":
		in.flow = flowBarrier
	case "ret", "exit":
		in.flow = flowExit
	case "ld", "st":
		in.flow = flowMemory
	}
	return in, nil
}

// splitArgs splits an operand list at top-level commas ({a, b} and [x]
// stay whole).
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, t)
	}
	return out
}

func (k *Kernel) parseOperand(a string) (operand, error) {
	switch {
	case strings.HasPrefix(a, "{"):
		var v operand
		v.kind = opVec
		for _, e := range splitArgs(strings.Trim(a, "{}")) {
			o, err := k.parseOperand(e)
			if err != nil {
				return v, err
			}
			v.vec = append(v.vec, o)
		}
		return v, nil
	case strings.HasPrefix(a, "["):
		inner := strings.TrimSpace(strings.Trim(a, "[]"))
		var off int64
		if i := strings.IndexAny(inner[min(1, len(inner)):], "+-") + 1; i > 0 {
			o, err := strconv.ParseInt(strings.ReplaceAll(inner[i:], "+", ""), 0, 64)
			if err != nil {
				return operand{}, fmt.Errorf("address %q", a)
			}
			off, inner = o, strings.TrimSpace(inner[:i])
		}
		b, err := k.parseOperand(inner)
		if err != nil {
			return operand{}, err
		}
		return operand{kind: opAddr, base: &b, off: off}, nil
	case strings.HasPrefix(a, "%"):
		switch name := strings.TrimPrefix(a, "%"); {
		case strings.HasPrefix(name, "tid.") || strings.HasPrefix(name, "ntid.") || strings.HasPrefix(name, "ctaid.") ||
			strings.HasPrefix(name, "nctaid.") || name == "laneid" || name == "warpid":
			return operand{kind: opSpecial, name: name}, nil
		}
		return operand{kind: opReg, reg: k.reg(a)}, nil
	case strings.HasPrefix(a, "0f") && len(a) == 10:
		v, err := strconv.ParseUint(a[2:], 16, 32)
		if err != nil {
			return operand{}, fmt.Errorf("float %q", a)
		}
		return operand{kind: opImm, imm: v, immFloat: true}, nil
	case strings.HasPrefix(a, "0d") && len(a) == 18:
		v, err := strconv.ParseUint(a[2:], 16, 64)
		if err != nil {
			return operand{}, fmt.Errorf("double %q", a)
		}
		return operand{kind: opImm, imm: v, immFloat: true}, nil
	case len(a) > 0 && (a[0] == '-' || (a[0] >= '0' && a[0] <= '9')):
		if v, err := strconv.ParseInt(a, 0, 64); err == nil {
			return operand{kind: opImm, imm: uint64(v)}, nil
		}
		v, err := strconv.ParseUint(a, 0, 64)
		if err != nil {
			if f, ferr := strconv.ParseFloat(a, 64); ferr == nil {
				return operand{kind: opImm, imm: math.Float64bits(f), immFloat: true}, nil
			}
			return operand{}, fmt.Errorf("number %q", a)
		}
		return operand{kind: opImm, imm: v}, nil
	}
	return operand{kind: opSymbol, name: a}, nil
}

// resolve binds branch targets to instruction indices.
func (k *Kernel) resolve() error {
	for i := range k.instrs {
		in := &k.instrs[i]
		if in.op != "bra" {
			continue
		}
		if len(in.args) != 1 || in.args[0].kind != opSymbol {
			return fmt.Errorf("ptx line %d: %q: branch without a label", in.line, in.text)
		}
		t, ok := k.labels[in.args[0].name]
		if !ok {
			return fmt.Errorf("ptx line %d: %q: unknown label %s", in.line, in.text, in.args[0].name)
		}
		in.target = t
	}
	return nil
}
