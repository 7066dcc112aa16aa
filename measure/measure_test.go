package measure

import (
	"math"
	"testing"
	"time"
)

func TestWindowLength(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		period, edge time.Duration
		target       float64
		min          int
		want         time.Duration
	}{
		{100 * ms, 250 * time.Microsecond, 0.01, 1, 100 * ms},  // 2·0.25/1 = 0.5 period → 1
		{100 * ms, 250 * time.Microsecond, 0.01, 2, 200 * ms},  // stand-alone: 2 periods
		{100 * ms, 2750 * time.Microsecond, 0.01, 1, 600 * ms}, // H100 read latency 2.5 ms: 5.5 → 6 periods
		{100 * ms, 100 * ms, 0.01, 1, 20 * time.Second},        // unaligned: Kernel Tuner's case
		{100 * ms, 1 * ms, 0.001, 1, 2 * time.Second},          // 2·1/(0.001·100) = 20 periods
		{0, 1 * ms, 0.01, 1, 0},
	}
	for _, c := range cases {
		if got := WindowLength(c.period, c.edge, c.target, c.min); got != c.want {
			t.Errorf("WindowLength(%v, %v, %v, %d) = %v, want %v", c.period, c.edge, c.target, c.min, got, c.want)
		}
	}
}

// For 1..5 a resample's median is 1 with probability
// P(Bin(5, 0.2) ≥ 3) = 0.05792 > 0.025 (and 5 likewise), so the 95 %
// interval is exactly [1, 5]. For nine 10s and one 50 the median exceeds
// 10 only when ≥ 5 of 10 draws are 50, P = 0.0016 < 0.025: [10, 10].
func TestBootstrapCI(t *testing.T) {
	lo, hi := BootstrapCI([]float64{3, 1, 4, 5, 2}, 2000, 0.95, 7)
	if lo != 1 || hi != 5 {
		t.Fatalf("1..5: [%v, %v], want [1, 5]", lo, hi)
	}
	xs := []float64{10, 10, 10, 10, 50, 10, 10, 10, 10, 10}
	lo, hi = BootstrapCI(xs, 2000, 0.95, 1)
	if lo != 10 || hi != 10 {
		t.Fatalf("nine 10s and a 50: [%v, %v], want [10, 10]", lo, hi)
	}
	// 80 % interval of 1..5: P(median ≤ 1) = 0.058 < 0.1 and
	// P(median ≤ 2) = P(Bin(5, 0.4) ≥ 3) = 0.317 > 0.1, so [2, 4].
	lo, hi = BootstrapCI([]float64{1, 2, 3, 4, 5}, 4000, 0.80, 3)
	if lo != 2 || hi != 4 {
		t.Fatalf("80 %% of 1..5: [%v, %v], want [2, 4]", lo, hi)
	}
	a1, b1 := BootstrapCI([]float64{1.1, 0.9, 1.05, 0.97, 1.02, 1.0, 0.99}, 500, 0.9, 42)
	a2, b2 := BootstrapCI([]float64{1.1, 0.9, 1.05, 0.97, 1.02, 1.0, 0.99}, 500, 0.9, 42)
	if a1 != a2 || b1 != b2 {
		t.Fatal("same seed, different bounds")
	}
	if lo, hi := BootstrapCI(nil, 100, 0.95, 1); lo != 0 || hi != 0 {
		t.Fatal("empty input")
	}
}

func TestEarlyStoppingAndCVFlag(t *testing.T) {
	p := Protocol{MaxTrials: 5, MinTrials: 3, Target: 0.01, CVFlag: 0.02}
	tight := []float64{1, 1.004, 0.996}
	if p.Done(tight[:2]) {
		t.Error("stopped before MinTrials")
	}
	if !p.Done(tight) {
		t.Error("±0.4 % after 3 trials did not stop")
	}
	st := p.Summarize(tight)
	if st.CILow != 0.996 || st.CIHigh != 1.004 || math.Abs(st.HalfWidth-0.004) > 1e-12 || !st.EarlyStopped || st.Unstable {
		t.Errorf("tight: %+v", st)
	}
	wide := []float64{1, 1.05, 0.95}
	if p.Done(wide) || p.Done(append(wide, 1.01)) {
		t.Error("±5 % stopped early")
	}
	if !p.Done(append(wide, 1.01, 0.99)) {
		t.Error("MaxTrials reached but not done")
	}
	sw := p.Summarize(wide)
	if !sw.Unstable || math.Abs(sw.CV-0.05) > 1e-12 || sw.TargetReached {
		t.Errorf("wide: CV %v unstable %v", sw.CV, sw.Unstable)
	}
	// CV 1.5 % is under the 2 % flag.
	if st := p.Summarize([]float64{0.985, 1, 1.015}); st.Unstable || math.Abs(st.CV-0.015) > 1e-12 {
		t.Errorf("CV %v flagged %v", st.CV, st.Unstable)
	}
}

func TestIntegrateSamples(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	s := []PowerSample{{at(0), 100}, {at(20), 100}, {at(40), 300}, {at(60), 300}}
	// [10, 20] ms at 100 W: 1 J; [20, 40] ramp 100→300 W: 4 J; [40, 50] at 300 W: 3 J.
	e, err := IntegrateSamples(s, at(10), at(50))
	if err != nil || math.Abs(e-8) > 1e-12 {
		t.Fatalf("energy %v J, %v; want 8 J", e, err)
	}
	// Within one segment of the ramp: [25, 35] ms, power 150..250 W → 2 J.
	if e, _ := IntegrateSamples(s, at(25), at(35)); math.Abs(e-2) > 1e-12 {
		t.Fatalf("ramp: %v J, want 2", e)
	}
	if _, err := IntegrateSamples(s, at(10), at(70)); err == nil {
		t.Fatal("interval past the last sample accepted")
	}
	if _, err := IntegrateSamples(s[:1], at(0), at(0)); err == nil {
		t.Fatal("one sample accepted")
	}
}

// A sensor with capacitance C follows P_m' = (P − P_m)/C; equation 6
// inverts that, so a lagged step comes back as the step.
func TestCorrectLagRecoversStep(t *testing.T) {
	const c = 0.8 // s, about a K20c's 0.833
	t0 := time.Unix(0, 0)
	var lagged []PowerSample
	for i := 0; i <= 150; i++ { // 3 s at 20 ms
		ts := float64(i) * 0.02
		w := 100.0
		if ts > 1 {
			w = 400 - 300*math.Exp(-(ts-1)/c)
		}
		lagged = append(lagged, PowerSample{t0.Add(time.Duration(ts * float64(time.Second))), w})
	}
	fixed := CorrectLag(lagged, c)
	for i, p := range fixed {
		ts := float64(i) * 0.02
		switch {
		case ts <= 0.98:
			if p.W != 100 {
				t.Fatalf("t=%.2f before the step: %v W, want 100", ts, p.W)
			}
		case ts >= 1.04 && i < len(fixed)-1:
			if math.Abs(p.W-400) > 0.5 {
				t.Fatalf("t=%.2f: corrected %.3f W, want 400 (lagged %.1f W)", ts, p.W, lagged[i].W)
			}
		}
	}
	if lagged[52].W > 150 { // 40 ms after the step the sensor is still far off
		t.Fatalf("test trace is not lagged: %v", lagged[52].W)
	}
	// Energy over [1, 3] s: the true step gives 800 J; the lagged trace
	// misses 300·C·(1 − e^{−2/C}) = 220.3 J; the corrected one is within 1 %.
	eTrue := 400.0 * 2
	eLag, _ := IntegrateSamples(lagged, t0.Add(time.Second), t0.Add(3*time.Second))
	eFix, _ := IntegrateSamples(fixed, t0.Add(time.Second), t0.Add(3*time.Second))
	if math.Abs(eLag-(eTrue-300*c*(1-math.Exp(-2/c)))) > 1 || math.Abs(eFix-eTrue)/eTrue > 0.01 {
		t.Fatalf("energy: lagged %.1f J, corrected %.1f J, true %.0f J", eLag, eFix, eTrue)
	}
	if got := CorrectLag(lagged, 0); got[60].W != lagged[60].W {
		t.Fatal("C = 0 changed the trace")
	}
}

func TestSlope(t *testing.T) {
	if s := Slope([]float64{0, 1, 2, 3}, []float64{50, 50.5, 51, 51.5}); math.Abs(s-0.5) > 1e-12 {
		t.Fatalf("slope %v", s)
	}
	if s := Slope([]float64{1}, []float64{2}); s != 0 {
		t.Fatalf("one point: %v", s)
	}
}
