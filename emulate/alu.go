package emulate

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// value reads operand o for thread t as raw bits.
func (b *block) value(o *operand, t *thread) (uint64, error) {
	switch o.kind {
	case opReg:
		return t.regs[o.reg], nil
	case opImm:
		return o.imm, nil
	case opSpecial:
		return b.special(o.name, t)
	case opSymbol:
		if off, ok := b.k.Shared[o.name]; ok {
			return uint64(off), nil
		}
		if off, ok := b.k.Const[o.name]; ok {
			return uint64(off), nil
		}
		if off, ok := b.k.Local[o.name]; ok {
			return uint64(off), nil // an address in the thread's local window
		}
		if v, ok := b.params[o.name]; ok {
			return v, nil
		}
		return 0, fmt.Errorf("unknown symbol %s", o.name)
	}
	return 0, fmt.Errorf("operand of kind %d has no value", o.kind)
}

func (b *block) special(name string, t *thread) (uint64, error) {
	dim := func(s string) int { return int(s[len(s)-1] - 'x') }
	switch {
	case name == "laneid":
		return uint64(t.lane), nil
	case name == "warpid":
		return uint64((t.tid[0] + t.tid[1]*b.l.Block[0] + t.tid[2]*b.l.Block[0]*b.l.Block[1]) / 32), nil
	case len(name) > 4 && name[:4] == "tid.":
		return uint64(t.tid[dim(name)]), nil
	case len(name) > 5 && name[:5] == "ntid.":
		return uint64(b.l.Block[dim(name)]), nil
	case len(name) > 6 && name[:6] == "ctaid.":
		return uint64(b.l.BlockIdx[dim(name)]), nil
	case len(name) > 7 && name[:7] == "nctaid.":
		return uint64(b.l.Grid[dim(name)]), nil
	}
	return 0, fmt.Errorf("special register %%%s", name)
}

func (b *block) fail(in *instr, err error) error {
	return fmt.Errorf("emulate: %s, ptx line %d %q: %w", b.k.Name, in.line, in.text, err)
}

func f32(v uint64) float64     { return float64(math.Float32frombits(uint32(v))) }
func pf32(x float64) uint64    { return uint64(math.Float32bits(float32(x))) }
func f64(v uint64) float64     { return math.Float64frombits(v) }
func pf64(x float64) uint64    { return math.Float64bits(x) }
func sx(v uint64, n int) int64 { return int64(v<<(64-n)) >> (64 - n) }

// width is the type's size in bits (pred: 1).
func width(t string) int {
	if t == "pred" {
		return 1
	}
	return 8 * typeSize(t)
}

// trunc keeps the low bits of the type's width.
func trunc(v uint64, t string) uint64 {
	w := width(t)
	if w >= 64 || w == 0 {
		return v
	}
	return v & (1<<w - 1)
}

// alu runs a non-memory, non-control instruction for thread t.
func (b *block) alu(in *instr, t *thread) error {
	if len(in.args) == 0 {
		return b.fail(in, ErrUnsupported)
	}
	ty := in.ty
	var buf [4]uint64
	if len(in.args)-1 > len(buf) {
		return b.fail(in, ErrUnsupported)
	}
	src := buf[:len(in.args)-1]
	for i := range in.args[1:] {
		v, err := b.value(&in.args[1+i], t)
		if err != nil {
			return b.fail(in, err)
		}
		src[i] = v
	}
	dst := in.args[0]
	set := func(v uint64) error {
		if dst.kind != opReg {
			return b.fail(in, fmt.Errorf("destination is not a register"))
		}
		t.regs[dst.reg] = v
		return nil
	}
	float := in.float
	get := func(v uint64) float64 {
		if ty == "f64" {
			return f64(v)
		}
		return f32(v)
	}
	put := func(x float64) uint64 {
		if ty == "f64" {
			return pf64(x)
		}
		return pf32(x)
	}
	signed := in.signed
	w := in.w
	ival := func(v uint64) int64 {
		if signed {
			return sx(v, w)
		}
		return int64(trunc(v, ty))
	}
	need := func(n int) error {
		if len(src) != n {
			return b.fail(in, fmt.Errorf("want %d source operands, have %d", n, len(src)))
		}
		return nil
	}
	switch in.op {
	case "mov":
		if err := need(1); err != nil {
			return err
		}
		return set(src[0])
	case "cvta":
		if err := need(1); err != nil {
			return err
		}
		return set(src[0]) // one address space per kind here: generic = specific
	case "add", "sub", "mul", "min", "max", "div", "rem":
		if err := need(2); err != nil {
			return err
		}
		if float {
			x, y := get(src[0]), get(src[1])
			var r float64
			switch in.op {
			case "add":
				r = x + y
			case "sub":
				r = x - y
			case "mul":
				r = x * y
			case "min":
				r = math.Min(x, y)
			case "max":
				r = math.Max(x, y)
			case "div":
				r = x / y
			default:
				return b.fail(in, ErrUnsupported)
			}
			return set(put(r))
		}
		if in.op == "mul" && has(in.mods, "wide") {
			// 32 × 32 → 64 bits.
			if signed {
				return set(uint64(sx(src[0], 32) * sx(src[1], 32)))
			}
			return set(trunc(src[0], "u32") * trunc(src[1], "u32"))
		}
		if in.op == "mul" && has(in.mods, "hi") {
			x, y := ival(src[0]), ival(src[1])
			if w == 32 {
				return set(trunc(uint64(x*y)>>32, ty))
			}
			hi, _ := bits.Mul64(uint64(x), uint64(y))
			if signed {
				// The signed high word from the unsigned one.
				if x < 0 {
					hi -= uint64(y)
				}
				if y < 0 {
					hi -= uint64(x)
				}
			}
			return set(hi)
		}
		x, y := ival(src[0]), ival(src[1])
		var r int64
		switch in.op {
		case "add":
			r = x + y
		case "sub":
			r = x - y
		case "mul":
			r = x * y
		case "min":
			r = min(x, y)
		case "max":
			r = max(x, y)
		case "div", "rem":
			if y == 0 {
				return set(trunc(^uint64(0), ty))
			}
			if !signed {
				ux, uy := uint64(x), uint64(y)
				if in.op == "div" {
					return set(trunc(ux/uy, ty))
				}
				return set(trunc(ux%uy, ty))
			}
			if in.op == "div" {
				r = x / y
			} else {
				r = x % y
			}
		}
		return set(trunc(uint64(r), ty))
	case "mad", "fma":
		if err := need(3); err != nil {
			return err
		}
		if float {
			return set(put(get(src[0])*get(src[1]) + get(src[2])))
		}
		if has(in.mods, "wide") {
			var p uint64
			if signed {
				p = uint64(sx(src[0], 32) * sx(src[1], 32))
			} else {
				p = trunc(src[0], "u32") * trunc(src[1], "u32")
			}
			return set(p + src[2])
		}
		return set(trunc(uint64(ival(src[0])*ival(src[1])+ival(src[2])), ty))
	case "neg", "abs", "not", "sqrt", "rsqrt", "rcp", "sin", "cos", "ex2", "lg2", "popc", "clz":
		if err := need(1); err != nil {
			return err
		}
		if float {
			x := get(src[0])
			var r float64
			switch in.op {
			case "neg":
				r = -x
			case "abs":
				r = math.Abs(x)
			case "sqrt":
				r = math.Sqrt(x)
			case "rsqrt":
				r = 1 / math.Sqrt(x)
			case "rcp":
				r = 1 / x
			case "sin":
				r = math.Sin(x)
			case "cos":
				r = math.Cos(x)
			case "ex2":
				r = math.Exp2(x)
			case "lg2":
				r = math.Log2(x)
			default:
				return b.fail(in, ErrUnsupported)
			}
			return set(put(r))
		}
		switch in.op {
		case "neg":
			return set(trunc(uint64(-ival(src[0])), ty))
		case "abs":
			x := ival(src[0])
			if x < 0 {
				x = -x
			}
			return set(trunc(uint64(x), ty))
		case "not":
			if ty == "pred" {
				return set(src[0] ^ 1)
			}
			return set(trunc(^src[0], ty))
		case "popc":
			return set(uint64(bits.OnesCount64(trunc(src[0], ty))))
		case "clz":
			return set(uint64(bits.LeadingZeros64(trunc(src[0], ty)) - (64 - w)))
		}
		return b.fail(in, ErrUnsupported)
	case "and", "or", "xor":
		if err := need(2); err != nil {
			return err
		}
		var r uint64
		switch in.op {
		case "and":
			r = src[0] & src[1]
		case "or":
			r = src[0] | src[1]
		default:
			r = src[0] ^ src[1]
		}
		return set(trunc(r, ty))
	case "shl", "shr":
		if err := need(2); err != nil {
			return err
		}
		n := trunc(src[1], "u32")
		if n >= uint64(w) {
			if in.op == "shr" && signed && sx(src[0], w) < 0 {
				return set(trunc(^uint64(0), ty))
			}
			return set(0)
		}
		if in.op == "shl" {
			return set(trunc(src[0]<<n, ty))
		}
		if signed {
			return set(trunc(uint64(sx(src[0], w)>>n), ty))
		}
		return set(trunc(src[0], ty) >> n)
	case "setp":
		return b.setp(in, t, src)
	case "selp":
		if err := need(3); err != nil {
			return err
		}
		if src[2] != 0 {
			return set(src[0])
		}
		return set(src[1])
	case "cvt":
		if err := need(1); err != nil {
			return err
		}
		return set(convert(in.mods, src[0]))
	}
	return b.fail(in, ErrUnsupported)
}

// setp compares per its comparison and type, and writes the predicate
// (and its negation, for the p|q form, which PTX writes as one operand).
func (b *block) setp(in *instr, t *thread, src []uint64) error {
	if len(src) < 2 || len(in.mods) < 2 {
		return b.fail(in, ErrUnsupported)
	}
	cmp, ty := in.mods[0], in.ty
	var r bool
	switch ty {
	case "f32", "f64":
		x, y := f32(src[0]), f32(src[1])
		if ty == "f64" {
			x, y = f64(src[0]), f64(src[1])
		}
		nan := math.IsNaN(x) || math.IsNaN(y)
		switch cmp {
		case "eq":
			r = x == y
		case "ne":
			r = x != y && !nan
		case "lt":
			r = x < y
		case "le":
			r = x <= y
		case "gt":
			r = x > y
		case "ge":
			r = x >= y
		case "equ":
			r = x == y || nan
		case "neu":
			r = x != y
		case "ltu":
			r = x < y || nan
		case "leu":
			r = x <= y || nan
		case "gtu":
			r = x > y || nan
		case "geu":
			r = x >= y || nan
		case "num":
			r = !nan
		case "nan":
			r = nan
		default:
			return b.fail(in, ErrUnsupported)
		}
	default:
		w := width(ty)
		signed := ty[0] == 's'
		var lt, eq bool
		if signed {
			x, y := sx(src[0], w), sx(src[1], w)
			lt, eq = x < y, x == y
		} else {
			x, y := trunc(src[0], ty), trunc(src[1], ty)
			lt, eq = x < y, x == y
		}
		switch cmp {
		case "eq":
			r = eq
		case "ne":
			r = !eq
		case "lt", "lo":
			r = lt
		case "le", "ls":
			r = lt || eq
		case "gt", "hi":
			r = !lt && !eq
		case "ge", "hs":
			r = !lt
		default:
			return b.fail(in, ErrUnsupported)
		}
	}
	dst := in.args[0]
	if dst.kind != opReg {
		return b.fail(in, fmt.Errorf("destination is not a predicate register"))
	}
	if r {
		t.regs[dst.reg] = 1
	} else {
		t.regs[dst.reg] = 0
	}
	return nil
}

// convert is cvt: the destination type first, then the source type;
// rounding modifiers pick the rounding of float-to-integer conversions.
func convert(mods []string, v uint64) uint64 {
	var types []string
	round := ""
	for _, m := range mods {
		switch {
		case typeSize(m) > 0:
			types = append(types, m)
		case m == "rn" || m == "rz" || m == "rm" || m == "rp" || m == "rni" || m == "rzi" || m == "rmi" || m == "rpi":
			round = m
		}
	}
	if len(types) != 2 {
		return v
	}
	to, from := types[0], types[1]
	var x float64
	var isInt bool
	var iv int64
	switch from {
	case "f32":
		x = f32(v)
	case "f64":
		x = f64(v)
	default:
		isInt = true
		if from[0] == 's' {
			iv = sx(v, width(from))
		} else {
			iv = int64(trunc(v, from))
		}
		x = float64(iv)
		if from[0] == 'u' && width(from) == 64 {
			x = float64(v)
		}
	}
	switch to {
	case "f32":
		return pf32(x)
	case "f64":
		return pf64(x)
	}
	if !isInt {
		switch round {
		case "rni", "rn":
			x = math.RoundToEven(x)
		case "rmi", "rm":
			x = math.Floor(x)
		case "rpi", "rp":
			x = math.Ceil(x)
		default:
			x = math.Trunc(x)
		}
		if to[0] == 's' {
			return trunc(uint64(int64(x)), to)
		}
		if x < 0 {
			return 0
		}
		return trunc(uint64(x), to)
	}
	if to[0] == 's' {
		return trunc(uint64(iv), to)
	}
	return trunc(uint64(iv), to)
}

// memoryOp runs ld or st for the threads on, in the param, global or
// shared space, and counts the warp's request: global sectors touched,
// shared bank conflicts.
func (b *block) memoryOp(in *instr, on []*thread) error {
	ty := in.ty
	size := in.size
	if size == 0 || len(in.args) != 2 {
		return b.fail(in, ErrUnsupported)
	}
	n := in.vecN
	load := in.op == "ld"
	addrOp, dataOp := &in.args[1], &in.args[0]
	if !load {
		addrOp, dataOp = &in.args[0], &in.args[1]
	}
	if addrOp.kind != opAddr {
		return b.fail(in, fmt.Errorf("memory operand is not an address"))
	}
	space := in.space
	if space == "generic" {
		return b.fail(in, fmt.Errorf("%w: %s-space access", ErrUnsupported, space))
	}
	regs := in.args[:0]
	if load {
		regs = in.args[:1]
	} else {
		regs = in.args[1:2]
	}
	if dataOp.kind == opVec {
		regs = dataOp.vec
	}
	if len(regs) != n {
		return b.fail(in, fmt.Errorf("%d data operands for a .v%d access", len(regs), n))
	}
	sp := in.spaceK
	if addrOp.base.kind == opReg && (sp == spaceShared || sp == spaceGlobal) && allRegisters(regs) {
		if err := b.registerAccess(in, on, addrOp, regs, load); err != nil {
			return err
		}
		b.account(in, load, int64(len(on)*n*size))
		return nil
	}
	sectors, words := b.sectors[:0], b.words[:0]
	for _, t := range on {
		var base uint64
		if addrOp.base.kind == opSymbol && sp == spaceParam {
			v, ok := b.params[addrOp.base.name]
			if !ok {
				return b.fail(in, fmt.Errorf("unknown parameter %s", addrOp.base.name))
			}
			if !load {
				return b.fail(in, fmt.Errorf("%w: a store to a parameter", ErrUnsupported))
			}
			if err := b.write(in, t, &regs[0], v, ty); err != nil {
				return err
			}
			continue
		}
		v, err := b.value(addrOp.base, t)
		if err != nil {
			return b.fail(in, err)
		}
		base = v + uint64(addrOp.off)
		for e := 0; e < n; e++ {
			addr := base + uint64(e*size)
			switch sp {
			case spaceGlobal:
				for a := addr >> 5; a <= (addr+uint64(size)-1)>>5; a++ {
					sectors = append(sectors, a)
				}
				if load {
					x, err := b.mem.load(addr, size)
					if err != nil {
						return b.fail(in, err)
					}
					if err := b.write(in, t, &regs[e], x, ty); err != nil {
						return err
					}
				} else {
					x, err := b.value(&regs[e], t)
					if err != nil {
						return b.fail(in, err)
					}
					if err := b.mem.store(addr, size, x); err != nil {
						return b.fail(in, err)
					}
				}
			case spaceConst:
				if !load || addr+uint64(size) > uint64(len(b.cmem)) {
					return b.fail(in, fmt.Errorf("constant access at %d outside the module's %d bytes", addr, len(b.cmem)))
				}
				var tmp [8]byte
				copy(tmp[:size], b.cmem[addr:addr+uint64(size)])
				if err := b.write(in, t, &regs[e], leUint64(tmp[:]), ty); err != nil {
					return err
				}
			case spaceLocal:
				if addr+uint64(size) > uint64(len(t.local)) {
					return b.fail(in, fmt.Errorf("local access at %d outside the thread's %d bytes", addr, len(t.local)))
				}
				if err := b.move(in, t, &regs[e], t.local[addr:addr+uint64(size)], load); err != nil {
					return err
				}
			case spaceShared:
				if addr+uint64(size) > uint64(len(b.shared)) {
					return b.fail(in, fmt.Errorf("shared access at %d outside the block's %d bytes", addr, len(b.shared)))
				}
				for wd := addr >> 2; wd <= (addr+uint64(size)-1)>>2; wd++ {
					words = append(words, wd)
				}
				if err := b.move(in, t, &regs[e], b.shared[addr:addr+uint64(size)], load); err != nil {
					return err
				}
			}
		}
	}
	b.sectors, b.words = sectors, words
	b.account(in, load, int64(len(on)*n*size))
	return nil
}

// move loads register operand o of thread t from mem (load) or stores
// it there: mem is the access's bytes, little-endian.
func (b *block) move(in *instr, t *thread, o *operand, mem []byte, load bool) error {
	if load {
		return b.write(in, t, o, leN(mem, len(mem)), in.ty)
	}
	x, err := b.value(o, t)
	if err != nil {
		return b.fail(in, err)
	}
	var tmp [8]byte
	putLeUint64(tmp[:], x)
	copy(mem, tmp[:len(mem)])
	return nil
}

// allRegisters: every data operand is a register.
func allRegisters(regs []operand) bool {
	for i := range regs {
		if regs[i].kind != opReg {
			return false
		}
	}
	return true
}

// registerAccess is memoryOp's loop for the common case, run without its
// general operand handling: a global or shared access at a register plus
// an offset, its data in registers. It leaves the request's sectors or
// words in b.sectors or b.words, as the general loop does.
func (b *block) registerAccess(in *instr, on []*thread, addrOp *operand, regs []operand, load bool) error {
	size, n := in.size, in.vecN
	base, off := addrOp.base.reg, uint64(addrOp.off)
	last := uint64(size) - 1
	ext := func(v uint64) uint64 { // write's sign or zero extension
		switch w := in.w; {
		case in.signed:
			return uint64(sx(v, w))
		case w > 0 && w < 64:
			return v & (1<<w - 1)
		}
		return v
	}
	if in.spaceK == spaceShared && load && size == 4 && n == 1 && !in.signed {
		// The tiles' loads (matmul's inner loop): one aligned word each,
		// every address checked before any register is written (the
		// destination may be the address's register).
		words, lim, dst := b.words[:0], uint64(len(b.shared)), regs[0].reg
		for _, t := range on {
			a := t.regs[base] + off
			if a+4 > lim || a&3 != 0 {
				words = nil
				break
			}
			words = append(words, a>>2)
		}
		if words != nil {
			for i, t := range on {
				t.regs[dst] = uint64(binary.LittleEndian.Uint32(b.shared[words[i]<<2:]))
			}
			b.words = words
			return nil
		}
	}
	if in.spaceK == spaceShared {
		words, lim := b.words[:0], uint64(len(b.shared))
		for _, t := range on {
			a0 := t.regs[base] + off
			for e := 0; e < n; e++ {
				a := a0 + uint64(e*size)
				if a+uint64(size) > lim {
					return b.fail(in, fmt.Errorf("shared access at %d outside the block's %d bytes", a, lim))
				}
				for wd := a >> 2; wd <= (a+last)>>2; wd++ {
					words = append(words, wd)
				}
				if load {
					t.regs[regs[e].reg] = ext(leN(b.shared[a:], size))
					continue
				}
				var tmp [8]byte
				putLeUint64(tmp[:], t.regs[regs[e].reg])
				copy(b.shared[a:a+uint64(size)], tmp[:size])
			}
		}
		b.words = words
		return nil
	}
	sectors := b.sectors[:0]
	for _, t := range on {
		a0 := t.regs[base] + off
		for e := 0; e < n; e++ {
			a := a0 + uint64(e*size)
			for sc := a >> 5; sc <= (a+last)>>5; sc++ {
				sectors = append(sectors, sc)
			}
			if load {
				x, err := b.mem.load(a, size)
				if err != nil {
					return b.fail(in, err)
				}
				t.regs[regs[e].reg] = ext(x)
			} else if err := b.mem.store(a, size, t.regs[regs[e].reg]); err != nil {
				return b.fail(in, err)
			}
		}
	}
	b.sectors = sectors
	return nil
}

// account counts a warp's request of bytes in in's state space: global
// sectors (and the footprint), shared wavefronts.
func (b *block) account(in *instr, load bool, bytes int64) {
	sectors, words := b.sectors, b.words
	switch in.spaceK {
	case spaceGlobal:
		distinct := countDistinct(sectors)
		if load {
			b.c.GlobalLoadRequests++
			b.c.GlobalLoadSectors += int64(distinct)
			b.c.GlobalLoadBytes += bytes
			b.loaded = footprint(sectors, b.loaded)
		} else {
			b.c.GlobalStoreRequests++
			b.c.GlobalStoreSectors += int64(distinct)
			b.c.GlobalStoreBytes += bytes
			b.stored = footprint(sectors, b.stored)
		}
	case spaceShared:
		// The most distinct words any one of the 32 banks serves.
		ways := bankWays(words)
		b.c.SharedRequests++
		b.c.SharedWavefronts += int64(max(ways, 1))
		b.c.SharedBytes += bytes
	case spaceLocal:
		b.c.LocalRequests++
		b.c.LocalBytes += bytes
	}
}

// write stores a loaded value into register operand o, sign- or
// zero-extended from the access type.
func (b *block) write(in *instr, t *thread, o *operand, v uint64, ty string) error {
	if o.kind != opReg {
		return b.fail(in, fmt.Errorf("load destination is not a register"))
	}
	// ty is in.ty, whose width and signedness the parser derived.
	switch w := in.w; {
	case in.signed:
		v = uint64(sx(v, w))
	case w > 0 && w < 64:
		v &= 1<<w - 1
	}
	t.regs[o.reg] = v
	return nil
}

// State spaces of ld and st, told apart without comparing strings in the
// per-thread loop.
const (
	spaceOther = iota
	spaceParam
	spaceGlobal
	spaceConst
	spaceShared
	spaceLocal
)

func spaceOf(s string) int {
	switch s {
	case "param":
		return spaceParam
	case "global":
		return spaceGlobal
	case "const":
		return spaceConst
	case "shared":
		return spaceShared
	case "local":
		return spaceLocal
	}
	return spaceOther
}

// bankWays is the most distinct 4-byte words of words (word addresses)
// that any one of the 32 shared-memory banks serves: the wavefronts of
// the request. Words are mostly ascending (consecutive threads, adjacent
// words), where a bank's words come in order and repeats are adjacent;
// otherwise they are sorted first.
func bankWays(words []uint64) int {
	if !slices.IsSorted(words) {
		// Few distinct words per bank (a warp's request: 2-way for
		// matmul's tiles): each bank's kept in a small array, the sort
		// only where a bank sees more.
		var seen [32][4]uint64
		var n [32]int
		ways := 0
	words:
		for _, wd := range words {
			bk := wd % 32
			for _, x := range seen[bk][:n[bk]] {
				if x == wd {
					continue words
				}
			}
			if n[bk] == len(seen[bk]) {
				slices.Sort(words)
				return sortedBankWays(words)
			}
			seen[bk][n[bk]] = wd
			n[bk]++
			ways = max(ways, n[bk])
		}
		return ways
	}
	return sortedBankWays(words)
}

// sortedBankWays is bankWays of ascending words.
func sortedBankWays(words []uint64) int {
	var per [32]int
	ways := 0
	for i, wd := range words {
		if i > 0 && wd == words[i-1] {
			continue
		}
		per[wd%32]++
		ways = max(ways, per[wd%32])
	}
	return ways
}

// footprint appends the distinct sectors of a request (sorted by
// countDistinct) to the block's.
func footprint(sectors []uint64, block []uint64) []uint64 {
	for i, x := range sectors {
		if i == 0 || x != sectors[i-1] {
			block = append(block, x)
		}
	}
	return block
}

// countDistinct sorts xs (unless it is sorted already, as a coalesced
// access's sectors are) and counts its distinct values.
func countDistinct(xs []uint64) int {
	if !slices.IsSorted(xs) {
		slices.Sort(xs)
	}
	n := 0
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			n++
		}
	}
	return n
}

func leUint64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// leN reads an n-byte (1, 2, 4 or 8) little-endian value at the start of
// b, which holds at least n bytes.
func leN(b []byte, n int) uint64 {
	switch n {
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	case 8:
		return binary.LittleEndian.Uint64(b)
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 1:
		return uint64(b[0])
	}
	var tmp [8]byte
	copy(tmp[:], b[:n])
	return binary.LittleEndian.Uint64(tmp[:])
}

func putLeUint64(b []byte, v uint64) { binary.LittleEndian.PutUint64(b, v) }
