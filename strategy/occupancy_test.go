package strategy

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// occSpace is one tunable parameter block_size_x (threads per block) with
// the given values, plus nvml_gr_clock when clocks is not empty.
func occSpace(t *testing.T, blocks []int, clocks []int) *space.Space {
	t.Helper()
	ps := []space.Param{{Name: "block_size_x"}}
	for _, b := range blocks {
		ps[0].Values = append(ps[0].Values, expr.Int(int64(b)))
	}
	ps = withClocks(ps, clocks)
	sp, err := space.Build(ps, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

const occN = 1 << 20 // threads in the grid: blocks = ⌈occN / block size⌉

// occOptions gives the strategy a device, the geometry of occSpace and
// resources: 32 registers per thread, except 40 for blocks of 512
// threads, and 12 KiB of shared memory for blocks of 256 threads.
func occOptions(t *testing.T, sp *space.Space, id string) Options {
	t.Helper()
	d, err := device.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	block := func(i int) int { n, _ := sp.Values(i)[0].Int(); return int(n) }
	return Options{
		Space: sp,
		Target: &Target{Device: d, Geometry: func(i int) (int, int, error) {
			b := block(i)
			return b, (occN + b - 1) / b, nil
		}},
		Resources: func(i int) (int, int, error) {
			switch block(i) {
			case 512:
				return 40, 0, nil
			case 256:
				return 32, 12 << 10, nil
			}
			return 32, 0, nil
		},
	}
}

var occBlocks = []int{32, 64, 128, 256, 512, 896, 1024}

// The reduction keeps the configurations of occupancy ≥ 0.8 and orders
// them by occupancy, then by thread blocks in the grid (fewest first).
// Occupancies by hand (equations 2–5 with CUDA's allocation rules):
//
//	K20c (16 blocks, 64 warps, 64 Ki registers, 48 KiB per SM):
//	  32: 16 blocks × 1 warp = 16 warps → 0.25;  64: 16 × 2 = 32 → 0.5
//	  128: 16 × 4 = 64 → 1;  256 (12 KiB): ⌊48/12⌋ = 4 × 8 = 32 → 0.5
//	  512 (40 regs: 1280 per warp, ⌊16384/1280⌋ = 12 warps per
//	  sub-partition × 4 = 48 warps): 3 × 16 = 48 → 0.75
//	  896: 28 warps, ⌊64/28⌋ = 2 → 56 → 0.875;  1024: 2 × 32 = 64 → 1
//	H100 (32 blocks, 64 warps, 228 KiB + 1 KiB reserved per block):
//	  32: 32 × 1 = 32 → 0.5;  64: 32 × 2 = 64 → 1;  128: 16 × 4 → 1
//	  256: 13 KiB per block, 17 by shared memory, 8 by warps → 1
//	  512: 0.75 as on the K20c;  896: 0.875;  1024: 1
func TestReduceKeepsHighOccupancyInOrder(t *testing.T) {
	sp := occSpace(t, occBlocks, nil)
	cases := []struct {
		id    string
		want  []int // block sizes in visiting order
		occ   []float64
		limit []int // ActiveBlocksPerSM
	}{
		{"k20c", []int{1024, 128, 896}, []float64{1, 1, 0.875}, []int{2, 16, 2}},
		{"h100_sxm", []int{1024, 256, 128, 64, 896}, []float64{1, 1, 1, 1, 0.875}, []int{2, 8, 16, 32, 2}},
	}
	for _, c := range cases {
		o := occOptions(t, sp, c.id)
		got, err := Reduce(o, o.Target, o.Resources, DefaultMinOccupancy)
		if err != nil {
			t.Fatal(err)
		}
		var blocks []int
		for i, cd := range got {
			blocks = append(blocks, cd.ThreadsPerBlock)
			if cd.Occupancy != c.occ[i] || cd.ActiveBlocksPerSM != c.limit[i] || cd.Blocks != (occN+cd.ThreadsPerBlock-1)/cd.ThreadsPerBlock ||
				occBlocks[cd.Index] != cd.ThreadsPerBlock {
				t.Errorf("%s: candidate %d = %+v, want occupancy %v, %d blocks per SM", c.id, i, cd, c.occ[i], c.limit[i])
			}
		}
		if !slices.Equal(blocks, c.want) {
			t.Errorf("%s: reduced space %v, want %v", c.id, blocks, c.want)
		}
	}
	// A lower threshold lets the 0.75 and 0.5 configurations in, after the others.
	o := occOptions(t, sp, "k20c")
	got, err := Reduce(o, o.Target, o.Resources, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []int
	for _, cd := range got {
		blocks = append(blocks, cd.ThreadsPerBlock)
	}
	if want := []int{1024, 128, 896, 512, 256, 64}; !slices.Equal(blocks, want) {
		t.Errorf("min 0.5: %v, want %v", blocks, want)
	}
}

func TestOccupancyStrategyErrors(t *testing.T) {
	sp := occSpace(t, occBlocks, nil)
	o := occOptions(t, sp, "k20c")
	for _, c := range []struct {
		change func(*Options)
		name   string
		want   string
	}{
		{func(o *Options) { o.Resources = nil }, "occupancy_greedy", "needs each configuration's registers and shared memory"},
		{func(o *Options) { o.Target = nil }, "occupancy_greedy", "needs the GPU's description"},
		{func(o *Options) { o.Target = &Target{Device: o.Target.Device} }, "occupancy_greedy", "each configuration's launch geometry"},
		{func(o *Options) { o.Params = map[string]any{"min_occupancy": 1.5} }, "occupancy_greedy", "(0, 1]"},
		{func(o *Options) { o.Params = map[string]any{"threshold": 0.5} }, "occupancy_greedy", "valid: min_occupancy"},
		{func(o *Options) {
			o.Resources = func(int) (int, int, error) { return 255, 0, nil }
		}, "occupancy_greedy", "the highest is 0.125)"},
		{func(o *Options) {}, "occupancy_greedy_energy", "needs a tunable parameter nvml_gr_clock"},
	} {
		oc := o
		c.change(&oc)
		_, err := New(c.name, oc)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// drive runs s to the end, answering each proposal with the observation
// obs of value(index), and returns the proposals in order.
func drive(t *testing.T, s Strategy, obs string, value func(int) float64) []int {
	t.Helper()
	var asked []int
	for len(asked) < 1000 {
		ids := s.Next(4)
		if len(ids) == 0 {
			return asked
		}
		if len(ids) != 1 {
			t.Fatalf("proposed %v at once; the procedures measure one at a time", ids)
		}
		if again := s.Next(4); len(again) != 0 {
			t.Fatalf("proposed %v while %v is outstanding", again, ids)
		}
		asked = append(asked, ids[0])
		v := value(ids[0])
		s.Tell(Evaluation{Index: ids[0], Score: v, Valid: !math.IsInf(v, 1), Observations: map[string]float64{obs: v}})
	}
	t.Fatal("the procedure does not stop")
	return nil
}

// Algorithm 1 walks the reduced space in order while the time falls and
// returns the configuration before the first rise (step 9), or the last
// one (step 12).
func TestAlgorithm1VisitsInOrderAndStops(t *testing.T) {
	sp := occSpace(t, occBlocks, nil)
	idx := func(block int) int { return slices.Index(occBlocks, block) }
	for _, c := range []struct {
		name   string
		times  map[int]float64 // by block size
		visits []int
		choice int
	}{
		{"rise at the third", map[int]float64{1024: 3, 128: 2, 896: 2.5}, []int{1024, 128, 896}, 128},
		{"rise at the second", map[int]float64{1024: 2, 128: 3, 896: 1}, []int{1024, 128}, 1024},
		{"never rises", map[int]float64{1024: 3, 128: 2, 896: 1}, []int{1024, 128, 896}, 896},
		{"equal times go on", map[int]float64{1024: 2, 128: 2, 896: 2}, []int{1024, 128, 896}, 896},
		{"invalid first", map[int]float64{1024: math.Inf(1), 128: 2, 896: 3}, []int{1024, 128, 896}, 128},
	} {
		o := occOptions(t, sp, "k20c")
		s, err := New("occupancy_greedy", o)
		if err != nil {
			t.Fatal(err)
		}
		asked := drive(t, s, "time", func(i int) float64 { return c.times[occBlocks[i]] })
		var got []int
		for _, i := range asked {
			got = append(got, occBlocks[i])
		}
		ch, ok := s.(Chooser).Choice()
		if !slices.Equal(got, c.visits) || !ok || ch != idx(c.choice) {
			t.Errorf("%s: visited %v, chose %d (%v); want %v, %d", c.name, got, occBlocks[ch], ok, c.visits, c.choice)
		}
	}
	// One configuration in the reduced space: measured once, returned.
	o := occOptions(t, sp, "k20c")
	o.Params = map[string]any{"min_occupancy": 1}
	o.Resources = func(i int) (int, int, error) {
		if occBlocks[i] == 1024 {
			return 32, 0, nil
		}
		return 64, 0, nil
	}
	s, err := New("occupancy_greedy", o)
	if err != nil {
		t.Fatal(err)
	}
	if asked := drive(t, s, "time", func(int) float64 { return 1 }); !slices.Equal(asked, []int{idx(1024)}) {
		t.Errorf("single candidate: asked %v", asked)
	}
}

// Algorithm 2 on three distributions (K20c, 100 % occupancy: 1024, 512,
// 256 threads per block, in that order) and the K20c's five clocks. The
// frequency scan of 1024 stops at 666 MHz (640 costs more); the walk at
// 666 MHz rises at 256, so d becomes 512 ≠ 1024 and the procedure returns
// to step 4, scanning 512 on from 640 MHz: 614 costs more, f = 640; the
// walk at 640 MHz rises at 256 again with d = 512: return 512 @ 640 MHz.
func TestAlgorithm2RestartsTheClockScan(t *testing.T) {
	blocks := []int{256, 512, 1024}
	clocks := []int{614, 640, 666, 705, 758} // ascending: the strategy sorts
	sp := occSpace(t, blocks, clocks)
	o := occOptions(t, sp, "k20c")
	o.Resources = func(int) (int, int, error) { return 32, 0, nil }
	o.Target.Geometry = func(i int) (int, int, error) {
		b, _ := sp.Values(i)[0].Int()
		return int(b), occN / int(b), nil
	}
	energy := map[[2]int]float64{
		{1024, 758}: 10, {1024, 705}: 9, {1024, 666}: 8.5, {1024, 640}: 9, {1024, 614}: 9.5,
		{512, 758}: 9.8, {512, 705}: 8.8, {512, 666}: 8, {512, 640}: 7.5, {512, 614}: 7.6,
		{256, 758}: 9.9, {256, 705}: 8.9, {256, 666}: 8.2, {256, 640}: 7.8, {256, 614}: 7.7,
	}
	key := func(i int) [2]int {
		v := sp.Values(i)
		b, _ := v[0].Int()
		c, _ := v[1].Int()
		return [2]int{int(b), int(c)}
	}
	s, err := New("occupancy_greedy_energy", o)
	if err != nil {
		t.Fatal(err)
	}
	asked := drive(t, s, "energy", func(i int) float64 { return energy[key(i)] })
	var got [][2]int
	for _, i := range asked {
		got = append(got, key(i))
	}
	want := [][2]int{{1024, 758}, {1024, 705}, {1024, 666}, {1024, 640}, {512, 666}, {256, 666}, {512, 640}, {512, 614}, {256, 640}}
	if !slices.Equal(got, want) {
		t.Errorf("visited %v\nwant    %v", got, want)
	}
	ch, ok := s.(Chooser).Choice()
	if !ok || key(ch) != [2]int{512, 640} {
		t.Errorf("chose %v (%v), want 512 @ 640 MHz", key(ch), ok)
	}
	// Energy falling all the way down: f = f_min (step 10), and at f_min a
	// rise ends the procedure at once (step 17).
	for k := range energy {
		energy[k] = float64(k[1]) / 100
	}
	energy[[2]int{512, 614}] = 5
	energy[[2]int{256, 614}] = 6
	s, err = New("occupancy_greedy_energy", o)
	if err != nil {
		t.Fatal(err)
	}
	asked = drive(t, s, "energy", func(i int) float64 { return energy[key(i)] })
	got = got[:0]
	for _, i := range asked {
		got = append(got, key(i))
	}
	want = [][2]int{{1024, 758}, {1024, 705}, {1024, 666}, {1024, 640}, {1024, 614}, {512, 614}, {256, 614}}
	if ch, _ := s.(Chooser).Choice(); !slices.Equal(got, want) || key(ch) != [2]int{512, 614} {
		t.Errorf("visited %v, chose %v; want %v, 512 @ 614", got, key(ch), want)
	}
}

func TestClockParamIsTheBackendName(t *testing.T) {
	if ClockParam != backend.ParamCoreClock {
		t.Fatalf("strategy.ClockParam %q, backend.ParamCoreClock %q", ClockParam, backend.ParamCoreClock)
	}
}

// withClocks adds the SM-clock parameter with clocks (MHz) to ps, when
// there are any.
func withClocks(ps []space.Param, clocks []int) []space.Param {
	if len(clocks) == 0 {
		return ps
	}
	p := space.Param{Name: ClockParam}
	for _, c := range clocks {
		p.Values = append(p.Values, expr.Int(int64(c)))
	}
	return append(ps, p)
}

// The relative filter (occupancy_filter relative) keeps a distribution
// whose occupancy is at least min_occupancy times the highest its
// thread-block size reaches: on an H100, 32-thread blocks reach 0.5 at
// most (32 blocks of one warp), so the absolute 0.8 drops them, and the
// relative one keeps them at 32 registers a thread (0.5) and drops them
// at 128 (16 blocks: 0.25), as it drops 256-thread blocks at 128
// registers (2 blocks: 0.25 of their 1.0).
func TestRelativeOccupancyFilter(t *testing.T) {
	ps := []space.Param{{Name: "block_size_x", Values: []expr.Value{expr.Int(32), expr.Int(256)}}, {Name: "regs", Values: []expr.Value{expr.Int(32), expr.Int(128)}}}
	sp, err := space.Build(ps, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	get := func(i, p int) int { n, _ := sp.Values(i)[p].Int(); return int(n) }
	o := Options{Space: sp,
		Target:    &Target{Device: d, Geometry: func(i int) (int, int, error) { return get(i, 0), occN / get(i, 0), nil }},
		Resources: func(i int) (int, int, error) { return get(i, 1), 0, nil }}
	keys := func(cs []Candidate) []string {
		var k []string
		for _, c := range cs {
			k = append(k, sp.Key(c.Index))
		}
		return k
	}
	abs, err := Reduce(o, o.Target, o.Resources, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := ReduceRelative(o, o.Target, o.Resources, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(abs); !slices.Equal(got, []string{"256,32"}) {
		t.Errorf("absolute: %v, want [256,32]", got)
	}
	if got := keys(rel); !slices.Equal(got, []string{"256,32", "32,32"}) {
		t.Errorf("relative: %v, want [256,32 32,32]", got)
	}
	o.Params = map[string]any{"occupancy_filter": "relative"}
	if _, err := New("occupancy_greedy", o); err != nil {
		t.Errorf("occupancy_filter relative: %v", err)
	}
	o.Params = map[string]any{"occupancy_filter": "loose"}
	if _, err := New("occupancy_greedy", o); err == nil || !strings.Contains(err.Error(), "absolute or relative") {
		t.Errorf("occupancy_filter loose: %v", err)
	}
}
