package strategy

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// multiCase is two kernels a and b, each with one parameter x ∈ {1, 2, 3}
// (thread blocks of 256 threads, 32 registers: every x at 100 %
// occupancy, ordered by fewest blocks first: 100·(4−x) blocks, so D =
// [x=3, x=2, x=1]), combined as a.x, b.x (and nvml_gr_clock when clocks
// are given). Each kernel's own value is v[x] and the plan's value the
// sum of both plus the clock's.
type multiCase struct {
	sp    *space.Space
	o     Options
	va    map[int64]float64
	vb    map[int64]float64
	clock map[int64]float64
}

func newMultiCase(t *testing.T, clocks []int) *multiCase {
	t.Helper()
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	xs := []expr.Value{expr.Int(1), expr.Int(2), expr.Int(3)}
	own, err := space.Build([]space.Param{{Name: "x", Values: xs}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps := []space.Param{{Name: "a.x", Values: xs}, {Name: "b.x", Values: xs}}
	ps = withClocks(ps, clocks)
	sp, err := space.Build(ps, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	target := &Target{Device: d, Geometry: func(i int) (int, int, error) {
		x, _ := own.Values(i)[0].Int()
		return 256, int(100 * (4 - x)), nil
	}}
	res := func(int) (int, int, error) { return 32, 0, nil }
	return &multiCase{
		sp: sp,
		o: Options{Space: sp, Kernels: []Part{
			{Name: "a", Space: own, First: 0, Target: target, Resources: res},
			{Name: "b", Space: own, First: 1, Target: target, Resources: res},
		}},
		va: map[int64]float64{3: 5, 2: 3, 1: 4},
		vb: map[int64]float64{3: 2, 2: 1.5, 1: 1.8},
	}
}

// run drives the strategy to its end, telling it the plan's value as
// observation name (and each kernel's own value as its time); it returns
// the configurations measured, as "a,b[,clock]" keys, and the choice.
func (c *multiCase) run(t *testing.T, s Strategy, name string) ([]string, string) {
	t.Helper()
	var seen []string
	for range 100 {
		ids := s.Next(1)
		if len(ids) == 0 {
			break
		}
		v := c.sp.Values(ids[0])
		a, _ := v[0].Int()
		b, _ := v[1].Int()
		total := c.va[a] + c.vb[b]
		if len(v) > 2 {
			f, _ := v[2].Int()
			total += c.clock[f]
		}
		seen = append(seen, c.sp.Key(ids[0]))
		s.Tell(Evaluation{Index: ids[0], Valid: true, Score: total, Observations: map[string]float64{name: total},
			KernelTimes: []float64{c.va[a], c.vb[b]}})
	}
	i, ok := s.(Chooser).Choice()
	if !ok {
		t.Fatal("no choice")
	}
	return seen, c.sp.Key(i)
}

// Algorithm 3 on the worked case: start at D[0] = (3,3) (plan 7, a the
// slower kernel), a's walk 3→2 (5)→1 (6, a rise: keep 2); b's walk with
// a=2: 3 (5)→2 (4.5)→1 (4.8: keep 2); b changed, so restart from a: with
// b=2, a=3 (6.5) → a=2 (4.5, measured) → a=1 (5.5: keep 2); b's walk is
// all measured. Seven evaluations, choice (2,2).
func TestMultiAlgorithm3(t *testing.T) {
	c := newMultiCase(t, nil)
	s, err := New("multi_occupancy_greedy", c.o)
	if err != nil {
		t.Fatal(err)
	}
	seen, choice := c.run(t, s, "time")
	want := []string{"3,3", "2,3", "1,3", "2,2", "2,1", "3,2", "1,2"}
	if fmt.Sprint(seen) != fmt.Sprint(want) || choice != "2,2" {
		t.Errorf("measured %v, chose %s; want %v, 2,2", seen, choice, want)
	}
}

// Algorithm 4 on the worked case with two clocks (energy +2 at 1980 MHz,
// +1 at 1410): (3,3) at 1980 (9) then 1410 (8): no rise, the clock walk
// ends at f_min = 1410 (step 10); a's walk at 1410: 2 (6), 1 (7: keep
// 2); b's: 2 (5.5), 1 (5.8: keep 2); b changed: back to step 4, whose
// clock walk is spent (f = f_min); a's walk with b=2 measures a=3 (7.5)
// and a=1 (6.5): no change, the procedure returns (2,2) at 1410 MHz
// after eight evaluations.
func TestMultiAlgorithm4(t *testing.T) {
	c := newMultiCase(t, []int{1980, 1410})
	c.clock = map[int64]float64{1980: 2, 1410: 1}
	s, err := New("multi_occupancy_greedy_energy", c.o)
	if err != nil {
		t.Fatal(err)
	}
	seen, choice := c.run(t, s, "energy")
	want := []string{"3,3,1980", "3,3,1410", "2,3,1410", "1,3,1410", "2,2,1410", "2,1,1410", "3,2,1410", "1,2,1410"}
	if fmt.Sprint(seen) != fmt.Sprint(want) || choice != "2,2,1410" {
		t.Errorf("measured %v, chose %s; want %v, 2,2,1410", seen, choice, want)
	}
}

// The multi-kernel strategies refuse a single spec (no kernels).
func TestMultiNeedsKernels(t *testing.T) {
	c := newMultiCase(t, nil)
	if _, err := New("multi_occupancy_greedy", Options{Space: c.sp}); err == nil {
		t.Error("multi_occupancy_greedy without kernels: no error")
	}
}

// multi_alone_greedy on the worked case, with a measured alone at x=1
// (2.0 ms) and x=2 (1.0 ms) only, b at every x (0.5, 0.7, 0.9 ms): D_a =
// [2, 1], D_b = [1, 2, 3]. Start (2,1) (plan 4.8, a the slower); a's walk
// 2→1 (5.8, a rise: keep 2); b's walk with a=2: 1→2 (4.5)→3 (5: keep
// 2); b changed: restart, a's walk with b=2 measures (1,2) (5.5: keep
// 2), b's walk is all measured. Five evaluations, choice (2,2); a=3,
// never measured alone, is never proposed. A kernel never measured alone
// is refused with the command that fixes it.
func TestMultiAloneGreedy(t *testing.T) {
	c := newMultiCase(t, nil)
	nan := math.NaN()
	c.o.Kernels[0].AloneTimes = []float64{2.0, 1.0, nan}
	c.o.Kernels[1].AloneTimes = []float64{0.5, 0.7, 0.9}
	s, err := New("multi_alone_greedy", c.o)
	if err != nil {
		t.Fatal(err)
	}
	seen, choice := c.run(t, s, "time")
	want := []string{"2,1", "1,1", "2,2", "2,3", "1,2"}
	if fmt.Sprint(seen) != fmt.Sprint(want) || choice != "2,2" {
		t.Errorf("measured %v, chose %s; want %v, 2,2", seen, choice, want)
	}
	c.o.Kernels[1].AloneTimes = []float64{nan, nan, nan}
	if _, err := New("multi_alone_greedy", c.o); err == nil || !strings.Contains(err.Error(), "kernel b has no configuration") || !strings.Contains(err.Error(), "gtune tune SPEC") {
		t.Errorf("kernel never measured alone: %v", err)
	}
}
