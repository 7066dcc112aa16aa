package strategy

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/gtune/gtune/space"
)

// The Gaussian-process surrogate of bayes_opt and transfer: a zero-mean GP
// on standardised targets with a Matérn 5/2 kernel (Rasmussen & Williams,
// "Gaussian Processes for Machine Learning", 2006, eq. 4.17) of unit
// signal variance, one length scale per input dimension (automatic
// relevance determination, R&W Sec. 5.1) and a noise variance, both chosen
// by maximising the log marginal likelihood (R&W eq. 2.30) plus a weak
// log-normal prior on each length scale over a small grid: first one
// length scale for every dimension with each noise level, then
// coordinate-wise passes over the dimensions. A grid rather than
// gradients: the likelihood of rough, discrete GPU landscapes is
// multi-modal in the length scales, and the grid is deterministic.

// lengthScales are the grid of length scales, in units of the features
// (normalised to [0, 1]); the largest effectively switches a dimension off.
var lengthScales = []float64{0.05, 0.1, 0.15, 0.2, 0.3, 0.45, 0.7, 1.0, 1.5, 3, 20}

// noiseLevels are the grid of noise variances (standardised units).
var noiseLevels = []float64{1e-4, 1e-2, 0.1}

// lsPrior is the log-density (up to a constant) of the length-scale
// prior: log ℓ ~ N(log 0.5, 1.5²), which keeps the fit away from the grid's
// ends when there are few observations.
func lsPrior(ls float64) float64 {
	z := (math.Log(ls) - math.Log(0.5)) / 1.5
	return -0.5 * z * z
}

func matern52r(r float64) float64 {
	s5 := math.Sqrt(5) * r
	return (1 + s5 + 5*r*r/3) * math.Exp(-s5)
}

// gp is a fitted Gaussian process.
type gp struct {
	X     [][]float64
	inv   []float64 // 1/length scale per dimension
	noise float64
	alpha []float64
	u     blas64.Triangular // K = UᵀU
	lml   float64
}

// scaledDist2 is Σ_p ((a_p − b_p)·inv_p)².
func scaledDist2(a, b, inv []float64) float64 {
	d := 0.0
	for k, v := range a {
		e := (v - b[k]) * inv[k]
		d += e * e
	}
	return d
}

// fitGP factorises the kernel matrix of X with the given inverse length
// scales and noise; false when it is not positive definite.
func fitGP(X [][]float64, y []float64, inv []float64, noise float64) (*gp, bool) {
	m := len(X)
	K := mat.NewSymDense(m, nil)
	for i := 0; i < m; i++ {
		for j := i; j < m; j++ {
			v := matern52r(math.Sqrt(scaledDist2(X[i], X[j], inv)))
			if i == j {
				v += noise
			}
			K.SetSym(i, j, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(K) {
		return nil, false
	}
	a := mat.NewVecDense(m, nil)
	if err := ch.SolveVecTo(a, mat.NewVecDense(m, y)); err != nil {
		return nil, false
	}
	g := &gp{X: X, alpha: a.RawVector().Data, inv: slices.Clone(inv), noise: noise}
	g.u = ch.RawU().(mat.RawTriangular).RawTriangular()
	quad := 0.0
	for i, v := range y {
		quad += v * g.alpha[i]
	}
	g.lml = -0.5*quad - 0.5*ch.LogDet() - 0.5*float64(m)*math.Log(2*math.Pi)
	return g, true
}

// hyperGP are fitted kernel hyperparameters.
type hyperGP struct {
	ls    []float64 // length scale per dimension
	noise float64
}

func (h hyperGP) inv() []float64 {
	v := make([]float64, len(h.ls))
	for k, l := range h.ls {
		v[k] = 1 / l
	}
	return v
}

// fitHyper chooses the hyperparameters by maximum a posteriori over the
// grids: isotropic first, then ard coordinate passes (0: isotropic only).
func fitHyper(X [][]float64, y []float64, ardPasses int) (hyperGP, bool) {
	d := 0
	if len(X) > 0 {
		d = len(X[0])
	}
	best, bestV, found := hyperGP{}, math.Inf(-1), false
	try := func(ls []float64, noise float64) {
		h := hyperGP{ls: ls, noise: noise}
		g, ok := fitGP(X, y, h.inv(), noise)
		if !ok {
			return
		}
		v := g.lml
		for _, l := range ls {
			v += lsPrior(l)
		}
		if v > bestV {
			best, bestV, found = hyperGP{ls: slices.Clone(ls), noise: noise}, v, true
		}
	}
	ls := make([]float64, d)
	for _, l := range lengthScales[:len(lengthScales)-2] {
		for k := range ls {
			ls[k] = l
		}
		for _, nz := range noiseLevels {
			try(ls, nz)
		}
	}
	if !found {
		return best, false
	}
	for pass := 0; pass < ardPasses && d > 1; pass++ {
		for k := 0; k < d; k++ {
			cur := slices.Clone(best.ls)
			for _, l := range lengthScales {
				if l == cur[k] {
					continue
				}
				cur[k] = l
				try(cur, best.noise)
			}
		}
	}
	return best, true
}

// predict gives the posterior mean and standard deviation at x; k is
// scratch of length len(g.X).
func (g *gp) predict(x []float64, k []float64) (float64, float64) {
	m := len(g.X)
	mu := 0.0
	for i := 0; i < m; i++ {
		k[i] = matern52r(math.Sqrt(scaledDist2(x, g.X[i], g.inv)))
		mu += k[i] * g.alpha[i]
	}
	// Solve Uᵀv = k in place (forward substitution): var = k(x,x) − |v|².
	u, st := g.u.Data, g.u.Stride
	ss := 0.0
	for i := 0; i < m; i++ {
		s := k[i]
		for j := 0; j < i; j++ {
			s -= u[j*st+i] * k[j]
		}
		s /= u[i*st+i]
		k[i] = s
		ss += s * s
	}
	v := 1 + g.noise - ss
	if v < 1e-12 {
		v = 1e-12
	}
	return mu, math.Sqrt(v)
}

// featureMap gives a configuration's GP inputs: one coordinate in [0, 1]
// per parameter with more than one value. "index" scaling places the
// values of a parameter evenly (value index/(values−1)), the order they
// are listed in; "log" places positive numeric values by their logarithm
// (so 1, 2, 4, 8 are evenly spaced, and 16, 32, 48, ..., 256 are dense at
// the large end), falling back to index scaling for a parameter with a
// non-numeric or non-positive value. Two-valued flags are 0 and 1 either
// way: for them one-hot and ordinal coding coincide.
type featureMap struct {
	sp   *space.Space
	used []int       // parameters with more than one value
	pos  [][]float64 // per used parameter: coordinate of each value index
}

func newFeatureMap(sp *space.Space, scaling string) *featureMap {
	f := &featureMap{sp: sp}
	for p, par := range sp.Params() {
		n := len(par.Values)
		if n < 2 {
			continue
		}
		f.used = append(f.used, p)
		pos := make([]float64, n)
		for j := range pos {
			pos[j] = float64(j) / float64(n-1)
		}
		if scaling == "log" {
			logs := make([]float64, n)
			ok := true
			for j, v := range par.Values {
				x, isNum := v.Float()
				if !isNum || x <= 0 {
					ok = false
					break
				}
				logs[j] = math.Log(x)
			}
			lo, hi := slices.Min(logs), slices.Max(logs)
			if ok && hi > lo {
				for j := range pos {
					pos[j] = (logs[j] - lo) / (hi - lo)
				}
			}
		}
		f.pos = append(f.pos, pos)
	}
	return f
}

// at writes configuration i's features into dst (reused when large
// enough).
func (f *featureMap) at(i int, dst []float64) []float64 {
	ix := f.sp.Indexes(i)
	dst = dst[:0]
	for k, p := range f.used {
		dst = append(dst, f.pos[k][ix[p]])
	}
	return dst
}

// expectedImprovement of a normal N(mu, sd²) below target (minimisation).
func expectedImprovement(target, mu, sd float64) float64 {
	d := target - mu
	z := d / sd
	return d*0.5*math.Erfc(-z/math.Sqrt2) + sd*math.Exp(-0.5*z*z)/math.Sqrt(2*math.Pi)
}

// transform maps a score to the modelled value: log for positive scores
// (times and energies span orders of magnitude), as is otherwise.
func transform(s float64) float64 {
	if s > 0 {
		return math.Log(s)
	}
	return s
}

func meanSD(y []float64) (float64, float64) {
	m := 0.0
	for _, v := range y {
		m += v
	}
	m /= float64(len(y))
	ss := 0.0
	for _, v := range y {
		ss += (v - m) * (v - m)
	}
	return m, math.Sqrt(ss / float64(len(y)))
}
