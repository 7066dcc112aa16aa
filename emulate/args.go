package emulate

import (
	"fmt"
	"math"

	"github.com/gtune/gtune/backend"
)

// ArgsOf makes the emulator's arguments from a kernel's (backend.Kernel:
// a spec's Problem): a buffer of the argument's size per vector, filled
// as the GPU's would be (Constant: the value; Random: uniform in
// [0, Value) from the argument's seed, not the GPU's sequence, which only
// data-dependent control flow could tell; BinaryRaw: zeros, the file not
// read), and each scalar's bits in its type. Errors: a type the emulator
// cannot lay out.
func ArgsOf(k backend.Kernel) ([]Arg, error) {
	var out []Arg
	for _, a := range k.Args {
		elem, bits, err := layout(a.Type)
		if err != nil {
			return nil, fmt.Errorf("emulate: argument %s: %v", a.Name, err)
		}
		if a.Kind == backend.ArgScalar {
			out = append(out, Arg{Scalar: bits(a.Scalar)})
			continue
		}
		per := componentCount(a.Type)
		b := &Buffer{Name: a.Name, Bytes: a.Count * int64(elem*per), ElemBytes: elem}
		switch a.Fill.Type {
		case "Constant":
			v := bits(a.Fill.Value)
			if v != 0 {
				b.Fill = func(int64) uint64 { return v }
			}
		case "Random":
			hi := a.Fill.Value
			if hi == 0 {
				hi = 1
			}
			seed := uint64(a.Fill.Seed)
			b.Fill = func(i int64) uint64 { return bits(hi * unit(seed, uint64(i))) }
		}
		out = append(out, Arg{Buffer: b})
	}
	return out, nil
}

// unit is a deterministic number in [0, 1) for (seed, i): SplitMix64.
func unit(seed, i uint64) float64 {
	z := seed*0x9e3779b97f4a7c15 + i + 1
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// componentCount is the components of a vector type (float4: 4).
func componentCount(t string) int {
	switch t {
	case "float2", "double2", "int2", "uint2", "half2":
		return 2
	case "float3", "double3", "int3", "uint3":
		return 3
	case "float4", "double4", "int4", "uint4":
		return 4
	}
	return 1
}

// layout gives a T1 type's component size (bytes) and how a value is
// written in it.
func layout(t string) (int, func(float64) uint64, error) {
	base := t
	if componentCount(t) > 1 {
		base = t[:len(t)-1]
	}
	switch base {
	case "float":
		return 4, func(v float64) uint64 { return uint64(math.Float32bits(float32(v))) }, nil
	case "double":
		return 8, math.Float64bits, nil
	case "int", "int32", "uint", "uint32":
		return 4, func(v float64) uint64 { return uint64(uint32(int64(v))) }, nil
	case "long", "int64", "ulong", "uint64":
		return 8, func(v float64) uint64 { return uint64(int64(v)) }, nil
	case "short", "int16", "ushort", "uint16":
		return 2, func(v float64) uint64 { return uint64(uint16(int64(v))) }, nil
	case "char", "int8", "uchar", "uint8", "bool":
		return 1, func(v float64) uint64 { return uint64(uint8(int64(v))) }, nil
	}
	return 0, nil, fmt.Errorf("type %q", t)
}
