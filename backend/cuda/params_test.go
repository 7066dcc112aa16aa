package cuda

import (
	"reflect"
	"testing"

	"github.com/gtune/gtune/backend"
)

// PTX as NVRTC writes it for convolution_kernel(float*, float*, float*)
// and for a kernel taking (float4 by value, int, double).
const ptxSample = `
.visible .entry _Z18convolution_kernelPfS_S_(
	.param .u64 _Z18convolution_kernelPfS_S__param_0,
	.param .u64 _Z18convolution_kernelPfS_S__param_1,
	.param .u64 _Z18convolution_kernelPfS_S__param_2
)
{
	ret;
}
.visible .entry k2(
	.param .align 16 .b8 k2_param_0[16],
	.param .u32 k2_param_1,
	.param .f64 k2_param_2
)
{
	ret;
}
`

func TestPTXParamSizes(t *testing.T) {
	for _, c := range []struct {
		name string
		want []uint64
		ok   bool
	}{
		{"_Z18convolution_kernelPfS_S_", []uint64{8, 8, 8}, true},
		{"k2", []uint64{16, 4, 8}, true},
		{"absent", nil, false},
	} {
		got, ok := ptxParamSizes(ptxSample, c.name)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v %v, want %v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestParameterMismatch(t *testing.T) {
	args := []devArg{
		{arg: backend.Arg{Name: "output_image", Kind: backend.ArgVector}},
		{arg: backend.Arg{Name: "input_image", Kind: backend.ArgVector}},
		{arg: backend.Arg{Name: "d_filter", Kind: backend.ArgVector, Constant: true}},
	}
	if m := mismatch([]uint64{8, 8, 8}, args, "k"); m != "" {
		t.Errorf("matching list refused: %s", m)
	}
	// The bug this guards against: a constant argument left out of the
	// parameter list made cuLaunchKernel read past gtune's array.
	if m := mismatch([]uint64{8, 8, 8}, args[:2], "k"); m != "argument mismatch: the compiled kernel k takes 3 parameters (8, 8, 8 bytes), the spec gives 2 arguments (8, 8 bytes); not launched" {
		t.Errorf("short list: %q", m)
	}
	scalar := append(args[:2:2], devArg{arg: backend.Arg{Name: "n", Kind: backend.ArgScalar, Type: "int32"}, scalar: make([]byte, 4)})
	if m := mismatch([]uint64{8, 8, 8}, scalar, "k"); m != "argument mismatch: parameter 3 of the compiled kernel k is 8 bytes, argument n is 4 bytes (int32 value); not launched" {
		t.Errorf("scalar for a pointer: %q", m)
	}
}
