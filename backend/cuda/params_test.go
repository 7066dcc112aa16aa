package cuda

import (
	"reflect"
	"strings"
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

// The toolkit's include folders: beside NVRTC's lib64/ when it was loaded
// by path, else from $CUDA_HOME, $CUDA_PATH, /usr/local/cuda; include/cccl
// only where it exists.
func TestToolkitIncludes(t *testing.T) {
	dirs := map[string]bool{"/opt/cuda-13/include": true, "/opt/cuda-13/include/cccl": true, "/usr/local/cuda/include": true, "/env/include": true}
	isDir := func(p string) bool { return dirs[p] }
	env := func(k string) string { return map[string]string{"CUDA_HOME": "/env"}[k] }
	none := func(string) string { return "" }
	for _, c := range []struct {
		lib  string
		env  func(string) string
		want string
	}{
		{"/opt/cuda-13/lib64/libnvrtc.so.13", env, "--include-path=/opt/cuda-13/include --include-path=/opt/cuda-13/include/cccl"},
		{"libnvrtc.so.13", env, "--include-path=/env/include"},
		{"libnvrtc.so.13", none, "--include-path=/usr/local/cuda/include"},
		{"/elsewhere/lib/libnvrtc.so", none, "--include-path=/usr/local/cuda/include"},
	} {
		if got := strings.Join(toolkitIncludes(c.lib, c.env, isDir), " "); got != c.want {
			t.Errorf("%s: %q, want %q", c.lib, got, c.want)
		}
	}
	if got := toolkitIncludes("x", none, func(string) bool { return false }); got != nil {
		t.Errorf("no toolkit: %v", got)
	}
}
