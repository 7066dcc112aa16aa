package nvml

import "fmt"

// Return is an nvmlReturn_t code. It implements error so that
// errors.Is(err, nvml.ErrorNoPermission) works on any *Error.
type Return int32

// NVML return codes (nvml.h, nvmlReturn_enum).
const (
	Success                      Return = 0
	ErrorUninitialized           Return = 1
	ErrorInvalidArgument         Return = 2
	ErrorNotSupported            Return = 3
	ErrorNoPermission            Return = 4
	ErrorAlreadyInitialized      Return = 5
	ErrorNotFound                Return = 6
	ErrorInsufficientSize        Return = 7
	ErrorInsufficientPower       Return = 8
	ErrorDriverNotLoaded         Return = 9
	ErrorTimeout                 Return = 10
	ErrorIRQIssue                Return = 11
	ErrorLibraryNotFound         Return = 12
	ErrorFunctionNotFound        Return = 13
	ErrorCorruptedInforom        Return = 14
	ErrorGPUIsLost               Return = 15
	ErrorResetRequired           Return = 16
	ErrorOperatingSystem         Return = 17
	ErrorLibRMVersionMismatch    Return = 18
	ErrorInUse                   Return = 19
	ErrorMemory                  Return = 20
	ErrorNoData                  Return = 21
	ErrorVGPUECCNotSupported     Return = 22
	ErrorInsufficientResources   Return = 23
	ErrorFreqNotSupported        Return = 24
	ErrorArgumentVersionMismatch Return = 25
	ErrorDeprecated              Return = 26
	ErrorNotReady                Return = 27
	ErrorGPUNotFound             Return = 28
	ErrorInvalidState            Return = 29
	ErrorUnknown                 Return = 999
)

var returnNames = map[Return]string{
	Success:                      "NVML_SUCCESS",
	ErrorUninitialized:           "NVML_ERROR_UNINITIALIZED",
	ErrorInvalidArgument:         "NVML_ERROR_INVALID_ARGUMENT",
	ErrorNotSupported:            "NVML_ERROR_NOT_SUPPORTED",
	ErrorNoPermission:            "NVML_ERROR_NO_PERMISSION",
	ErrorAlreadyInitialized:      "NVML_ERROR_ALREADY_INITIALIZED",
	ErrorNotFound:                "NVML_ERROR_NOT_FOUND",
	ErrorInsufficientSize:        "NVML_ERROR_INSUFFICIENT_SIZE",
	ErrorInsufficientPower:       "NVML_ERROR_INSUFFICIENT_POWER",
	ErrorDriverNotLoaded:         "NVML_ERROR_DRIVER_NOT_LOADED",
	ErrorTimeout:                 "NVML_ERROR_TIMEOUT",
	ErrorIRQIssue:                "NVML_ERROR_IRQ_ISSUE",
	ErrorLibraryNotFound:         "NVML_ERROR_LIBRARY_NOT_FOUND",
	ErrorFunctionNotFound:        "NVML_ERROR_FUNCTION_NOT_FOUND",
	ErrorCorruptedInforom:        "NVML_ERROR_CORRUPTED_INFOROM",
	ErrorGPUIsLost:               "NVML_ERROR_GPU_IS_LOST",
	ErrorResetRequired:           "NVML_ERROR_RESET_REQUIRED",
	ErrorOperatingSystem:         "NVML_ERROR_OPERATING_SYSTEM",
	ErrorLibRMVersionMismatch:    "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
	ErrorInUse:                   "NVML_ERROR_IN_USE",
	ErrorMemory:                  "NVML_ERROR_MEMORY",
	ErrorNoData:                  "NVML_ERROR_NO_DATA",
	ErrorVGPUECCNotSupported:     "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED",
	ErrorInsufficientResources:   "NVML_ERROR_INSUFFICIENT_RESOURCES",
	ErrorFreqNotSupported:        "NVML_ERROR_FREQ_NOT_SUPPORTED",
	ErrorArgumentVersionMismatch: "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
	ErrorDeprecated:              "NVML_ERROR_DEPRECATED",
	ErrorNotReady:                "NVML_ERROR_NOT_READY",
	ErrorGPUNotFound:             "NVML_ERROR_GPU_NOT_FOUND",
	ErrorInvalidState:            "NVML_ERROR_INVALID_STATE",
	ErrorUnknown:                 "NVML_ERROR_UNKNOWN",
}

// String is the code's name in nvml.h, e.g. "NVML_ERROR_NO_PERMISSION".
func (r Return) String() string {
	if s, ok := returnNames[r]; ok {
		return s
	}
	return fmt.Sprintf("NVML_ERROR_%d", int32(r))
}

// Error makes a bare Return usable as an errors.Is target.
func (r Return) Error() string { return r.String() }

// Error is a failed NVML call: the function, its return code and NVML's
// own text for the code (nvmlErrorString).
type Error struct {
	Func string
	Code Return
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("nvml: %s: %s (%s)", e.Func, e.Msg, e.Code)
}

// Is reports whether target is this error's return code, so that
// errors.Is(err, nvml.ErrorNotSupported) matches.
func (e *Error) Is(target error) bool {
	r, ok := target.(Return)
	return ok && r == e.Code
}
