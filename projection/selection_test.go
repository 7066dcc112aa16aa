package projection

import (
	"bytes"
	"math"
	"testing"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/model"
)

// Seed 003's device selection on hand-made times: two GPUs, four
// configurations, one measured on the first GPU only.
func TestSelect(t *testing.T) {
	a, _ := device.Lookup("h100_sxm")
	b, _ := device.Lookup("h200")
	cfg := func(key string, pa, pb float64) Configuration {
		ps := []model.Projection{{Device: a.ID, TimeMs: pa}, {Device: b.ID, TimeMs: pb}}
		model.Rank(ps)
		return Configuration{Key: key, Projections: ps}
	}
	out := []Configuration{cfg("1", 1, 2), cfg("2", 2, 1), cfg("3", 3, 3.3), cfg("4", 0.5, 4)}
	measured := []Measured{
		{Device: a, Times: map[string]float64{"1": 1, "2": 1, "3": 3, "4": 5}},
		{Device: b, Times: map[string]float64{"1": 1.5, "2": 2, "3": 3}},
	}
	r, ok := Select(out, measured)
	if !ok || len(r.GPUs) != 2 || len(r.Configurations) != 3 {
		t.Fatalf("ok %v, GPUs %v, %d configurations", ok, r.GPUs, len(r.Configurations))
	}
	// "1": both pick a; "2": projected b, measured a twice as fast (100 %);
	// "3": a tie measured goes to the first GPU, as projected.
	want := []Selection{{"1", "h100_sxm", "h100_sxm", 0}, {"2", "h200", "h100_sxm", 100}, {"3", "h100_sxm", "h100_sxm", 0}}
	for i, w := range want {
		if r.Configurations[i] != w {
			t.Errorf("configuration %d: %+v, want %+v", i, r.Configurations[i], w)
		}
	}
	// Ratio errors 25, 300 and 9.1 %: median 25.
	if r.Right != 2 || r.MedianPenaltyPct != 0 || r.P90PenaltyPct != 100 || math.Abs(r.MedianRatioErrorPct-25) > 1e-9 {
		t.Errorf("right %d, penalty median %v p90 %v, ratio error median %v", r.Right, r.MedianPenaltyPct, r.P90PenaltyPct, r.MedianRatioErrorPct)
	}
	// a's projected best is "4" (0.5 ms), measured its slowest: rank 4 of
	// 4, 400 % over its best; b's is "2", rank 2 of 3. At their own
	// bests a is chosen and best (1 ms measured), but its projected best
	// measured 5 ms: 400 %.
	wantOwn := []OwnBest{{"h100_sxm", "4", 4, 4, 400}, {"h200", "2", 2, 3, 100 * (2/1.5 - 1)}}
	for i, w := range wantOwn {
		if o := r.Own[i]; o.GPU != w.GPU || o.Key != w.Key || o.Rank != w.Rank || o.Of != w.Of || math.Abs(o.SlowerPct-w.SlowerPct) > 1e-9 {
			t.Errorf("own best %d: %+v, want %+v", i, o, w)
		}
	}
	if r.Kernel != (Selection{Chosen: "h100_sxm", Best: "h100_sxm", PenaltyPct: 400}) {
		t.Errorf("kernel: %+v", r.Kernel)
	}
	var buf bytes.Buffer
	WriteSelection(&buf, "k", &r)
	wantText := `k: device selection against measured times (seed 003, section V), h100_sxm, h200, 3 configurations measured on each
  right GPU: 2 of 3 (66.7 %); penalty median 0.0 %, 90th percentile 100.0 %; time ratio error median 25.0 %
  h100_sxm: projected best 4, measured rank 4 of 4 (400.0 % slower than its best)
  h200: projected best 2, measured rank 2 of 3 (33.3 % slower than its best)
  each GPU at its projected best: chosen h100_sxm, best h100_sxm, penalty 400.0 %
`
	if buf.String() != wantText {
		t.Errorf("printed:\n%s\nwant:\n%s", buf.String(), wantText)
	}
	if _, ok := Select(out, measured[:1]); ok {
		t.Error("a selection with one GPU measured")
	}
}
