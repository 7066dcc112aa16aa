package gpuctl

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/model"
	"github.com/gtune/gtune/nvml"
	"github.com/gtune/gtune/space"

	"github.com/gtune/gtune/internal/shared"
)

func lookup(t *testing.T, id string) *device.Description {
	t.Helper()
	d, err := device.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func simCtl(t *testing.T, id string, opts sim.ControlOptions) (*sim.Control, Controller) {
	t.Helper()
	c, err := sim.NewControl(lookup(t, id), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := NewSim(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, ctl
}

// Kepler has no locked clocks: the controller falls back to application
// clocks; Hopper locks both clocks.
func TestLockedClocksWithApplicationClockFallback(t *testing.T) {
	k, kctl := simCtl(t, "k20c", sim.ControlOptions{})
	if err := kctl.SetCoreClock(640); err != nil {
		t.Fatal(err)
	}
	st := k.State()
	if st.AppCoreMHz != 640 || st.AppMemMHz != 2600 || st.LockedCoreMHz != [2]uint32{} {
		t.Fatalf("K20c state %+v, want application clocks 640/2600 and nothing locked", st)
	}
	h, hctl := simCtl(t, "h100_sxm", sim.ControlOptions{})
	if err := hctl.SetMemClock(1593); err != nil {
		t.Fatal(err)
	}
	if err := hctl.SetCoreClock(1410); err != nil {
		t.Fatal(err)
	}
	if err := hctl.SetPowerLimit(450); err != nil {
		t.Fatal(err)
	}
	st = h.State()
	if st.LockedCoreMHz != [2]uint32{1410, 1410} || st.LockedMemMHz != [2]uint32{1593, 1593} || st.PowerLimitMW != 450000 || st.AppCoreMHz != 1980 {
		t.Fatalf("H100 state %+v", st)
	}
	got, err := hctl.Get()
	if err != nil {
		t.Fatal(err)
	}
	if want := (State{CoreLockedMHz: 1410, MemLockedMHz: 1593, AppCoreMHz: 1980, AppMemMHz: 2619, PowerLimitW: 450}); got != want {
		t.Fatalf("Get = %+v, want %+v", got, want)
	}
	if err := hctl.Restore(State{AppCoreMHz: 1980, AppMemMHz: 2619, PowerLimitW: 700}); err != nil {
		t.Fatal(err)
	}
	if st := h.State(); st != sim.DefaultControlState(lookup(t, "h100_sxm")) {
		t.Fatalf("after Restore %+v", st)
	}
}

func TestUnsupportedSettingsNameTheNearest(t *testing.T) {
	_, ctl := simCtl(t, "h100_sxm", sim.ControlOptions{})
	err := ctl.SetCoreClock(1234)
	var se *SettingError
	if !errors.As(err, &se) || err.Error() != "nvml_gr_clock 1234 MHz is not a supported SM clock of NVIDIA H100 80GB HBM3 at memory clock 2619 MHz; the nearest supported are 1230 and 1245 MHz" {
		t.Fatalf("err = %v", err)
	}
	err = ctl.SetMemClock(2000)
	if !errors.As(err, &se) || err.Error() != "nvml_mem_clock 2000 MHz is not a supported memory clock of NVIDIA H100 80GB HBM3; the nearest supported are 1593 and 2619 MHz" {
		t.Fatalf("err = %v", err)
	}
	d := lookup(t, "h100_sxm")
	err = ctl.SetPowerLimit(d.PowerLimitMaxW + 1)
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "outside the power-limit constraints") {
		t.Fatalf("err = %v", err)
	}
	// Check does the same for whole parameter lists.
	tables := TablesOf(d)
	params, _ := tables.Values("g3", 0, 10)
	params[0].Values = append(params[0].Values, powerValue(d.PowerLimitMinW-10))
	if err := tables.Check(params); !errors.As(err, &se) {
		t.Fatalf("Check = %v", err)
	}
}

func TestNoPermission(t *testing.T) {
	c, ctl := simCtl(t, "h100_sxm", sim.ControlOptions{NoPermission: true})
	before := c.State()
	for _, err := range []error{ctl.SetCoreClock(1410), ctl.SetMemClock(1593), ctl.SetPowerLimit(500)} {
		if !errors.Is(err, ErrNoPermission) {
			t.Fatalf("err = %v, want NVML_ERROR_NO_PERMISSION", err)
		}
	}
	if c.State() != before {
		t.Fatal("a refused setting changed the state")
	}
	s := NewSession(ctl, filepath.Join(t.TempDir(), "j"), Journal{Backend: "sim", SimState: "x"})
	if err := s.Probe(); !errors.Is(err, ErrNoPermission) {
		t.Fatalf("Probe = %v", err)
	}
	if _, err := os.Stat(s.JournalPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("journal left behind after a refused probe: %v", err)
	}
}

func TestSessionJournalsThenRestores(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	c, ctl := simCtl(t, "a100_80gb", sim.ControlOptions{StateFile: state})
	orig := c.State()
	jp := filepath.Join(dir, "gtune.db.gpu-journal")
	s := NewSession(ctl, jp, Journal{Backend: "sim", DeviceName: "A100", SimState: state})
	if err := s.Apply(backend.Settings{CoreClockMHz: 1005, PowerLimitW: 250}); err != nil {
		t.Fatal(err)
	}
	j, err := ReadJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	if j.DeviceUUID != "SIM-a100_80gb" || j.Original.PowerLimitW != 400 || j.Original.CoreLockedMHz != 0 || j.PID != os.Getpid() {
		t.Fatalf("journal %+v", j)
	}
	// Another process sees the change in the state file.
	other, err := sim.OpenControl(state)
	if err != nil {
		t.Fatal(err)
	}
	if st := other.State(); st.LockedCoreMHz != [2]uint32{1005, 1005} || st.PowerLimitMW != 250000 {
		t.Fatalf("state file %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	other, _ = sim.OpenControl(state)
	if other.State() != orig {
		t.Fatalf("after Close %+v, want %+v", other.State(), orig)
	}
	if _, err := os.Stat(jp); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("journal not removed")
	}
}

func TestJournalRefusals(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	c, ctl := simCtl(t, "h100_sxm", sim.ControlOptions{StateFile: state})
	jp := filepath.Join(dir, "j")
	if err := WriteJournal(jp, Journal{Backend: "sim", DeviceUUID: "SIM-k20c", SimState: state, Original: State{PowerLimitW: 225}}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJournal(jp, Journal{Backend: "sim", DeviceUUID: "SIM-k20c", SimState: state}); !errors.Is(err, ErrJournalExists) {
		t.Fatalf("second WriteJournal = %v", err)
	}
	j, err := ReadJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	_ = ctl.SetPowerLimit(500)
	before := c.State()
	var je *JournalError
	if err := Restore(jp, j, ctl); !errors.As(err, &je) || !strings.Contains(err.Error(), "is for device SIM-k20c") {
		t.Fatalf("Restore from another device's journal = %v", err)
	}
	if c.State() != before {
		t.Fatal("a journal of another device changed the settings")
	}
	b, _ := os.ReadFile(jp)
	corrupt := strings.Replace(string(b), `"power_limit_w": 225`, `"power_limit_w": 250`, 1)
	os.WriteFile(jp, []byte(corrupt), 0o600)
	if _, err := ReadJournal(jp); !errors.As(err, &je) || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("edited journal: %v", err)
	}
	os.WriteFile(jp, b[:len(b)/2], 0o600)
	if _, err := ReadJournal(jp); !errors.As(err, &je) || !strings.Contains(err.Error(), "corrupt JSON") {
		t.Fatalf("cut journal: %v", err)
	}
}

func TestValuesOfTheStrategies(t *testing.T) {
	k := TablesOf(lookup(t, "k20m"))
	g1, err := k.Values("G1", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	ints := func(p space.Param) []float64 {
		var out []float64
		for _, v := range p.Values {
			f, _ := v.Float()
			out = append(out, f)
		}
		return out
	}
	if len(g1) != 3 || g1[0].Name != "nvml_gr_clock" || g1[1].Name != "nvml_mem_clock" || g1[2].Name != "nvml_pwr_limit" {
		t.Fatalf("g1 = %v", g1)
	}
	if got := ints(g1[0]); !slices.Equal(got, []float64{758, 705, 666, 640, 614}) {
		t.Fatalf("K20m SM clocks %v", got)
	}
	if got := ints(g1[2]); !slices.Equal(got, []float64{150, 160, 170, 180, 190, 200, 210, 220, 225}) {
		t.Fatalf("K20m power limits %v", got)
	}
	g3, _ := k.Values("g3", 0, 10)
	if len(g3) != 1 || g3[0].Name != "nvml_pwr_limit" {
		t.Fatalf("g3 = %v", g3)
	}
	h := TablesOf(lookup(t, "h100_sxm"))
	g2, _ := h.Values("g2", 100, 0)
	if got := ints(g2[0]); len(got) != 17 || got[0] != 1980 || got[1] != 1875 || got[16] != 375 {
		t.Fatalf("H100 SM clocks at a 100 MHz step: %v", got)
	}
	if got := ints(g2[1]); !slices.Equal(got, []float64{2619, 1593}) {
		t.Fatalf("H100 memory clocks %v", got)
	}
	if _, err := h.Values("g4", 0, 0); err == nil {
		t.Fatal("g4 accepted")
	}
}

func TestCappingRatio(t *testing.T) {
	s := []CapSample{{95, 100}, {90, 100}, {89.9, 100}, {150, 150}, {120, 150}, {200, 0}}
	r, near, total := CappingRatio(s, CappingTolW)
	if near != 3 || total != 6 || r != 0.5 {
		t.Fatalf("ratio %v near %d total %d", r, near, total)
	}
}

// loadCache reads a Kernel Tuner energy cache from the shared datasets
// beside the repository (../shared: present in CI); the test skips,
// naming the path, where it is absent.
func loadCache(t *testing.T, name string) *cache.Cache {
	t.Helper()
	p := filepath.Join("..", "..", "shared", "datasets", "kernel_tuner_energy", name)
	shared.Need(t, p)
	c, err := cache.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The recorded synthetic-kernel power curve of an A100 has its ridge near
// the energy-optimal clock: Kernel Tuner's model fits it within a few W.
func TestFitRidgeOnRecordedA100(t *testing.T) {
	c := loadCache(t, "synthetic_fp32_cache_NVIDIA_A100-PCIE-40GB.json")
	var samples []PowerSample
	for _, e := range c.Entries {
		samples = append(samples, PowerSample{ClockMHz: e.Extra["core_freq"], PowerW: e.Extra["nvml_power"]})
	}
	fit, err := FitRidge(samples)
	if err != nil {
		t.Fatal(err)
	}
	if fit.RidgeMHz != 1005 || fit.RMSW > 3 {
		t.Fatalf("fit %+v, want the ridge at 1005 MHz within 3 W RMS", fit)
	}
	for _, s := range samples {
		if d := math.Abs(fit.Predict(s.ClockMHz) - s.PowerW); d > 6 {
			t.Errorf("at %.0f MHz: model %.1f W, recorded %.1f W", s.ClockMHz, fit.Predict(s.ClockMHz), s.PowerW)
		}
	}
	win := RidgeWindow([]int{1410, 1275, 1140, 1005, 870, 735, 600}, fit.RidgeMHz, RidgeFraction)
	if !slices.Equal(win, []int{1005}) {
		t.Fatalf("window %v", win)
	}
}

// On the simulated GPU the synthetic kernel, run at every SM clock through
// per-job Settings, finds the power model's own voltage knee.
func TestRidgeOnSimulatedGPU(t *testing.T) {
	d := lookup(t, "h100_sxm")
	s := sim.New(d, sim.Options{Noise: -1, AllowSettings: true})
	samples, err := MeasurePowerCurve(context.Background(), s, d.CoreClocksMHz)
	if err != nil {
		t.Fatal(err)
	}
	fit, err := FitRidge(samples)
	if err != nil {
		t.Fatal(err)
	}
	// The model's voltage rises as x^1.5 above its knee, the fitted one
	// linearly, so the fitted ridge sits somewhat above the knee; the
	// ±10 % window must still hold the knee.
	knee := model.DefaultPowerModel().KneeFraction * float64(d.MaxCoreClockMHz())
	if fit.RidgeMHz < knee || fit.RidgeMHz > knee*(1+RidgeFraction) || fit.RMSW > 5 {
		t.Fatalf("ridge %.0f MHz, the model's knee is %.0f MHz (fit %+v)", fit.RidgeMHz, knee, fit)
	}
	win := RidgeWindow(d.CoreClocksMHz, fit.RidgeMHz, RidgeFraction)
	if !slices.Contains(win, nearest(d.CoreClocksMHz, int(knee))) || float64(win[0]) > fit.RidgeMHz*1.1 || float64(win[len(win)-1]) < fit.RidgeMHz*0.9 {
		t.Fatalf("window %v around %.0f misses the knee %.0f", win, fit.RidgeMHz, knee)
	}
}

// Validation on Kernel Tuner's recorded data: the energy per launch of
// the recorded entries picks the clocks and block size the data shows.
func TestEnergyOptimaOfRecordedCaches(t *testing.T) {
	cases := []struct {
		file, param string
		want        float64
	}{
		{"synthetic_fp32_cache_NVIDIA_A100-PCIE-40GB.json", "nvml_gr_clock", 1005},
		{"synthetic_fp32_cache_NVIDIA_RTX_A4000.json", "nvml_gr_clock", 1335},
		{"test_cache_time_energy.json", "block_size_x", 896},
	}
	for _, tc := range cases {
		c := loadCache(t, tc.file)
		pi := slices.Index(c.ParamNames, tc.param)
		best, bestE := -1.0, math.Inf(1)
		for _, e := range c.Entries {
			en, ok := e.Energy()
			if !e.Valid() || !ok {
				continue
			}
			if en.EnergyJ < bestE {
				bestE = en.EnergyJ
				best = toF(e.Params[pi])
			}
		}
		if best != tc.want {
			t.Errorf("%s: energy-optimal %s = %v (%.3f J), want %v", tc.file, tc.param, best, bestE, tc.want)
		}
	}
	// The thesis-style comparison: 21.4 J at 1005 MHz against 30.1 J at
	// the highest clock on the A100.
	c := loadCache(t, "synthetic_fp32_cache_NVIDIA_A100-PCIE-40GB.json")
	elo, _ := c.Entries["1024,64,1024,1005"].Energy()
	ehi, _ := c.Entries["1024,64,1024,1410"].Energy()
	lo, hi := elo.EnergyJ, ehi.EnergyJ
	if math.Round(lo*10) != 214 || math.Round(hi*10) != 301 {
		t.Fatalf("A100 energy %.2f J at 1005 MHz, %.2f J at 1410 MHz", lo, hi)
	}
}

func toF(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	return math.NaN()
}

// The real NVML surface: control symbols are looked up only on demand and
// a library without them answers NVML_ERROR_FUNCTION_NOT_FOUND, which the
// controller treats as "not supported".
func TestUnsupportedIsFallback(t *testing.T) {
	if !unsupported(&nvml.Error{Func: "nvmlDeviceSetGpuLockedClocks", Code: nvml.ErrorFunctionNotFound}) ||
		!unsupported(&nvml.Error{Code: nvml.ErrorNotSupported}) || unsupported(&nvml.Error{Code: nvml.ErrorNoPermission}) {
		t.Fatal("unsupported() misclassifies NVML codes")
	}
}
