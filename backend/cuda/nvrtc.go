package cuda

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/library"
)

type nvrtcResult int32

const (
	nvrtcSuccess       nvrtcResult = 0
	nvrtcInvalidOption nvrtcResult = 5
	nvrtcCompilation   nvrtcResult = 6
)

// nvrtcLib is libnvrtc with the functions gtune uses bound. NVRTC is
// thread-safe for distinct programs, so Compile runs from many goroutines.
type nvrtcLib struct {
	path string

	version           func(major, minor *int32) nvrtcResult
	getErrorString    func(r nvrtcResult) string
	createProgram     func(prog *uintptr, src string, name string, numHeaders int32, headers, includeNames unsafe.Pointer) nvrtcResult
	destroyProgram    func(prog *uintptr) nvrtcResult
	addNameExpression func(prog uintptr, name string) nvrtcResult
	compileProgram    func(prog uintptr, numOptions int32, options **byte) nvrtcResult
	getLoweredName    func(prog uintptr, name string, lowered **byte) nvrtcResult
	getProgramLogSize func(prog uintptr, size *uint64) nvrtcResult
	getProgramLog     func(prog uintptr, log *byte) nvrtcResult
	getCUBINSize      func(prog uintptr, size *uint64) nvrtcResult
	getCUBIN          func(prog uintptr, cubin *byte) nvrtcResult
	getPTXSize        func(prog uintptr, size *uint64) nvrtcResult
	getPTX            func(prog uintptr, ptx *byte) nvrtcResult
	getNumArchs       func(n *int32) nvrtcResult
	getArchs          func(archs *int32) nvrtcResult

	incOnce sync.Once
	incOpts []string
}

var (
	nvrtcOnce sync.Once
	nvrtcL    *nvrtcLib
	nvrtcErr  error
)

// loadNVRTC opens NVRTC (see nvrtcCandidates for the search order).
func loadNVRTC() (*nvrtcLib, error) {
	nvrtcOnce.Do(func() {
		h, path, err := openLibrary("cuda", "libnvrtc", EnvLibNVRTC, nvrtcCandidates())
		if err != nil {
			nvrtcErr = err
			return
		}
		n := &nvrtcLib{path: path}
		_, err = bind("cuda", path, h, []sym{
			{[]string{"nvrtcVersion"}, &n.version, true},
			{[]string{"nvrtcGetErrorString"}, &n.getErrorString, true},
			{[]string{"nvrtcCreateProgram"}, &n.createProgram, true},
			{[]string{"nvrtcDestroyProgram"}, &n.destroyProgram, true},
			{[]string{"nvrtcAddNameExpression"}, &n.addNameExpression, true},
			{[]string{"nvrtcCompileProgram"}, &n.compileProgram, true},
			{[]string{"nvrtcGetLoweredName"}, &n.getLoweredName, true},
			{[]string{"nvrtcGetProgramLogSize"}, &n.getProgramLogSize, true},
			{[]string{"nvrtcGetProgramLog"}, &n.getProgramLog, true},
			{[]string{"nvrtcGetPTXSize"}, &n.getPTXSize, true},
			{[]string{"nvrtcGetPTX"}, &n.getPTX, true},
			{[]string{"nvrtcGetCUBINSize"}, &n.getCUBINSize, false},
			{[]string{"nvrtcGetCUBIN"}, &n.getCUBIN, false},
			{[]string{"nvrtcGetNumSupportedArchs"}, &n.getNumArchs, false},
			{[]string{"nvrtcGetSupportedArchs"}, &n.getArchs, false},
		})
		if err != nil {
			nvrtcErr = err
			return
		}
		nvrtcL = n
	})
	return nvrtcL, nvrtcErr
}

func (n *nvrtcLib) check(fn string, r nvrtcResult) error {
	if r == nvrtcSuccess {
		return nil
	}
	return fmt.Errorf("cuda: %s: %s", fn, n.getErrorString(r))
}

// Version is NVRTC's version, e.g. "13.0".
func (n *nvrtcLib) Version() string {
	var a, b int32
	if n.version(&a, &b) != nvrtcSuccess {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", a, b)
}

// archs lists the sm_XY targets NVRTC can emit CUBIN for (as XY), or nil
// when this NVRTC cannot say.
func (n *nvrtcLib) archs() []int {
	if n.getNumArchs == nil || n.getArchs == nil {
		return nil
	}
	var cnt int32
	if n.getNumArchs(&cnt) != nvrtcSuccess || cnt <= 0 {
		return nil
	}
	buf := make([]int32, cnt)
	if n.getArchs(&buf[0]) != nvrtcSuccess {
		return nil
	}
	out := make([]int, cnt)
	for i, a := range buf {
		out[i] = int(a)
	}
	return out
}

// targetArch picks the compiler target for compute capability cc (as
// major*10+minor): sm_cc (CUBIN) when NVRTC supports it; otherwise
// compute_X (PTX, which the driver compiles at load time) for the highest
// supported X not above cc; sm_cc when NVRTC cannot list its targets.
func targetArch(cc int, supported []int) (arch string, cubin bool) {
	if supported == nil {
		return fmt.Sprintf("sm_%d", cc), true
	}
	best := 0
	for _, a := range supported {
		if a == cc {
			return fmt.Sprintf("sm_%d", cc), true
		}
		if a < cc && a > best {
			best = a
		}
	}
	if best == 0 {
		return fmt.Sprintf("sm_%d", cc), true
	}
	return fmt.Sprintf("compute_%d", best), false
}

// CompileRequest is one kernel to compile for one GPU.
type CompileRequest struct {
	Source       string           // CUDA C++ source text
	SourceName   string           // file name for compiler messages
	KernelName   string           // __global__ function name (a name expression: "k" or "k<float>")
	Options      []string         // extra NVRTC options, e.g. "-std=c++17", "--use_fast_math"
	Defines      []backend.Define // passed as -DNAME=VALUE, in order
	ComputeMajor int              // target compute capability
	ComputeMinor int
	// Language is the kernel's (backend.Kernel.Language): a library's
	// (library.Is) makes Compile resolve the routine KernelName names
	// instead of calling NVRTC.
	Language string
}

// compileOptions builds NVRTC's option list: the target, then one
// -DNAME=VALUE per define, then the caller's options unchanged (NVRTC
// accepts -std=c++17 and --std=c++17 alike).
func compileOptions(arch string, defines []backend.Define, extra []string) []string {
	opts := []string{"--gpu-architecture=" + arch}
	for _, d := range defines {
		opts = append(opts, "-D"+d.Name+"="+d.Value)
	}
	return append(opts, extra...)
}

// Image header. Run needs the kernel's lowered (mangled) name as NVRTC
// reports it, and Binary has no field for it, so Compile prefixes the
// image: 8 bytes "GTUNECU1", 1 byte format (0 CUBIN, 1 PTX), 2 bytes
// little-endian name length, the lowered name, then the CUBIN or the
// NUL-terminated PTX exactly as NVRTC produced it.
const imageMagic = "GTUNECU1"

const (
	formatCUBIN = 0
	formatPTX   = 1
)

func encodeImage(format byte, lowered string, payload []byte) []byte {
	out := make([]byte, 0, len(imageMagic)+3+len(lowered)+len(payload))
	out = append(out, imageMagic...)
	out = append(out, format)
	out = binary.LittleEndian.AppendUint16(out, uint16(len(lowered)))
	out = append(out, lowered...)
	return append(out, payload...)
}

// decodeImage splits a Compile image into format, lowered name and the
// bytes for cuModuleLoadData.
func decodeImage(img []byte) (format byte, lowered string, payload []byte, err error) {
	if len(img) < len(imageMagic)+3 || string(img[:len(imageMagic)]) != imageMagic {
		return 0, "", nil, errors.New("binary image was not produced by cuda.Compile (no GTUNECU1 header)")
	}
	p := len(imageMagic)
	format = img[p]
	n := int(binary.LittleEndian.Uint16(img[p+1:]))
	p += 3
	if len(img) < p+n {
		return 0, "", nil, errors.New("binary image header is truncated")
	}
	return format, string(img[p : p+n]), img[p+n:], nil
}

// Compile compiles one kernel with NVRTC in the calling process (CPU work
// only; safe for concurrent use). The image is CUBIN for sm_XY of the
// requested compute capability, or PTX for the closest older compute_X
// when this NVRTC cannot target it; Binary.Image carries the header
// described at imageMagic. CompileMs is the wall time of
// nvrtcCompileProgram plus fetching its output, ms.
//
// Errors: *backend.CompileError with NVRTC's log when the source or an
// option is rejected; another error when NVRTC cannot be loaded or fails
// internally. The context is checked before compiling (NVRTC cannot be
// interrupted).
func Compile(ctx context.Context, r CompileRequest) (*backend.Binary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.KernelName == "" {
		return nil, errors.New("cuda: Compile: empty kernel name")
	}
	if library.Is(r.Language) {
		return compileRoutine(r)
	}
	n, err := loadNVRTC()
	if err != nil {
		return nil, err
	}
	arch, cubin := targetArch(r.ComputeMajor*10+r.ComputeMinor, n.archs())
	if cubin && (n.getCUBINSize == nil || n.getCUBIN == nil) {
		arch, cubin = "compute_"+strings.TrimPrefix(arch, "sm_"), false
	}
	name := r.SourceName
	if name == "" {
		name = "kernel.cu"
	}
	start := time.Now()
	var prog uintptr
	if err := n.check("nvrtcCreateProgram", n.createProgram(&prog, r.Source, name, 0, nil, nil)); err != nil {
		return nil, err
	}
	defer n.destroyProgram(&prog)
	if err := n.check("nvrtcAddNameExpression", n.addNameExpression(prog, r.KernelName)); err != nil {
		return nil, err
	}
	opts := append(compileOptions(arch, r.Defines, r.Options), n.includeOptions()...)
	cstrs := make([][]byte, len(opts))
	ptrs := make([]*byte, len(opts))
	for i, o := range opts {
		cstrs[i] = append([]byte(o), 0)
		ptrs[i] = &cstrs[i][0]
	}
	res := n.compileProgram(prog, int32(len(ptrs)), &ptrs[0])
	runtime.KeepAlive(cstrs)
	log := n.programLog(prog)
	if res == nvrtcCompilation || res == nvrtcInvalidOption {
		if log == "" {
			log = n.getErrorString(res)
		}
		return nil, &backend.CompileError{Log: fmt.Sprintf("%s (options: %s)\n%s", n.getErrorString(res), strings.Join(opts, " "), log)}
	}
	if err := n.check("nvrtcCompileProgram", res); err != nil {
		return nil, fmt.Errorf("%w: %s", err, log)
	}
	var lp *byte
	if err := n.check("nvrtcGetLoweredName", n.getLoweredName(prog, r.KernelName, &lp)); err != nil {
		return nil, err
	}
	lowered := goString(lp)
	var size uint64
	var payload, ptx []byte
	format := byte(formatCUBIN)
	if cubin {
		// NVRTC makes PTX on its way to CUBIN and keeps it; kept with
		// the binary for emulation (Binary.PTX). An NVRTC that does not
		// hand it out for a real architecture leaves it nil: the
		// kernel still runs.
		if n.getPTXSize(prog, &size) == nvrtcSuccess && size > 1 {
			buf := make([]byte, size)
			if n.getPTX(prog, &buf[0]) == nvrtcSuccess {
				ptx = bytes.TrimRight(buf, "\x00")
			}
		}
		if err := n.check("nvrtcGetCUBINSize", n.getCUBINSize(prog, &size)); err != nil {
			return nil, err
		}
		payload = make([]byte, size)
		if size > 0 {
			if err := n.check("nvrtcGetCUBIN", n.getCUBIN(prog, &payload[0])); err != nil {
				return nil, err
			}
		}
	} else {
		format = formatPTX
		if err := n.check("nvrtcGetPTXSize", n.getPTXSize(prog, &size)); err != nil {
			return nil, err
		}
		payload = make([]byte, size)
		if size > 0 {
			if err := n.check("nvrtcGetPTX", n.getPTX(prog, &payload[0])); err != nil {
				return nil, err
			}
		}
		ptx = bytes.TrimRight(payload, "\x00")
	}
	if len(payload) == 0 {
		return nil, fmt.Errorf("cuda: NVRTC produced an empty image for %s (%s)", r.KernelName, arch)
	}
	ms := float64(time.Since(start).Microseconds()) / 1000
	return &backend.Binary{
		Image:     encodeImage(format, lowered, payload),
		Log:       log,
		CompileMs: ms,
		PTX:       ptx,
	}, nil
}

func (n *nvrtcLib) programLog(prog uintptr) string {
	var size uint64
	if n.getProgramLogSize(prog, &size) != nvrtcSuccess || size <= 1 {
		return ""
	}
	buf := make([]byte, size)
	if n.getProgramLog(prog, &buf[0]) != nvrtcSuccess {
		return ""
	}
	return strings.TrimRight(string(buf[:size-1]), "\x00\n ")
}

// includeOptions are --include-path options for the CUDA toolkit's headers
// (include/, and include/cccl/ where CUB, Thrust and libcu++ live since
// CUDA 13), found once: NVRTC searches no include path by itself, so
// "#include <cuda_fp16.h>" or <cub/cub.cuh> fails with "cannot open source
// file", while CuPy (and so Kernel Tuner) adds the toolkit's include/.
func (n *nvrtcLib) includeOptions() []string {
	n.incOnce.Do(func() {
		n.incOpts = toolkitIncludes(n.path, os.Getenv, func(p string) bool {
			fi, err := os.Stat(p)
			return err == nil && fi.IsDir()
		})
	})
	return n.incOpts
}

// toolkitIncludes finds the include folders of the toolkit NVRTC was
// loaded from (lib: its path; the folder above lib64/ or lib/), else of
// $CUDA_HOME, $CUDA_PATH or /usr/local/cuda: the first root with an
// include/ folder, as --include-path options.
func toolkitIncludes(lib string, getenv func(string) string, isDir func(string) bool) []string {
	var roots []string
	if filepath.IsAbs(lib) {
		roots = append(roots, filepath.Dir(filepath.Dir(lib)))
	}
	for _, e := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if v := getenv(e); v != "" {
			roots = append(roots, v)
		}
	}
	roots = append(roots, "/usr/local/cuda")
	for _, r := range roots {
		inc := filepath.Join(r, "include")
		if !isDir(inc) {
			continue
		}
		opts := []string{"--include-path=" + inc}
		if cccl := filepath.Join(inc, "cccl"); isDir(cccl) {
			opts = append(opts, "--include-path="+cccl)
		}
		return opts
	}
	return nil
}

// ToolkitIncludeDirs are the CUDA toolkit's include folders NVRTC
// compiles with (see includeOptions), found without loading NVRTC when it
// cannot be loaded here: from $CUDA_HOME, $CUDA_PATH or /usr/local/cuda.
// None where no toolkit is installed.
func ToolkitIncludeDirs() []string {
	lib := ""
	if n, err := loadNVRTC(); err == nil {
		lib = n.path
	}
	var dirs []string
	for _, o := range toolkitIncludes(lib, os.Getenv, func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.IsDir()
	}) {
		dirs = append(dirs, strings.TrimPrefix(o, "--include-path="))
	}
	return dirs
}
