package strategy

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"

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
	// lt is Uᵀ by rows, packed: row i (i+1 values, U's column i) starts
	// at i(i+1)/2. sdK's forward substitution reads it contiguously,
	// where U's columns are a stride apart; built on first use.
	lt []float64
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

// believe is g with each of points added as an observation of g's own
// mean there (the kriging believer, bayesOpt.liar): the mean is g's
// everywhere (the weights of the added points are exactly 0: with
// y_P = k_Pᵀ K⁻¹ y the system [K k_P; k_Pᵀ c] α' = [y; y_P] has α' = [α;
// 0]) and the variance that of a fit on X and points. The factor grows
// by a column per point, O(len(points)·m²), instead of a refit's O(m³).
// points are not copied.
func (g *gp) believe(points [][]float64) *gp {
	m, q := len(g.X), len(points)
	n := m + q
	u := make([]float64, n*n)
	for i := 0; i < m; i++ {
		copy(u[i*n+i:i*n+m], g.u.Data[i*g.u.Stride+i:i*g.u.Stride+m])
	}
	X := append(slices.Clone(g.X), points...)
	for j := m; j < n; j++ {
		// Column j of U solves Uᵀ l = k(X[:j], X[j]) (forward
		// substitution); its diagonal is what is left of k(x, x) + noise.
		ss := 0.0
		for i := 0; i < j; i++ {
			s := matern52r(math.Sqrt(scaledDist2(X[j], X[i], g.inv)))
			for l := 0; l < i; l++ {
				s -= u[l*n+i] * u[l*n+j]
			}
			s /= u[i*n+i]
			u[i*n+j] = s
			ss += s * s
		}
		u[j*n+j] = math.Sqrt(max(1+g.noise-ss, 1e-12))
	}
	alpha := make([]float64, n)
	copy(alpha, g.alpha)
	return &gp{X: X, inv: g.inv, noise: g.noise, alpha: alpha, lml: math.NaN(),
		u: blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: n, Stride: n, Data: u}}
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
	mu := g.meanK(x, k)
	return mu, g.sdK(k)
}

// meanK is the posterior mean at x, leaving the kernel vector k(x, X) in
// k (scratch of length len(g.X)) for sdK: O(m·d), where predict's
// standard deviation adds O(m²), so choosers that rank by the mean alone
// (localPick) or rule candidates out by it (maximiseAcquisition) call it
// first.
func (g *gp) meanK(x []float64, k []float64) float64 {
	mu := 0.0
	for i := range g.X {
		k[i] = matern52r(math.Sqrt(scaledDist2(x, g.X[i], g.inv)))
		mu += k[i] * g.alpha[i]
	}
	return mu
}

// maxSD is the largest standard deviation sdK can give, the prior's: an
// upper bound that lets a chooser pass over a candidate whose mean alone
// rules it out without the O(m²) solve.
func (g *gp) maxSD() float64 { return math.Sqrt(1 + g.noise) }

// sdK is the posterior standard deviation from the kernel vector meanK
// left in k (overwritten).
func (g *gp) sdK(k []float64) float64 {
	m := len(g.X)
	if g.lt == nil {
		g.lt = lowerRows(g.u, m)
	}
	// Solve Uᵀv = k in place (forward substitution): var = k(x,x) − |v|².
	ss := 0.0
	for i, off := 0, 0; i < m; i++ {
		row := g.lt[off : off+i+1]
		off += i + 1
		s := k[i]
		for j, l := range row[:i] {
			s -= l * k[j]
		}
		s /= row[i]
		k[i] = s
		ss += s * s
	}
	v := 1 + g.noise - ss
	if v < 1e-12 {
		v = 1e-12
	}
	return math.Sqrt(v)
}

// lowerRows packs the first m columns of the upper triangular u as the
// rows of its transpose (gp.lt).
func lowerRows(u blas64.Triangular, m int) []float64 {
	lt := make([]float64, 0, m*(m+1)/2)
	for i := 0; i < m; i++ {
		for j := 0; j <= i; j++ {
			lt = append(lt, u.Data[j*u.Stride+i])
		}
	}
	return lt
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
	// thrParams are the block-size parameters in order, thrLogs the log
	// of each one's values, scaled so that their sum over the parameters
	// less thrLo lies in [0, 1] (addThreads); nil without that
	// coordinate. A slice, not a map: the sum's order, and so its last
	// bit, must not change from run to run.
	thrParams []int
	thrLogs   [][]float64
	thrLo     float64
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
	if f.thrParams != nil {
		v := -f.thrLo
		for k, p := range f.thrParams {
			v += f.thrLogs[k][ix[p]]
		}
		dst = append(dst, v)
	}
	return dst
}

// blockSizeNames are Kernel Tuner's default names of the thread block's
// dimensions (block_size_names), which the T1 specs of the community
// benchmarks use.
var blockSizeNames = []string{"block_size_x", "block_size_y", "block_size_z"}

// blockDims gives the thread block's dimensions among sp's tunable
// parameters: the indexes of the blockSizeNames parameters with two values
// or more, in order, and their values. ok is false when one of those has
// a value that is not a positive number (no thread count to compute).
func blockDims(sp *space.Space) (params []int, vals [][]float64, ok bool) {
	for p, par := range sp.Params() {
		if !slices.Contains(blockSizeNames, par.Name) || len(par.Values) < 2 {
			continue
		}
		v := make([]float64, len(par.Values))
		for j, x := range par.Values {
			f, isNum := x.Float()
			if !isNum || f <= 0 {
				return nil, nil, false
			}
			v[j] = f
		}
		params, vals = append(params, p), append(vals, v)
	}
	return params, vals, true
}

// addThreads adds a coordinate for the log of the threads per thread
// block, the product of the block-size parameters, where at least two of
// them vary: occupancy, the registers and shared memory a thread block
// claims, and the number of thread blocks all follow the product, which a
// kernel with one length scale per dimension sees only as a diagonal.
func (f *featureMap) addThreads() {
	params, vals, ok := blockDims(f.sp)
	if !ok || len(params) < 2 {
		return
	}
	logs := make([][]float64, len(vals))
	lo, hi := 0.0, 0.0
	for d, v := range vals {
		logs[d] = make([]float64, len(v))
		for j, x := range v {
			logs[d][j] = math.Log(x)
		}
		lo += slices.Min(logs[d])
		hi += slices.Max(logs[d])
	}
	if hi <= lo {
		return
	}
	for _, l := range logs {
		for j := range l {
			l[j] /= hi - lo
		}
	}
	f.thrParams, f.thrLogs, f.thrLo = params, logs, lo/(hi-lo)
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

// Bounds of the gradient refinement (refineHyper): length scales in
// feature units, noise variance in standardised units. The noise bound
// keeps the model from explaining a rough landscape as noise, which
// flattens its mean and turns expected improvement into a random search.
const (
	minLengthScale = 0.02
	maxLengthScale = 50
	minNoise       = 1e-6
	maxNoise       = 0.25
)

// refineHyper climbs from start to a local maximum of the log marginal
// likelihood (R&W eq. 2.30) plus the length-scale prior (lsPrior) over
// θ = (log ℓ_1 … log ℓ_d, log noise), by L-BFGS with the analytic
// gradient (R&W eq. 5.9: ∂/∂θ_j = ½ tr((ααᵀ − K⁻¹) ∂K/∂θ_j); for the
// Matérn 5/2 kernel ∂k/∂log ℓ_p = 5/3 (1 + √5 r) e^{−√5 r} (Δ_p/ℓ_p)²).
// The grid (fitHyper) finds the basin; the gradient places the length
// scales between its points, one per parameter, which the grid's
// coordinate passes cannot do jointly. It returns start when the climb
// fails or ends lower.
func refineHyper(X [][]float64, y []float64, start hyperGP) hyperGP {
	if len(X) < 3 || len(start.ls) == 0 {
		return start
	}
	d := len(start.ls)
	theta := make([]float64, d+1)
	for k, l := range start.ls {
		theta[k] = math.Log(l)
	}
	theta[d] = math.Log(start.noise)
	objective := hyperObjective(X, y)
	f0 := objective(theta, nil)
	p := optimize.Problem{
		Func: func(t []float64) float64 { return objective(t, nil) },
		Grad: func(g, t []float64) { objective(t, g) },
	}
	// An error (a line search that fails on the rough surface, say)
	// still leaves the best point found in res; a climb that found
	// nothing better keeps the grid's answer.
	res, _ := optimize.Minimize(p, theta, &optimize.Settings{MajorIterations: 50, GradientThreshold: 1e-4}, &optimize.LBFGS{})
	if res == nil || math.IsInf(res.F, 0) || math.IsNaN(res.F) || res.F >= f0 {
		return start
	}
	ls, noise := unpackHyper(res.X)
	return hyperGP{ls: ls, noise: noise}
}

// addAlignment adds, for every integer parameter of more than four values
// whose values differ in how many times 2 divides them, a coordinate for
// that count, capped at 5 (multiples of 32, the warp size): GPU kernels
// often run fastest where a thread block's extent is a multiple of a warp
// or a memory transaction, which neither the index nor the logarithm of
// the value places together (48 lies between 32 and 64, but is not a
// multiple of 32).
func (f *featureMap) addAlignment() {
	const maxTwos = 5
	for _, p := range slices.Clone(f.used) {
		par := f.sp.Params()[p]
		if len(par.Values) <= 4 {
			continue
		}
		twos := make([]float64, len(par.Values))
		ok := true
		for j, v := range par.Values {
			x, isNum := v.Float()
			if !isNum || x != math.Trunc(x) || x <= 0 || x > 1<<53 {
				ok = false
				break
			}
			n := 0
			for k := int64(x); k%2 == 0 && n < maxTwos; k /= 2 {
				n++
			}
			twos[j] = float64(n)
		}
		lo, hi := slices.Min(twos), slices.Max(twos)
		if !ok || hi == lo {
			continue
		}
		for j := range twos {
			twos[j] = (twos[j] - lo) / (hi - lo)
		}
		f.used = append(f.used, p)
		f.pos = append(f.pos, twos)
	}
}

// unpackHyper turns θ = (log ℓ_1 … log ℓ_d, log noise) into length
// scales and noise, each clamped into its bounds.
func unpackHyper(t []float64) ([]float64, float64) {
	d := len(t) - 1
	ls := make([]float64, d)
	for k := range ls {
		ls[k] = math.Exp(min(max(t[k], math.Log(minLengthScale)), math.Log(maxLengthScale)))
	}
	return ls, math.Exp(min(max(t[d], math.Log(minNoise)), math.Log(maxNoise)))
}

// hyperObjective is refineHyper's objective over θ (unpackHyper): the
// negative log marginal likelihood minus the length-scale prior; it fills
// grad (len(θ)) when grad is not nil, and is +Inf where the kernel matrix
// is not positive definite. X is m × d, y has m standardised targets.
func hyperObjective(X [][]float64, y []float64) func(t, grad []float64) float64 {
	m := len(X)
	d := len(X[0])
	// diff[i*m+j] holds (X_i − X_j)² per dimension for j ≥ i, reused by
	// every call.
	diff := make([][]float64, m*m)
	for i := 0; i < m; i++ {
		for j := i; j < m; j++ {
			v := make([]float64, d)
			for k := range v {
				e := X[i][k] - X[j][k]
				v[k] = e * e
			}
			diff[i*m+j] = v
		}
	}
	K := mat.NewSymDense(m, nil)
	var ch mat.Cholesky
	var Kinv mat.SymDense
	alpha := mat.NewVecDense(m, nil)
	yv := mat.NewVecDense(m, y)
	dk := make([]float64, m*m) // 5/3 (1 + √5 r) e^{−√5 r} per pair
	return func(t, grad []float64) float64 {
		ls, noise := unpackHyper(t)
		inv2 := make([]float64, d)
		for k, l := range ls {
			inv2[k] = 1 / (l * l)
		}
		for i := 0; i < m; i++ {
			for j := i; j < m; j++ {
				r2 := 0.0
				for k, v := range diff[i*m+j] {
					r2 += v * inv2[k]
				}
				r := math.Sqrt(r2)
				s5 := math.Sqrt(5) * r
				e := math.Exp(-s5)
				v := (1 + s5 + 5*r2/3) * e
				dk[i*m+j] = 5.0 / 3 * (1 + s5) * e
				if i == j {
					v += noise
				}
				K.SetSym(i, j, v)
			}
		}
		if !ch.Factorize(K) {
			return math.Inf(1)
		}
		if err := ch.SolveVecTo(alpha, yv); err != nil {
			return math.Inf(1)
		}
		a := alpha.RawVector().Data
		f := 0.5*mat.Dot(yv, alpha) + 0.5*ch.LogDet() + 0.5*float64(m)*math.Log(2*math.Pi)
		for _, l := range ls {
			z := (math.Log(l) - math.Log(0.5)) / 1.5
			f += 0.5 * z * z
		}
		if grad == nil {
			return f
		}
		if err := ch.InverseTo(&Kinv); err != nil {
			return math.Inf(1)
		}
		for k := range grad {
			grad[k] = 0
		}
		trW := 0.0
		for i := 0; i < m; i++ {
			trW += a[i]*a[i] - Kinv.At(i, i)
			for j := i + 1; j < m; j++ {
				w := a[i]*a[j] - Kinv.At(i, j)
				c := w * dk[i*m+j] // both triangles: 2 × ½
				for k, v := range diff[i*m+j] {
					grad[k] -= c * v * inv2[k]
				}
			}
		}
		grad[d] = -0.5 * trW * noise
		for k, l := range ls {
			grad[k] += (math.Log(l) - math.Log(0.5)) / (1.5 * 1.5)
		}
		// The clamps are flat: no gradient beyond a bound.
		for k := range d {
			if t[k] < math.Log(minLengthScale) && grad[k] > 0 || t[k] > math.Log(maxLengthScale) && grad[k] < 0 {
				grad[k] = 0
			}
		}
		if t[d] < math.Log(minNoise) && grad[d] > 0 || t[d] > math.Log(maxNoise) && grad[d] < 0 {
			grad[d] = 0
		}
		return f
	}
}
