package nvml

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/ebitengine/purego"
)

// The sampling functions are optional and bound on first use
// (purego.Dlsym, checked), so an older driver without them still loads.
// All of them only read.
type samplingFuncs struct {
	getSamples     func(h uintptr, typ uint32, last uint64, valType *uint32, n *uint32, buf *rawSample) Return
	getFieldValues func(h uintptr, n int32, vals *rawFieldValue) Return
	getViolation   func(h uintptr, policy uint32, v *rawViolation) Return
}

var sampling sync.Map // *Lib -> *samplingFuncs

func (l *Lib) sampling() *samplingFuncs {
	if f, ok := sampling.Load(l); ok {
		return f.(*samplingFuncs)
	}
	f := &samplingFuncs{}
	bindOpt := func(name string, fn any) {
		if addr, err := purego.Dlsym(l.handle, name); err == nil && addr != 0 {
			purego.RegisterFunc(fn, addr)
		}
	}
	bindOpt("nvmlDeviceGetSamples", &f.getSamples)
	bindOpt("nvmlDeviceGetFieldValues", &f.getFieldValues)
	bindOpt("nvmlDeviceGetViolationStatus", &f.getViolation)
	got, _ := sampling.LoadOrStore(l, f)
	return got.(*samplingFuncs)
}

// rawSample is nvmlSample_t: a CPU timestamp (µs) and an nvmlValue_t.
type rawSample struct {
	TimeStamp uint64
	Value     [8]byte
}

// rawFieldValue is nvmlFieldValue_t (40 bytes).
type rawFieldValue struct {
	FieldID   uint32
	ScopeID   uint32
	Timestamp int64
	LatencyUs int64
	ValueType uint32
	Ret       Return
	Value     [8]byte
}

// rawViolation is nvmlViolationTime_t.
type rawViolation struct {
	ReferenceTime uint64 // CPU timestamp, µs
	ViolationTime uint64 // ns
}

// Value types (nvmlValueType_t).
const (
	valueDouble    = 0
	valueUInt      = 1
	valueULong     = 2
	valueULongLong = 3
	valueSLongLong = 4
	valueSInt      = 5
)

// decodeValue reads an nvmlValue_t of type t.
func decodeValue(t uint32, v [8]byte) float64 {
	switch t {
	case valueDouble:
		return math.Float64frombits(binary.LittleEndian.Uint64(v[:]))
	case valueUInt:
		return float64(binary.LittleEndian.Uint32(v[:4]))
	case valueSInt:
		return float64(int32(binary.LittleEndian.Uint32(v[:4])))
	case valueSLongLong:
		return float64(int64(binary.LittleEndian.Uint64(v[:])))
	default: // unsigned long, unsigned long long
		return float64(binary.LittleEndian.Uint64(v[:]))
	}
}

// Sample types (nvmlSamplingType_t).
const (
	SamplesTotalPower = 0 // NVML_TOTAL_POWER_SAMPLES, mW
)

// Field ids (nvmlFieldValue_t.fieldId) whose numbers are stable across
// headers. The NVML_FI_DEV_CLOCKS_EVENT_REASON_*_SLOWDOWN time fields are
// not used: their ids moved between driver headers (251–253 vs 269–271);
// ViolationNs reads the same counters through a stable entry point.
const (
	FieldPowerAverage = 185 // NVML_FI_DEV_POWER_AVERAGE, mW
	FieldPowerInstant = 186 // NVML_FI_DEV_POWER_INSTANT, mW
)

// Perf policies for ViolationNs (nvmlPerfPolicyType_t).
const (
	PolicyPower      = 0 // NVML_PERF_POLICY_POWER
	PolicyThermal    = 1 // NVML_PERF_POLICY_THERMAL
	PolicySyncBoost  = 2
	PolicyBoardLimit = 3
)

// Sample is one buffered reading: a CPU timestamp in µs since the Unix
// epoch and a value in the sample type's unit (mW for power).
type Sample struct {
	TimeUs uint64
	Value  float64
}

// Samples returns the driver's buffered samples of type typ taken after
// sinceUs (CPU µs since the epoch; 0: all), oldest first
// (nvmlDeviceGetSamples). For SamplesTotalPower an H100's buffer holds a
// sample every 20 ms for about 2.4 s, so a caller integrating longer
// windows reads at least every second. No samples since sinceUs is an
// empty result, not an error. Errors: the function is missing
// (ErrorFunctionNotFound) or the GPU does not sample (ErrorNotSupported).
func (d Device) Samples(typ uint32, sinceUs uint64) ([]Sample, error) {
	const fn = "nvmlDeviceGetSamples"
	f := d.lib.sampling()
	if f.getSamples == nil {
		return nil, d.lib.absent(fn)
	}
	var vt, n uint32
	r := f.getSamples(d.h, typ, sinceUs, &vt, &n, nil)
	if r == ErrorNotFound || (r == Success && n == 0) {
		return nil, nil
	}
	if err := d.lib.check(fn, r); err != nil {
		return nil, err
	}
	buf := make([]rawSample, n)
	r = f.getSamples(d.h, typ, sinceUs, &vt, &n, &buf[0])
	if r == ErrorNotFound {
		return nil, nil
	}
	if err := d.lib.check(fn, r); err != nil {
		return nil, err
	}
	out := make([]Sample, 0, n)
	for _, s := range buf[:min(int(n), len(buf))] {
		if s.TimeStamp == 0 {
			continue
		}
		out = append(out, Sample{TimeUs: s.TimeStamp, Value: decodeValue(vt, s.Value)})
	}
	return out, nil
}

// FieldValue reads one field (nvmlDeviceGetFieldValues), in the field's
// unit (mW for the power fields). Errors: the function is missing, or the
// call or the field's own return code fails (ErrorNotSupported where the
// GPU lacks the field).
func (d Device) FieldValue(field uint32) (float64, error) {
	const fn = "nvmlDeviceGetFieldValues"
	f := d.lib.sampling()
	if f.getFieldValues == nil {
		return 0, d.lib.absent(fn)
	}
	v := rawFieldValue{FieldID: field}
	if err := d.lib.check(fn, f.getFieldValues(d.h, 1, &v)); err != nil {
		return 0, err
	}
	if err := d.lib.check(fn, v.Ret); err != nil {
		return 0, err
	}
	return decodeValue(v.ValueType, v.Value), nil
}

// InstantPowerMW is the instantaneous power field, mW
// (NVML_FI_DEV_POWER_INSTANT). On an H100 it updates every 100 ms and
// reads about a third low under a pulsed load: use it for display only.
func (d Device) InstantPowerMW() (float64, error) { return d.FieldValue(FieldPowerInstant) }

// ViolationNs is the cumulative time, ns, the clocks were held down by
// policy (PolicyPower, PolicyThermal, ...) since the driver loaded
// (nvmlDeviceGetViolationStatus). Errors: missing function or
// ErrorNotSupported.
func (d Device) ViolationNs(policy uint32) (uint64, error) {
	const fn = "nvmlDeviceGetViolationStatus"
	f := d.lib.sampling()
	if f.getViolation == nil {
		return 0, d.lib.absent(fn)
	}
	var v rawViolation
	if err := d.lib.check(fn, f.getViolation(d.h, policy, &v)); err != nil {
		return 0, err
	}
	return v.ViolationTime, nil
}
