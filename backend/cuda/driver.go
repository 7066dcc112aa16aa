package cuda

import (
	"fmt"
	"sync"
	"unsafe"
)

// cuResult is a CUresult.
type cuResult int32

// The CUresult codes gtune tells apart (cuda.h).
const (
	cuSuccess                      cuResult = 0
	cuErrorInvalidValue            cuResult = 1
	cuErrorOutOfMemory             cuResult = 2
	cuErrorNotInitialized          cuResult = 3
	cuErrorDeinitialized           cuResult = 4
	cuErrorNoDevice                cuResult = 100
	cuErrorInvalidDevice           cuResult = 101
	cuErrorInvalidImage            cuResult = 200
	cuErrorInvalidContext          cuResult = 201
	cuErrorNoBinaryForGPU          cuResult = 209
	cuErrorInvalidPTX              cuResult = 218
	cuErrorUnsupportedPTXVersion   cuResult = 222
	cuErrorNotFound                cuResult = 500
	cuErrorNotReady                cuResult = 600
	cuErrorIllegalAddress          cuResult = 700
	cuErrorLaunchOutOfResources    cuResult = 701
	cuErrorLaunchTimeout           cuResult = 702
	cuErrorLaunchIncompatibleTex   cuResult = 703
	cuErrorHardwareStackError      cuResult = 714
	cuErrorIllegalInstruction      cuResult = 715
	cuErrorMisalignedAddress       cuResult = 716
	cuErrorInvalidAddressSpace     cuResult = 717
	cuErrorInvalidPC               cuResult = 718
	cuErrorLaunchFailed            cuResult = 719
	cuErrorCooperativeLaunchTooBig cuResult = 720
	cuErrorUnknown                 cuResult = 999
)

// cuResultNames is used when cuGetErrorName itself is unavailable.
var cuResultNames = map[cuResult]string{
	cuSuccess:                      "CUDA_SUCCESS",
	cuErrorInvalidValue:            "CUDA_ERROR_INVALID_VALUE",
	cuErrorOutOfMemory:             "CUDA_ERROR_OUT_OF_MEMORY",
	cuErrorNotInitialized:          "CUDA_ERROR_NOT_INITIALIZED",
	cuErrorDeinitialized:           "CUDA_ERROR_DEINITIALIZED",
	cuErrorNoDevice:                "CUDA_ERROR_NO_DEVICE",
	cuErrorInvalidDevice:           "CUDA_ERROR_INVALID_DEVICE",
	cuErrorInvalidImage:            "CUDA_ERROR_INVALID_IMAGE",
	cuErrorInvalidContext:          "CUDA_ERROR_INVALID_CONTEXT",
	cuErrorNoBinaryForGPU:          "CUDA_ERROR_NO_BINARY_FOR_GPU",
	cuErrorInvalidPTX:              "CUDA_ERROR_INVALID_PTX",
	cuErrorUnsupportedPTXVersion:   "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	cuErrorNotFound:                "CUDA_ERROR_NOT_FOUND",
	cuErrorNotReady:                "CUDA_ERROR_NOT_READY",
	cuErrorIllegalAddress:          "CUDA_ERROR_ILLEGAL_ADDRESS",
	cuErrorLaunchOutOfResources:    "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	cuErrorLaunchTimeout:           "CUDA_ERROR_LAUNCH_TIMEOUT",
	cuErrorLaunchIncompatibleTex:   "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
	cuErrorHardwareStackError:      "CUDA_ERROR_HARDWARE_STACK_ERROR",
	cuErrorIllegalInstruction:      "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	cuErrorMisalignedAddress:       "CUDA_ERROR_MISALIGNED_ADDRESS",
	cuErrorInvalidAddressSpace:     "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	cuErrorInvalidPC:               "CUDA_ERROR_INVALID_PC",
	cuErrorLaunchFailed:            "CUDA_ERROR_LAUNCH_FAILED",
	cuErrorCooperativeLaunchTooBig: "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
	cuErrorUnknown:                 "CUDA_ERROR_UNKNOWN",
}

// sticky reports whether an error leaves the context unusable, so the
// worker must exit (CUDA driver API, "Error Handling": these errors are
// returned by every later call in the process).
func (r cuResult) sticky() bool {
	switch r {
	case cuErrorIllegalAddress, cuErrorLaunchTimeout, cuErrorHardwareStackError,
		cuErrorIllegalInstruction, cuErrorMisalignedAddress, cuErrorInvalidAddressSpace,
		cuErrorInvalidPC, cuErrorLaunchFailed, cuErrorUnknown, cuErrorDeinitialized,
		cuErrorInvalidContext:
		return true
	}
	return false
}

// cuError is a failed driver call. Name is the CUresult's name
// (cuGetErrorName), Desc its description (cuGetErrorString).
type cuError struct {
	Func string
	Code cuResult
	Name string
	Desc string
}

func (e *cuError) Error() string {
	if e.Desc != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Func, e.Name, e.Desc)
	}
	return fmt.Sprintf("%s: %s", e.Func, e.Name)
}

// driver is libcuda.so.1 with the functions gtune uses bound. Pointer-like
// handles (CUcontext, CUmodule, CUfunction, CUevent, CUstream) are uintptr;
// CUdeviceptr is uint64.
type driver struct {
	path string

	cuInit                   func(flags uint32) cuResult
	cuDriverGetVersion       func(v *int32) cuResult
	cuDeviceGet              func(dev *int32, ordinal int32) cuResult
	cuDeviceGetCount         func(n *int32) cuResult
	cuDeviceGetName          func(buf *byte, n int32, dev int32) cuResult
	cuDeviceTotalMem         func(bytes *uint64, dev int32) cuResult
	cuDeviceGetAttribute     func(v *int32, attr int32, dev int32) cuResult
	cuDeviceGetPCIBusID      func(buf *byte, n int32, dev int32) cuResult
	cuDeviceGetUUID          func(uuid *[16]byte, dev int32) cuResult
	cuDevicePrimaryCtxRetain func(ctx *uintptr, dev int32) cuResult
	cuDevicePrimaryCtxRel    func(dev int32) cuResult
	cuCtxSetCurrent          func(ctx uintptr) cuResult
	cuCtxSynchronize         func() cuResult
	cuMemAlloc               func(dptr *uint64, bytes uint64) cuResult
	cuMemFree                func(dptr uint64) cuResult
	cuMemcpyHtoD             func(dst uint64, src unsafe.Pointer, bytes uint64) cuResult
	cuMemcpyDtoH             func(dst unsafe.Pointer, src uint64, bytes uint64) cuResult
	cuMemcpyDtoD             func(dst, src uint64, bytes uint64) cuResult
	cuMemsetD32              func(dst uint64, v uint32, n uint64) cuResult // optional: Constant fills on the GPU
	cuMemGetInfo             func(free, total *uint64) cuResult
	cuModuleLoadData         func(mod *uintptr, image unsafe.Pointer) cuResult
	cuModuleUnload           func(mod uintptr) cuResult
	cuModuleGetFunction      func(fn *uintptr, mod uintptr, name string) cuResult
	cuModuleGetGlobal        func(dptr *uint64, bytes *uint64, mod uintptr, name string) cuResult
	cuFuncGetAttribute       func(v *int32, attr int32, fn uintptr) cuResult
	cuFuncSetAttribute       func(fn uintptr, attr int32, v int32) cuResult
	// Optional (CUDA 12.4 and 12.9 / 13.0 drivers): the kernel's parameter
	// layout, checked against the argument list before the first launch.
	cuFuncGetParamInfo  func(fn uintptr, index uint64, offset, size *uint64) cuResult
	cuFuncGetParamCount func(fn uintptr, count *uint64) cuResult
	cuLaunchKernel      func(fn uintptr, gx, gy, gz, bx, by, bz uint32, shmem uint32, stream uintptr, params unsafe.Pointer, extra unsafe.Pointer) cuResult
	cuEventCreate       func(ev *uintptr, flags uint32) cuResult
	cuEventRecord       func(ev uintptr, stream uintptr) cuResult
	cuEventSynchronize  func(ev uintptr) cuResult
	cuEventQuery        func(ev uintptr) cuResult
	cuEventElapsedTime  func(ms *float32, start, end uintptr) cuResult
	cuEventDestroy      func(ev uintptr) cuResult
	// Streams of a plan of several launches (cuStreamCreate flags:
	// CU_STREAM_NON_BLOCKING = 1, so they never synchronise with stream 0).
	cuStreamCreate    func(stream *uintptr, flags uint32) cuResult
	cuStreamDestroy   func(stream uintptr) cuResult
	cuStreamWaitEvent func(stream uintptr, ev uintptr, flags uint32) cuResult
	cuGetErrorName    func(r cuResult, s **byte) cuResult
	cuGetErrorString  func(r cuResult, s **byte) cuResult
}

var (
	driverOnce sync.Once
	driverLib  *driver
	driverErr  error
)

// loadDriver opens libcuda.so.1 ($GTUNE_LIBCUDA, the dynamic loader, then
// the driver directories) and binds the versioned entry points by their
// exact names, so an old or odd library is refused up front in one
// sentence rather than failing in the middle of a run.
func loadDriver() (*driver, error) {
	driverOnce.Do(func() {
		h, path, err := openLibrary("cuda", "libcuda.so.1", EnvLibCUDA, cudaCandidates())
		if err != nil {
			driverErr = err
			return
		}
		d := &driver{path: path}
		_, err = bind("cuda", path, h, []sym{
			{[]string{"cuInit"}, &d.cuInit, true},
			{[]string{"cuDriverGetVersion"}, &d.cuDriverGetVersion, true},
			{[]string{"cuDeviceGet"}, &d.cuDeviceGet, true},
			{[]string{"cuDeviceGetCount"}, &d.cuDeviceGetCount, true},
			{[]string{"cuDeviceGetName"}, &d.cuDeviceGetName, true},
			{[]string{"cuDeviceTotalMem_v2"}, &d.cuDeviceTotalMem, true},
			{[]string{"cuDeviceGetAttribute"}, &d.cuDeviceGetAttribute, true},
			{[]string{"cuDeviceGetPCIBusId"}, &d.cuDeviceGetPCIBusID, true},
			{[]string{"cuDeviceGetUuid_v2", "cuDeviceGetUuid"}, &d.cuDeviceGetUUID, false},
			{[]string{"cuDevicePrimaryCtxRetain"}, &d.cuDevicePrimaryCtxRetain, true},
			{[]string{"cuDevicePrimaryCtxRelease_v2"}, &d.cuDevicePrimaryCtxRel, true},
			{[]string{"cuCtxSetCurrent"}, &d.cuCtxSetCurrent, true},
			{[]string{"cuCtxSynchronize"}, &d.cuCtxSynchronize, true},
			{[]string{"cuMemAlloc_v2"}, &d.cuMemAlloc, true},
			{[]string{"cuMemFree_v2"}, &d.cuMemFree, true},
			{[]string{"cuMemcpyHtoD_v2"}, &d.cuMemcpyHtoD, true},
			{[]string{"cuMemcpyDtoH_v2"}, &d.cuMemcpyDtoH, true},
			{[]string{"cuMemcpyDtoD_v2"}, &d.cuMemcpyDtoD, true},
			{[]string{"cuMemsetD32_v2"}, &d.cuMemsetD32, false},
			{[]string{"cuMemGetInfo_v2"}, &d.cuMemGetInfo, true},
			{[]string{"cuModuleLoadData"}, &d.cuModuleLoadData, true},
			{[]string{"cuModuleUnload"}, &d.cuModuleUnload, true},
			{[]string{"cuModuleGetFunction"}, &d.cuModuleGetFunction, true},
			{[]string{"cuModuleGetGlobal_v2"}, &d.cuModuleGetGlobal, true},
			{[]string{"cuFuncGetAttribute"}, &d.cuFuncGetAttribute, true},
			{[]string{"cuFuncSetAttribute"}, &d.cuFuncSetAttribute, true},
			{[]string{"cuFuncGetParamInfo"}, &d.cuFuncGetParamInfo, false},
			{[]string{"cuFuncGetParamCount"}, &d.cuFuncGetParamCount, false},
			{[]string{"cuLaunchKernel"}, &d.cuLaunchKernel, true},
			{[]string{"cuEventCreate"}, &d.cuEventCreate, true},
			{[]string{"cuEventRecord"}, &d.cuEventRecord, true},
			{[]string{"cuEventSynchronize"}, &d.cuEventSynchronize, true},
			{[]string{"cuEventQuery"}, &d.cuEventQuery, true},
			{[]string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &d.cuEventElapsedTime, true},
			{[]string{"cuEventDestroy_v2"}, &d.cuEventDestroy, true},
			{[]string{"cuStreamCreate"}, &d.cuStreamCreate, true},
			{[]string{"cuStreamDestroy_v2"}, &d.cuStreamDestroy, true},
			{[]string{"cuStreamWaitEvent"}, &d.cuStreamWaitEvent, true},
			{[]string{"cuGetErrorName"}, &d.cuGetErrorName, true},
			{[]string{"cuGetErrorString"}, &d.cuGetErrorString, true},
		})
		if err != nil {
			driverErr = err
			return
		}
		driverLib = d
	})
	return driverLib, driverErr
}

// check turns a CUresult into nil or a *cuError naming the call.
func (d *driver) check(fn string, r cuResult) error {
	if r == cuSuccess {
		return nil
	}
	e := &cuError{Func: fn, Code: r, Name: cuResultNames[r]}
	var p *byte
	if d.cuGetErrorName(r, &p) == cuSuccess && p != nil {
		e.Name = goString(p)
	}
	if e.Name == "" {
		e.Name = fmt.Sprintf("CUresult %d", int32(r))
	}
	p = nil
	if d.cuGetErrorString(r, &p) == cuSuccess && p != nil {
		e.Desc = goString(p)
	}
	return e
}

// goString copies a NUL-terminated C string.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// Device attributes (CUdevice_attribute) read by the worker.
const (
	attrMaxThreadsPerBlock       = 1
	attrMaxSharedPerBlock        = 8
	attrClockRateKHz             = 13
	attrMultiprocessorCount      = 16
	attrMemoryClockRateKHz       = 36
	attrComputeCapabilityMajor   = 75
	attrComputeCapabilityMinor   = 76
	attrMaxSharedPerBlockOptin   = 97
	funcAttrMaxThreadsPerBlock   = 0
	funcAttrSharedSizeBytes      = 1
	funcAttrLocalSizeBytes       = 3
	funcAttrNumRegs              = 4
	funcAttrMaxDynamicSharedSize = 8
)
