package nvml

import (
	"encoding/binary"
	"math"
	"testing"
	"unsafe"
)

// The structs passed to NVML must have the C layout of nvml.h.
func TestSamplingLayouts(t *testing.T) {
	if s := unsafe.Sizeof(rawSample{}); s != 16 {
		t.Fatalf("nvmlSample_t: %d bytes, want 16", s)
	}
	var f rawFieldValue
	if s := unsafe.Sizeof(f); s != 40 {
		t.Fatalf("nvmlFieldValue_t: %d bytes, want 40", s)
	}
	if o := unsafe.Offsetof(f.ValueType); o != 24 {
		t.Fatalf("valueType at %d, want 24", o)
	}
	if o := unsafe.Offsetof(f.Value); o != 32 {
		t.Fatalf("value at %d, want 32", o)
	}
	if s := unsafe.Sizeof(rawViolation{}); s != 16 {
		t.Fatalf("nvmlViolationTime_t: %d bytes", s)
	}
}

func TestDecodeValue(t *testing.T) {
	var v [8]byte
	binary.LittleEndian.PutUint32(v[:], 412345)
	if got := decodeValue(valueUInt, v); got != 412345 {
		t.Fatalf("uint: %v", got)
	}
	binary.LittleEndian.PutUint64(v[:], math.Float64bits(71.5))
	if got := decodeValue(valueDouble, v); got != 71.5 {
		t.Fatalf("double: %v", got)
	}
	binary.LittleEndian.PutUint32(v[:4], uint32(0xffffffff))
	if got := decodeValue(valueSInt, v); got != -1 {
		t.Fatalf("sint: %v", got)
	}
	binary.LittleEndian.PutUint64(v[:], 1<<40)
	if got := decodeValue(valueULongLong, v); got != 1<<40 {
		t.Fatalf("ulonglong: %v", got)
	}
}
