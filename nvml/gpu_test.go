package nvml

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestIntegrationSensors reads every sensor of GPU 0 on a machine with an
// NVIDIA driver (GTUNE_CUDA_TEST=1). It only reads.
func TestIntegrationSensors(t *testing.T) {
	if os.Getenv("GTUNE_CUDA_TEST") != "1" {
		t.Skip("set GTUNE_CUDA_TEST=1 on a machine with an NVIDIA GPU")
	}
	l, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	defer l.Shutdown()
	n, err := l.DeviceCount()
	if err != nil || n < 1 {
		t.Fatalf("DeviceCount = %d, %v", n, err)
	}
	drv, err := l.DriverVersion()
	if err != nil || drv == "" {
		t.Fatalf("DriverVersion = %q, %v", drv, err)
	}
	d, err := l.DeviceByIndex(0)
	if err != nil {
		t.Fatal(err)
	}
	name, err := d.Name()
	if err != nil || name == "" {
		t.Fatalf("Name = %q, %v", name, err)
	}
	uuid, err := d.UUID()
	if err != nil || len(uuid) < 10 {
		t.Fatalf("UUID = %q, %v", uuid, err)
	}
	d2, err := l.DeviceByUUID(uuid)
	if err != nil || d2.h != d.h {
		t.Fatalf("DeviceByUUID: %v (handle %x vs %x)", err, d2.h, d.h)
	}
	if _, err := l.DeviceByUUID("GPU-00000000-0000-0000-0000-000000000000"); !errors.Is(err, ErrorNotFound) && !errors.Is(err, ErrorInvalidArgument) {
		t.Fatalf("unknown UUID: %v", err)
	}
	e1, err := d.TotalEnergyMJ()
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.PowerUsageMW()
	if err != nil || p == 0 {
		t.Fatalf("PowerUsageMW = %d, %v", p, err)
	}
	lim, err := d.EnforcedPowerLimitMW()
	if err != nil || lim < p/4 {
		t.Fatalf("EnforcedPowerLimitMW = %d, %v", lim, err)
	}
	lo, hi, err := d.PowerLimitConstraintsMW()
	if err != nil || lo > lim || hi < lim {
		t.Fatalf("constraints %d..%d (limit %d), %v", lo, hi, lim, err)
	}
	def, err := d.DefaultPowerLimitMW()
	if err != nil {
		t.Fatal(err)
	}
	sm, _ := d.ClockMHz(ClockSM)
	mem, _ := d.ClockMHz(ClockMem)
	maxSM, err := d.MaxClockMHz(ClockSM)
	if err != nil || maxSM < 500 {
		t.Fatalf("MaxClockMHz(SM) = %d, %v", maxSM, err)
	}
	mems, err := d.SupportedMemoryClocksMHz()
	if err != nil || len(mems) == 0 {
		t.Fatalf("SupportedMemoryClocksMHz = %v, %v", mems, err)
	}
	gfx, err := d.SupportedGraphicsClocksMHz(mems[0])
	if err != nil || len(gfx) == 0 {
		t.Fatalf("SupportedGraphicsClocksMHz = %v, %v", gfx, err)
	}
	temp, err := d.TemperatureC()
	if err != nil || temp == 0 || temp > 120 {
		t.Fatalf("TemperatureC = %d, %v", temp, err)
	}
	reasons, err := d.ClockEventReasons()
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := d.TotalEnergyMJ()
	// How often the energy counter moves, at idle: the energy window's
	// alignment error is bounded by this period.
	var gaps []time.Duration
	last, _ := d.TotalEnergyMJ()
	lastT := time.Now()
	for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
		v, err := d.TotalEnergyMJ()
		if err != nil {
			t.Fatal(err)
		}
		if v != last {
			now := time.Now()
			gaps = append(gaps, now.Sub(lastT))
			last, lastT = v, now
		}
	}
	if len(gaps) < 2 {
		t.Fatalf("energy counter moved %d times in 400 ms", len(gaps))
	}
	t.Logf("energy counter update gaps at idle: %v", gaps[1:])
	t.Logf("driver %s; %s %s; energy %d mJ (then %d); power %.1f W; limit %.0f W (default %.0f, range %.0f..%.0f); SM %d/%d MHz, mem %d MHz; %d memory clocks, %d graphics clocks at %d MHz (%d..%d); %d °C; reasons %#x %s (via %s)",
		drv, name, uuid, e1, e2, float64(p)/1000, float64(lim)/1000, float64(def)/1000, float64(lo)/1000, float64(hi)/1000,
		sm, maxSM, mem, len(mems), len(gfx), mems[0], gfx[len(gfx)-1], gfx[0], temp, reasons, ReasonNames(reasons), l.eventReasonsName)
}
