package strategy

import (
	"math"
	"slices"
	"testing"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
	"gonum.org/v1/gonum/mat"
)

// gridData is an 8 × 5 grid over [0, 1]² and f's value at each point,
// standardised.
func gridData(f func(a, b float64) float64) ([][]float64, []float64) {
	var X [][]float64
	var y []float64
	for i := 0; i < 8; i++ {
		for j := 0; j < 5; j++ {
			a, b := float64(i)/7, float64(j)/4
			X = append(X, []float64{a, b})
			y = append(y, f(a, b))
		}
	}
	m, sd := meanSD(y)
	for k := range y {
		y[k] = (y[k] - m) / sd
	}
	return X, y
}

// sinData varies along the first dimension, and a little along both.
func sinData() ([][]float64, []float64) {
	return gridData(func(a, b float64) float64 { return math.Sin(6*a) + 0.05*math.Cos(17*b*a) })
}

// lineSpace is a search space of one parameter x with values 1 to n.
func lineSpace(t *testing.T, n int) *space.Space {
	t.Helper()
	vals := make([]expr.Value, n)
	for i := range vals {
		vals[i] = expr.Int(int64(i + 1))
	}
	sp, err := space.Build([]space.Param{{Name: "x", Values: vals}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// intValues are vs as expression values.
func intValues(vs ...int64) []expr.Value {
	out := make([]expr.Value, len(vs))
	for i, v := range vs {
		out[i] = expr.Int(v)
	}
	return out
}

// TestHyperObjectiveGradient checks the analytic gradient of the
// hyperparameter objective against central differences, at a point
// inside the bounds.
func TestHyperObjectiveGradient(t *testing.T) {
	X, y := sinData()
	f := hyperObjective(X, y)
	theta := []float64{math.Log(0.3), math.Log(0.8), math.Log(0.01)}
	grad := make([]float64, len(theta))
	f(theta, grad)
	for k := range theta {
		const h = 1e-5
		up, down := slices.Clone(theta), slices.Clone(theta)
		up[k] += h
		down[k] -= h
		num := (f(up, nil) - f(down, nil)) / (2 * h)
		if math.Abs(num-grad[k]) > 1e-4*max(1, math.Abs(num)) {
			t.Errorf("∂/∂θ_%d: analytic %.8g, central difference %.8g", k, grad[k], num)
		}
	}
}

// TestRefineHyper: the L-BFGS climb from the isotropic grid fit ends
// higher on the objective and finds the irrelevant dimension (a long
// length scale) without the grid's coordinate passes.
func TestRefineHyper(t *testing.T) {
	X, y := sinData()
	iso, ok := fitHyper(X, y, 0)
	if !ok {
		t.Fatal("no grid fit")
	}
	h := refineHyper(X, y, iso)
	f := hyperObjective(X, y)
	theta := func(h hyperGP) []float64 {
		var out []float64
		for _, l := range h.ls {
			out = append(out, math.Log(l))
		}
		return append(out, math.Log(h.noise))
	}
	if a, b := f(theta(iso), nil), f(theta(h), nil); !(b < a) {
		t.Fatalf("refined objective %v not below the grid's %v", b, a)
	}
	if !(h.ls[1] > 3*h.ls[0]) || h.ls[0] > 0.5 {
		t.Fatalf("refined length scales %v: want the second (irrelevant) dimension over 3× the first, the first under 0.5", h.ls)
	}
	// Too few observations to climb on: the start comes back.
	if got := refineHyper(X[:2], y[:2], iso); !slices.Equal(got.ls, iso.ls) || got.noise != iso.noise {
		t.Fatalf("two observations: %+v, want the start %+v", got, iso)
	}
}

// TestAlignmentAndThreadsFeatures pins the two GPU coordinates of the
// feature map on a small space.
func TestAlignmentAndThreadsFeatures(t *testing.T) {
	sp, err := space.Build([]space.Param{
		{Name: "block_size_x", Values: intValues(16, 32, 48, 64, 96, 128)},
		{Name: "block_size_y", Values: intValues(1, 2, 4)},
		{Name: "tile", Values: intValues(1, 2, 3, 4, 5)},
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fm := newFeatureMap(sp, "log")
	fm.addAlignment()
	fm.addThreads()
	i, _ := sp.IndexOf([]int32{1, 1, 2}) // 32, 2, 3
	j, _ := sp.IndexOf([]int32{2, 0, 4}) // 48, 1, 5
	// Coordinates: the three logs, then the twos of block_size_x (16 and
	// 48 have 4, the rest 5 or more, capped: 32 → 1, 48 → 0) and of tile
	// (1, 3, 5 have none, 2 one, 4 two: 3 → 0, 5 → 0), then the threads:
	// log(32·2 / 16) / log(128·4 / 16) = 2/5, log(48/16)/log 32.
	wantI := []float64{math.Log(2) / math.Log(8), 0.5, math.Log(3) / math.Log(5), 1, 0, 0.4}
	wantJ := []float64{math.Log(3) / math.Log(8), 0, 1, 0, 0, math.Log(3) / math.Log(32)}
	if got := fm.at(i, nil); !approxEqual(got, wantI) {
		t.Fatalf("features of (32, 2, 3): %v, want %v", got, wantI)
	}
	if got := fm.at(j, nil); !approxEqual(got, wantJ) {
		t.Fatalf("features of (48, 1, 5): %v, want %v", got, wantJ)
	}
	// One varying block size: no threads coordinate.
	sp1, _ := space.Build([]space.Param{{Name: "block_size_x", Values: intValues(32, 64)}, {Name: "block_size_y", Values: intValues(1)}}, nil, nil)
	fm1 := newFeatureMap(sp1, "log")
	fm1.addThreads()
	if got := fm1.at(0, nil); len(got) != 1 {
		t.Fatalf("one varying block size: %v, want one coordinate", got)
	}
}

// TestFeasibilityModel: with invalid=feasibility the performance model is
// fitted on the valid configurations only, and the feasibility model
// gives configurations next to failed ones a low probability of being
// valid and those next to valid ones a high one.
func TestFeasibilityModel(t *testing.T) {
	sp := lineSpace(t, 20)
	s, err := newBayesOpt(Options{Space: sp, Seed: 1, Params: map[string]any{"invalid": "feasibility", "threads": false, "alignment": false}})
	if err != nil {
		t.Fatal(err)
	}
	b := s.(*bayesOpt)
	// Values 1-10 fail, 11-20 run, faster towards 20.
	for _, i := range []int{0, 3, 6, 9, 11, 14, 17, 19} {
		b.t.propose(i)
		if i < 10 {
			b.Tell(Evaluation{Index: i, Score: math.Inf(1)})
		} else {
			b.Tell(Evaluation{Index: i, Score: float64(30 - i), Valid: true})
		}
	}
	b.model() // the first fit sets the length scales
	g, _, ok := b.model()
	if !ok || b.feas == nil {
		t.Fatalf("no feasibility model (ok %v)", ok)
	}
	if len(g.X) != 4 || len(b.feas.X) != 8 || b.pValid != 0.5 {
		t.Fatalf("performance model on %d, feasibility on %d observations, valid share %v; want 4, 8, 0.5", len(g.X), len(b.feas.X), b.pValid)
	}
	scratch := make([]float64, 8)
	low, high := b.feasible(b.features(2, nil), scratch), b.feasible(b.features(15, nil), scratch)
	if !(low < 0.2 && high > 0.8) {
		t.Fatalf("P(valid) at x=3: %.3f (want < 0.2), at x=16: %.3f (want > 0.8)", low, high)
	}
}

// TestRankGauss: each value becomes the normal quantile of its mid-rank
// share, (rank − ½)/n; ties share their mean rank.
func TestRankGauss(t *testing.T) {
	for _, c := range []struct{ y, want []float64 }{
		{[]float64{3, 1, 2}, []float64{0.967422, -0.967422, 0}},
		{[]float64{1, 1, 2}, []float64{-0.430727, -0.430727, 0.967422}},
		{[]float64{5}, []float64{0}},
	} {
		y := slices.Clone(c.y)
		rankGauss(y)
		for k := range y {
			if math.Abs(y[k]-c.want[k]) > 1e-6 {
				t.Errorf("rankGauss(%v) = %v, want %v", c.y, y, c.want)
				break
			}
		}
	}
	for budget, want := range map[int]string{0: "log", 25: "rank", 50: "rank", 51: "log", 400: "log"} {
		if got := defaultTarget(budget); got != want {
			t.Errorf("defaultTarget(%d) = %s, want %s", budget, got, want)
		}
	}
}

// TestKrigingBeliever: told the model's own mean at the outstanding
// configurations, the model keeps its mean everywhere and is surer there;
// the lies never fit the hyperparameters.
func TestKrigingBeliever(t *testing.T) {
	sp := lineSpace(t, 40)
	s, err := newBayesOpt(Options{Space: sp, Seed: 1, Batch: 3, Params: map[string]any{"threads": false, "alignment": false, "target": "log"}})
	if err != nil {
		t.Fatal(err)
	}
	b := s.(*bayesOpt)
	for _, i := range []int{0, 7, 15, 22, 30, 39} {
		b.t.propose(i)
		b.Tell(Evaluation{Index: i, Score: 1 + math.Pow(float64(i-18)/10, 2), Valid: true})
	}
	g0, _, ok := b.model()
	if !ok {
		t.Fatal("no model of 6 measurements")
	}
	hyp := b.hyp
	b.outstanding, b.lying = []int{11, 26}, true
	g, _, ok := b.model()
	b.lying = false
	if !ok || len(g.X) != 8 {
		t.Fatalf("the believer's model has %d observations (ok %v), want 6 measured and 2 outstanding", len(g.X), ok)
	}
	if !slices.Equal(b.hyp.ls, hyp.ls) || b.hyp.noise != hyp.noise {
		t.Errorf("hyperparameters changed with lies: %+v, was %+v", b.hyp, hyp)
	}
	scratch := make([]float64, 8)
	for i := range 40 {
		x := b.features(i, nil)
		m0, sd0 := g0.predict(x, scratch)
		m, sd := g.predict(x, scratch)
		if math.Abs(m-m0) > 1e-6 {
			t.Errorf("x=%d: mean %.9f with the believer's lies, %.9f without", i+1, m, m0)
		}
		if (i == 11 || i == 26) && !(sd < sd0/2) {
			t.Errorf("x=%d (outstanding): sd %.4f with its lie, %.4f without; want less than half", i+1, sd, sd0)
		}
	}
}

// TestBelieve: a GP grown by believe predicts what a fit on the same
// points, told its mean there, does.
func TestBelieve(t *testing.T) {
	X, y := sinData()
	inv := []float64{2, 1}
	g, ok := fitGP(X[:6], y[:6], inv, 0.01)
	if !ok {
		t.Fatal("no fit")
	}
	P := X[6:9]
	scratch := make([]float64, 9)
	yb := slices.Clone(y[:6])
	for _, p := range P {
		mu, _ := g.predict(p, scratch)
		yb = append(yb, mu)
	}
	full, ok := fitGP(X[:9], yb, inv, 0.01)
	if !ok {
		t.Fatal("no fit with the lies")
	}
	b := g.believe(P)
	for _, x := range X {
		m1, s1 := b.predict(x, scratch)
		m2, s2 := full.predict(x, scratch)
		if math.Abs(m1-m2) > 1e-9 || math.Abs(s1-s2) > 1e-9 {
			t.Errorf("x=%v: believe gives %.12f ± %.12f, a refit %.12f ± %.12f", x, m1, s1, m2, s2)
		}
		// meanK alone is predict's mean (localPick ranks by it), and
		// no deviation exceeds maxSD (maximiseAcquisition's bound).
		if s1 > b.maxSD() {
			t.Errorf("x=%v: sd %.15f over maxSD %.15f", x, s1, b.maxSD())
		}
		if m := b.meanK(x, scratch); m != m1 {
			t.Errorf("x=%v: mean %.15f, predict's %.15f", x, m, m1)
		}
	}
}

// TestSDRows: sdK, which reads the factor's transpose by rows (gp.lt),
// gives bit for bit the deviation of the forward substitution down U's
// columns it replaced (the same sums in the same order, so replays do not
// change), on a fitted GP and on one grown by believe, and the posterior
// variance k(x,x) + noise − kᵀK⁻¹k of a direct solve.
func TestSDRows(t *testing.T) {
	X, y := sinData()
	inv := []float64{2, 1}
	g, ok := fitGP(X[:6], y[:6], inv, 0.01)
	if !ok {
		t.Fatal("no fit")
	}
	// columns is the substitution as it was, down U's columns.
	columns := func(g *gp, k []float64) float64 {
		u, st := g.u.Data, g.u.Stride
		ss := 0.0
		for i := range len(g.X) {
			s := k[i]
			for j := 0; j < i; j++ {
				s -= u[j*st+i] * k[j]
			}
			s /= u[i*st+i]
			k[i] = s
			ss += s * s
		}
		return math.Sqrt(max(1+g.noise-ss, 1e-12))
	}
	for _, m := range []*gp{g, g.believe(X[6:9])} {
		n := len(m.X)
		K := mat.NewSymDense(n, nil)
		for i := range n {
			for j := i; j < n; j++ {
				v := matern52r(math.Sqrt(scaledDist2(m.X[i], m.X[j], inv)))
				if i == j {
					v += m.noise
				}
				K.SetSym(i, j, v)
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(K) {
			t.Fatal("kernel matrix not positive definite")
		}
		for _, x := range X {
			k1, k2 := make([]float64, n), make([]float64, n)
			m.meanK(x, k1)
			copy(k2, k1)
			kv := mat.NewVecDense(n, slices.Clone(k1))
			var w mat.VecDense
			if err := ch.SolveVecTo(&w, kv); err != nil {
				t.Fatal(err)
			}
			direct := math.Sqrt(1 + m.noise - mat.Dot(kv, &w))
			got, want := m.sdK(k1), columns(m, k2)
			if got != want {
				t.Errorf("n=%d x=%v: sd %.17g by rows, %.17g down the columns", n, x, got, want)
			}
			if math.Abs(got-direct) > 1e-9 {
				t.Errorf("n=%d x=%v: sd %.12f, direct solve %.12f", n, x, got, direct)
			}
		}
	}
}
