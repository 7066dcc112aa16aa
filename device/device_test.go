package device

import (
	"reflect"
	"strings"
	"testing"
)

func TestEveryEmbeddedFileLoads(t *testing.T) {
	entries, err := dataFS.ReadDir("data")
	if err != nil {
		t.Fatal(err)
	}
	all := All()
	if len(all) != len(entries) || len(all) < 4 {
		t.Fatalf("All() = %d descriptions, data/ holds %d files (want >= 4)", len(all), len(entries))
	}
	for i, d := range all {
		if i > 0 && all[i-1].ID >= d.ID {
			t.Errorf("All() not sorted: %q before %q", all[i-1].ID, d.ID)
		}
		if err := d.Validate(); err != nil {
			t.Error(err)
		}
		// Every set field carries its source.
		v := reflect.ValueOf(*d)
		for j := 0; j < v.NumField(); j++ {
			f := v.Type().Field(j)
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			if name == "id" || name == "sources" || v.Field(j).IsZero() {
				continue
			}
			if d.Sources[name] == "" {
				t.Errorf("%s: field %s has no entry in sources", d.ID, name)
			}
		}
	}
}

func TestKnownValues(t *testing.T) {
	h, err := Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	if h.SMs != 132 || h.ComputeMajor != 9 || h.ComputeMinor != 0 || h.MaxCoreClockMHz() != 1980 ||
		h.MemoryClockMHz != 2619 || h.MemoryBandwidthGBs != 3352 || h.PeakFP32GFLOPS != 66900 ||
		h.PeakFP64GFLOPS != 33500 || h.PeakFP64TensorGFLOPS != 66900 || h.L2Bytes != 50<<20 || h.PowerLimitMinW != 200 ||
		h.PowerLimitDefaultW != 700 || h.PowerLimitMaxW != 700 || h.SharedMemoryPerSM != 228<<10 ||
		h.SharedMemoryPerBlockOptin != 227<<10 || h.RegistersPerSM != 65536 || h.MaxWarpsPerSM != 64 ||
		h.MaxBlocksPerSM != 32 {
		t.Errorf("h100_sxm differs from the H100 SXM5 datasheet/measurement: %+v", h)
	}
	// 110 supported clocks, 1980..345 MHz in 15 MHz steps (nvidia-smi).
	if n := len(h.CoreClocksMHz); n != 110 || h.CoreClocksMHz[n-1] != 345 {
		t.Errorf("h100_sxm core clocks: %d clocks, last %d", n, h.CoreClocksMHz[n-1])
	}
	k, err := Lookup("K20c")
	if err != nil {
		t.Fatal(err)
	}
	// multi-kernel-autotuning-performance-energy.md Table III.
	if k.SMs != 13 || k.ComputeMajor != 3 || k.ComputeMinor != 5 || k.BaseClockMHz != 706 ||
		!reflect.DeepEqual(k.CoreClocksMHz, []int{758, 705, 666, 640, 614}) || k.MemoryClockMHz != 2600 ||
		k.MemoryBandwidthGBs != 208 || k.PeakFP32GFLOPS != 3520 || k.PeakFP64GFLOPS != 1170 ||
		k.TDPW != 225 || k.SharedMemoryPerBlock != 48<<10 || k.MaxBlocksPerSM != 16 || k.MaxWarpsPerSM != 64 {
		t.Errorf("k20c differs from Table III: %+v", k)
	}
	// Peak FP32 = SMs × 128 lanes × 2 FLOP × clock on Hopper: 66.9 TFLOP/s.
	if got := float64(h.SMs*128*2*h.MaxCoreClockMHz()) / 1e3; got < 66900 || got > 66910 {
		t.Errorf("h100 peak FP32 from lanes × clock = %v GFLOP/s", got)
	}
}

func TestLookupSuggests(t *testing.T) {
	_, err := Lookup("h100")
	if err == nil {
		t.Fatal("Lookup(h100) succeeded")
	}
	if !strings.Contains(err.Error(), "closest: h100_sxm") {
		t.Errorf("Lookup(h100) error %q does not suggest h100_sxm first", err)
	}
	_, err = Lookup("k20")
	if err == nil || !strings.Contains(err.Error(), "closest: k20c") {
		t.Errorf("Lookup(k20) error %v does not suggest k20c first", err)
	}
}

func TestLookupReturnsCopies(t *testing.T) {
	a, _ := Lookup("h100_sxm")
	a.CoreClocksMHz[0] = 1
	a.Sources["sms"] = "changed"
	b, _ := Lookup("h100_sxm")
	if b.CoreClocksMHz[0] != 1980 || b.Sources["sms"] == "changed" {
		t.Error("Lookup shares state between callers")
	}
}

func TestParseRejects(t *testing.T) {
	h, _ := Lookup("h100_sxm")
	cases := map[string]func(d *Description){
		"sms":                           func(d *Description) { d.SMs = 0 },
		"max_warps_per_sm":              func(d *Description) { d.MaxWarpsPerSM = 48 },
		"core_clocks_mhz":               func(d *Description) { d.CoreClocksMHz = []int{1000, 1980} },
		"memory_clock_mhz":              func(d *Description) { d.MemoryClockMHz = 1 },
		"shared_memory_per_block_optin": func(d *Description) { d.SharedMemoryPerBlockOptin = 1 },
		"power_limit_default_w":         func(d *Description) { d.PowerLimitDefaultW = 900 },
		"sources":                       func(d *Description) { d.Sources = nil },
		"peak_fp64_tensor_gflops":       func(d *Description) { d.PeakFP64TensorGFLOPS = 20000 }, // below the CUDA cores' 33,500
	}
	for field, mutate := range cases {
		d := h.clone()
		mutate(d)
		err := d.Validate()
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("mutating %s: Validate() = %v, want an error naming %s", field, err, field)
		}
	}
	if _, err := Parse([]byte(`{"id":"x","bogus":1}`)); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("Parse with unknown field: %v", err)
	}
}
