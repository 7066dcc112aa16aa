package tuner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/store"
)

// Config.Repeat 5 over two simulated GPUs with straggling launches: every
// valid configuration is measured 5 times (repeats numbered 0..4, on both
// GPUs), each repeat stored; the evaluation is the median repeat by time,
// with the interval of the median in its metrics; a configuration that
// fails is measured once.
func TestRepeats(t *testing.T) {
	f := newFixture(t)
	straggling := sim.Options{Seed: 7, Stragglers: 0.2}
	sum := simTune(t, f, func(c *Config) { c.Repeat = 5 }, nil, straggling, straggling)
	evs, err := f.db.Evaluations(sum.RunID)
	if err != nil {
		t.Fatal(err)
	}
	// Each valid outcome carries its repeats' objective values (time),
	// what strategies receive as Samples.
	told := map[string][]float64{}
	for _, o := range sum.Evaluations {
		if o.Valid() {
			told[o.Key] = o.Repeats
		}
	}
	valid, gpusSeen := 0, map[string]bool{}
	for _, e := range evs {
		rs, err := f.db.Repeats(e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if e.Status != "valid" {
			// A failure ends the repeats: those in flight on the two
			// GPUs, or queued, when it came are all there can be.
			if len(rs) > 3 {
				t.Errorf("%s (%s): %d repeats; a failure ends them", e.Key, e.Status, len(rs))
			}
			continue
		}
		valid++
		if len(rs) != 5 {
			t.Fatalf("%s: %d repeats; want 5", e.Key, len(rs))
		}
		var times []float64
		for i, r := range rs {
			if r.Repeat != i || r.Status != "valid" {
				t.Errorf("%s: repeat %d is %+v", e.Key, i, r)
			}
			gpusSeen[r.GPU] = true
			times = append(times, r.Observations["time"])
		}
		sorted := slices.Clone(times)
		slices.Sort(sorted)
		if got := e.Observations["time"]; math.Abs(got-sorted[2]) > 1e-9*sorted[2] {
			t.Errorf("%s: time %v; want the median repeat's %v of %v", e.Key, got, sorted[2], times)
		}
		// n = 5 cannot reach 95 %: the range, at 1 − 2/32.
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*b }
		if e.Metrics["repeats"] != 5 || !near(e.Metrics["time_ci_low"], sorted[0]) || !near(e.Metrics["time_ci_high"], sorted[4]) || e.Metrics["time_ci_level"] != 1-2.0/32 {
			t.Errorf("%s: metrics %v; times %v", e.Key, e.Metrics, sorted)
		}
		if slices.Equal(times[:1], times[1:2]) {
			t.Errorf("%s: repeats 0 and 1 measured the same time %v", e.Key, times[0])
		}
		if got := told[e.Key]; len(got) != 5 || !slices.EqualFunc(got, times, near) {
			t.Errorf("%s: outcome's repeats %v; stored %v", e.Key, got, times)
		}
	}
	if valid < 100 || len(gpusSeen) != 2 {
		t.Errorf("%d valid configurations, repeats on %d GPUs; want over 100 and 2", valid, len(gpusSeen))
	}
	r, _ := f.db.Run(sum.RunID)
	if r.Settings["repeat"] != float64(5) {
		t.Errorf("run settings %v: no repeat", r.Settings)
	}
}

// Config.RepeatUntil: repeats one at a time until the median's interval
// is within ±2 % (95 %: at least 6 repeats) or Repeat (20) were made.
// Without noise every configuration stops at 6; with straggling launches
// some need more, each stopping converged or at the cap.
func TestRepeatUntil(t *testing.T) {
	d, _ := device.Lookup("h100_sxm")
	run := func(o sim.Options) (map[string][]float64, map[string]float64) {
		t.Helper()
		f := newFixture(t)
		sp, err := f.spec.BuildSpace()
		if err != nil {
			t.Fatal(err)
		}
		g := sim.New(d, o)
		defer g.Close()
		sum, err := Run(context.Background(), Config{Subject: FromSpec(f.spec), Space: sp, Backend: g, DB: f.db,
			Objective: objective.FromSpec(f.spec), Strategy: "brute_force", Seed: 3, CompileWorkers: 2, Repeat: 20, RepeatUntil: 0.02})
		if err != nil {
			t.Fatal(err)
		}
		evs, _ := f.db.Evaluations(sum.RunID)
		times, halfWidth := map[string][]float64{}, map[string]float64{}
		for _, e := range evs {
			if e.Status != "valid" {
				continue
			}
			rs, _ := f.db.Repeats(e.ID)
			for _, r := range rs {
				times[e.Key] = append(times[e.Key], r.Observations["time"])
			}
			halfWidth[e.Key] = (e.Metrics["time_ci_high"] - e.Metrics["time_ci_low"]) / 2 / e.Observations["time"]
		}
		return times, halfWidth
	}
	quiet, _ := run(sim.Options{Seed: 7, Noise: -1})
	for k, ts := range quiet {
		if len(ts) != 6 {
			t.Errorf("no noise, %s: %d repeats; want 6", k, len(ts))
		}
	}
	noisy, hw := run(sim.Options{Seed: 7, Stragglers: 0.3})
	more := 0
	for k, ts := range noisy {
		n := len(ts)
		switch {
		case n < 6 || n > 20:
			t.Errorf("%s: %d repeats; want 6 to 20", k, n)
		case n < 20 && hw[k] > 0.02+1e-12:
			t.Errorf("%s: stopped at %d repeats with a half-width of %.3f", k, n, hw[k])
		}
		if n > 6 {
			more++
		}
	}
	if len(quiet) < 100 || more == 0 {
		t.Errorf("%d configurations; %d needed more than 6 repeats with stragglers; want over 100, some", len(quiet), more)
	}
}

// Config.Confirm re-measures the best configurations interleaved: on a
// simulated GPU without noise each re-measurement repeats the time
// exactly, so the order settles after two rounds (three times each; the
// U test of two separated samples of three with ties is 0.047) where the
// medians differ, and runs to ConfirmRounds where two are equal. Each
// re-measurement is stored as a repeat of its evaluation.
func TestConfirm(t *testing.T) {
	f := newFixture(t)
	sum := confirmRun(t, f, -1, 6)
	cs := sum.Confirmed
	distinct := cs[0].Median < cs[1].Median && cs[1].Median < cs[2].Median
	evs, _ := f.db.Evaluations(sum.RunID)
	ids := map[string]int64{}
	for _, e := range evs {
		ids[e.Key] = e.ID
	}
	for i, c := range cs {
		for _, x := range c.Values {
			if x != c.Values[0] {
				t.Errorf("%s: times %v; without noise all equal", c.Key, c.Values)
				break
			}
		}
		want := 7 // the run's measurement and 6 rounds
		if distinct {
			want = 3
		}
		if len(c.Values) != want {
			t.Errorf("%s: measured %d times; want %d (medians distinct: %v)", c.Key, len(c.Values), want, distinct)
		}
		if i > 0 && c.Median < cs[i-1].Median {
			t.Errorf("confirmed out of order: %v", cs)
		}
		if i < 2 && c.Significant != (c.Median < cs[i+1].Median) {
			t.Errorf("%s against %s: p %v, significant %v", c.Key, cs[i+1].Key, c.PNext, c.Significant)
		}
		if rs, _ := f.db.Repeats(ids[c.Key]); len(rs) != len(c.Values)-1 {
			t.Errorf("%s: %d repeats stored; want %d", c.Key, len(rs), len(c.Values)-1)
		}
	}
	if !math.IsNaN(cs[2].PNext) {
		t.Errorf("the last has a next: %v", cs[2].PNext)
	}
}

// Confirm by an energy objective ranks and re-measures by energy (J): the
// first value of each is the run's measured energy, the order is by
// median energy, and each re-measurement's stored repeat carries the
// energy it counted.
func TestConfirmEnergy(t *testing.T) {
	f := newFixture(t)
	f.spec.Objective, f.spec.ObjectiveMaximize = "energy", false
	sum := confirmRun(t, f, 0.01, 4)
	cs := sum.Confirmed
	byKey := map[string]*Evaluation{}
	for _, o := range sum.Evaluations {
		byKey[o.Key] = o
	}
	// The three of least energy, whatever order confirm settles them in.
	var energies []float64
	for _, o := range sum.Evaluations {
		if o.Valid() {
			energies = append(energies, o.Observations["energy"])
		}
	}
	slices.Sort(energies)
	evs, _ := f.db.Evaluations(sum.RunID)
	ids := map[string]int64{}
	for _, e := range evs {
		ids[e.Key] = e.ID
	}
	for i, c := range cs {
		o := byKey[c.Key]
		if c.Values[0] != o.Observations["energy"] || c.Values[0] > energies[2] {
			t.Errorf("%s: first value %v; its measured energy %v, the third least %v", c.Key, c.Values[0], o.Observations["energy"], energies[2])
		}
		if i > 0 && c.Median < cs[i-1].Median {
			t.Errorf("confirmed out of order of median energy: %v", cs)
		}
		rs, _ := f.db.Repeats(ids[c.Key])
		if len(rs) != len(c.Values)-1 {
			t.Fatalf("%s: %d repeats stored; want %d", c.Key, len(rs), len(c.Values)-1)
		}
		for k, r := range rs {
			if r.Observations["energy"] != c.Values[k+1] {
				t.Errorf("%s repeat %d: stored energy %v, counted %v", c.Key, r.Repeat, r.Observations["energy"], c.Values[k+1])
			}
		}
	}
}

// confirmRun tunes the fixture's spec by brute force on a simulated H100
// with noise (−1: none) and confirms the best three for up to rounds
// rounds; it fails the test unless three were confirmed.
func confirmRun(t *testing.T, f *fixture, noise float64, rounds int) *Summary {
	t.Helper()
	sp, err := f.spec.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	d, _ := device.Lookup("h100_sxm")
	g := sim.New(d, sim.Options{Seed: 7, Noise: noise})
	defer g.Close()
	sum, err := Run(context.Background(), Config{Subject: FromSpec(f.spec), Space: sp, Backend: g, DB: f.db,
		Objective: objective.FromSpec(f.spec), Strategy: "brute_force", Seed: 3, CompileWorkers: 2, Confirm: 3, ConfirmRounds: rounds})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Confirmed) != 3 {
		t.Fatalf("%d confirmed; want 3", len(sum.Confirmed))
	}
	return sum
}

// A re-run with Confirm and nothing new to measure continues from the
// stored repeats (it used to panic: the executor was waited on with no
// trial in flight, the GPU never prepared): the same rounds again measure
// nothing and give the same confirmation; more rounds measure only the
// missing ones, numbered after the stored repeats.
func TestConfirmRerun(t *testing.T) {
	f := newFixture(t)
	first := confirmRun(t, f, 0.01, 4)
	again := confirmRun(t, f, 0.01, 4)
	want := map[string][]float64{}
	for _, c := range first.Confirmed {
		want[c.Key] = c.Values
	}
	stored := 0
	for _, c := range again.Confirmed {
		if !slices.Equal(c.Values, want[c.Key]) {
			t.Errorf("%s: re-run values %v; the first run's %v", c.Key, c.Values, want[c.Key])
		}
		stored += len(c.Values)
	}
	if w := fmt.Sprintf("confirm: %d stored measurements of these configurations counted, 0 new", stored); again.ConfirmNote != w {
		t.Errorf("note %q; want %q", again.ConfirmNote, w)
	}
	more := confirmRun(t, f, 0.01, 6)
	total := 0
	for _, c := range more.Confirmed {
		if n := len(want[c.Key]); len(c.Values) < n || !slices.Equal(c.Values[:n], want[c.Key]) || len(c.Values) > 7 {
			t.Errorf("%s: %v after 6 rounds; want the stored %v first, 7 at most", c.Key, c.Values, want[c.Key])
		}
		total += len(c.Values)
	}
	if w := fmt.Sprintf("confirm: %d stored measurements of these configurations counted, %d new", stored, total-stored); more.ConfirmNote != w {
		t.Errorf("note %q; want %q", more.ConfirmNote, w)
	}
}

// Confirm with fewer than two valid configurations says so.
func TestConfirmOne(t *testing.T) {
	sum := simTune(t, newFixture(t), func(c *Config) { c.MaxEvals, c.Confirm = 1, 3 }, nil, sim.Options{Seed: 7})
	if w := "--confirm 3: the run has 1 valid configuration(s) by time; nothing to tell apart, nothing re-measured"; sum.ConfirmNote != w {
		t.Errorf("note %q; want %q", sum.ConfirmNote, w)
	}
}

// A re-run with a stricter repeat policy measures only the missing
// repeats, the stored ones counted: --repeat 3 then --repeat 5 leaves
// each valid configuration with repeats 0..4, the first three as the
// first run measured them, its time the median of all five; a plain run
// then RepeatUntil measures each again from its single measurement
// (repeat 0 as stored). The same policy again measures nothing.
func TestRepeatsStricterRerun(t *testing.T) {
	f := newFixture(t)
	sp, err := f.spec.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	d, _ := device.Lookup("h100_sxm")
	run := func(repeat int, until float64) *Summary {
		g := sim.New(d, sim.Options{Seed: 7, Noise: 0.02})
		defer g.Close()
		sum, err := Run(context.Background(), Config{Subject: FromSpec(f.spec), Space: sp, Backend: g, DB: f.db, MaxEvals: 6,
			Objective: objective.FromSpec(f.spec), Strategy: "brute_force", Seed: 3, CompileWorkers: 2, Repeat: repeat, RepeatUntil: until})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	repeats := func(sum *Summary) map[string][]store.Repeat {
		evs, err := f.db.Evaluations(sum.RunID)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]store.Repeat{}
		for _, e := range evs {
			if e.Status == "valid" {
				rs, _ := f.db.Repeats(e.ID)
				out[e.Key] = rs
				var ts []float64
				for _, r := range rs {
					ts = append(ts, r.Observations["time"])
				}
				// The evaluation is one of its repeats: the median, or
				// where that is a stored one, the new one nearest it.
				if !slices.Contains(ts, e.Observations["time"]) {
					t.Errorf("%s: time %v is none of its repeats %v", e.Key, e.Observations["time"], ts)
				}
				if e.Metrics["repeats"] != float64(len(rs)) {
					t.Errorf("%s: metric repeats %v, %d stored", e.Key, e.Metrics["repeats"], len(rs))
				}
			}
		}
		return out
	}
	first := repeats(run(3, 0))
	second := run(5, 0)
	got := repeats(second)
	if len(got) == 0 || len(got) != len(first) {
		t.Fatalf("%d valid configurations re-measured; %d in the first run", len(got), len(first))
	}
	for k, rs := range got {
		if len(rs) != 5 {
			t.Errorf("%s: %d repeats after --repeat 5; want 5", k, len(rs))
			continue
		}
		for i, r := range rs {
			if r.Repeat != i {
				t.Errorf("%s: repeat %d numbered %d", k, i, r.Repeat)
			}
			if i < 3 && r.Observations["time"] != first[k][i].Observations["time"] {
				t.Errorf("%s: repeat %d re-measured (%v, first %v)", k, i, r.Observations["time"], first[k][i].Observations["time"])
			}
		}
	}
	if again := run(5, 0); again.Evaluated != 0 {
		t.Errorf("the same policy again measured %d configurations", again.Evaluated)
	}

	// A plain run, then RepeatUntil: repeat 0 is the stored measurement.
	f = newFixture(t)
	plain := map[string]float64{}
	for _, o := range run(1, 0).Evaluations {
		if o.Valid() {
			plain[o.Key] = o.Observations["time"]
		}
	}
	for k, rs := range repeats(run(30, 0.001)) {
		if len(rs) < 6 || rs[0].Observations["time"] != plain[k] {
			t.Errorf("%s: %d repeats, the first %v; want 6 or more from the stored %v", k, len(rs), rs[0].Observations["time"], plain[k])
		}
	}
}
