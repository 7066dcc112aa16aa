package cuda

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/gtune/gtune/backend"
)

// maxParams bounds the probe of cuFuncGetParamInfo on drivers without
// cuFuncGetParamCount (CUDA 12.4 to 12.8): a kernel's parameters fit in
// 32 KiB, so no kernel has more than this many.
const maxParams = 32 << 10

// paramSizes gives the byte size of each parameter of the compiled kernel
// fn: from the driver (cuFuncGetParamCount/cuFuncGetParamInfo, CUDA 12.4
// and later), else from the .entry directive of a PTX image. ok is false
// when neither can tell (an older driver with a CUBIN image).
func (w *worker) paramSizes(fn uintptr, format byte, payload []byte, lowered string) (sizes []uint64, ok bool) {
	d := w.d
	if d.cuFuncGetParamInfo != nil {
		n := uint64(maxParams)
		if d.cuFuncGetParamCount != nil {
			if d.cuFuncGetParamCount(fn, &n) != cuSuccess {
				n = maxParams
			}
		}
		for i := uint64(0); i < n; i++ {
			var off, size uint64
			if d.cuFuncGetParamInfo(fn, i, &off, &size) != cuSuccess {
				if d.cuFuncGetParamCount != nil && n < maxParams {
					return nil, false // the count said there was one: do not guess
				}
				break // past the last parameter
			}
			sizes = append(sizes, size)
		}
		return sizes, true
	}
	if format == formatPTX {
		return ptxParamSizes(string(payload), lowered)
	}
	return nil, false
}

var noParamInfo sync.Once

// checkParams compares the argument list with the compiled kernel's
// parameters: as many, and each of the byte size the argument puts there
// (a device pointer for a vector, the packed value for a scalar). It
// returns why they differ, or "" when they agree or cannot be compared.
func (w *worker) checkParams(fn uintptr, format byte, payload []byte, lowered string, args []devArg) string {
	sizes, ok := w.paramSizes(fn, format, payload, lowered)
	if !ok {
		noParamInfo.Do(func() {
			fmt.Fprintf(os.Stderr, "gtune cuda worker: this driver cannot report a kernel's parameters (cuFuncGetParamInfo needs CUDA 12.4); the argument list is not checked before launching\n")
		})
		return ""
	}
	return mismatch(sizes, args, lowered)
}

// mismatch says how the parameter sizes of kernel lowered differ from
// those of args; "" when they agree.
func mismatch(sizes []uint64, args []devArg, lowered string) string {
	want := make([]uint64, len(args))
	for i, a := range args {
		want[i] = 8
		if a.arg.Kind == backend.ArgScalar {
			want[i] = uint64(len(a.scalar))
		}
	}
	if len(sizes) != len(want) {
		return fmt.Sprintf("argument mismatch: the compiled kernel %s takes %d parameters (%s bytes), the spec gives %d arguments (%s bytes); not launched",
			lowered, len(sizes), joinSizes(sizes), len(want), joinSizes(want))
	}
	for i := range sizes {
		if sizes[i] != want[i] {
			a := args[i].arg
			what := "device pointer"
			if a.Kind == backend.ArgScalar {
				what = a.Type + " value"
			}
			return fmt.Sprintf("argument mismatch: parameter %d of the compiled kernel %s is %d bytes, argument %s is %d bytes (%s); not launched",
				i+1, lowered, sizes[i], a.Name, want[i], what)
		}
	}
	return ""
}

func joinSizes(xs []uint64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatUint(x, 10)
	}
	return strings.Join(parts, ", ")
}

var (
	ptxParamRE   = regexp.MustCompile(`\.param\s+(?:\.align\s+(\d+)\s+)?\.([a-z]+)(\d+)\s+[A-Za-z_$%][\w$]*(?:\[(\d+)\])?`)
	ptxEntryOnce sync.Map // lowered name -> *regexp.Regexp
)

// ptxParamSizes reads the parameter sizes of the entry lowered from PTX:
// ".entry NAME(.param .u64 NAME_param_0, .param .align 16 .b8 NAME_param_1[16])".
func ptxParamSizes(ptx, lowered string) ([]uint64, bool) {
	v, _ := ptxEntryOnce.LoadOrStore(lowered, regexp.MustCompile(`\.entry\s+`+regexp.QuoteMeta(lowered)+`\s*\(([^)]*)\)`))
	m := v.(*regexp.Regexp).FindStringSubmatch(ptx)
	if m == nil {
		return nil, false
	}
	var sizes []uint64
	for _, p := range ptxParamRE.FindAllStringSubmatch(m[1], -1) {
		bits, err := strconv.Atoi(p[3])
		if err != nil || bits%8 != 0 {
			return nil, false
		}
		size := uint64(bits / 8)
		if p[4] != "" {
			n, err := strconv.ParseUint(p[4], 10, 64)
			if err != nil {
				return nil, false
			}
			size *= n
		}
		sizes = append(sizes, size)
	}
	return sizes, true
}
