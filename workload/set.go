package workload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/internal/bounded"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
)

// File is a workload file as written, YAML or JSON (JSON is read as
// YAML): several kernels run together on one GPU, each a T1 spec whose
// tunable parameters are tuned or fixed, on their own streams.
//
//	name: rodinia-4
//	kernels:
//	  - name: lud                       # unique; prefixes its parameters ("lud.block_size")
//	    spec: ../rodinia/lud/spec.json  # relative to the workload file
//	    config: {block_size: 16}        # optional: a parameter fixed to one value,
//	                                    # or narrowed to a list ([8, 16])
//	    stream: 0                       # optional: default, one stream per kernel
//	  - ...
//	order: [hotspot, lud, ...]          # optional launch order; default: as listed
//	tune:                               # optional GPU settings, one for the whole chip
//	  nvml_gr_clock: [1980, 1755, 1410]
//	measurement:                        # optional, over the specs' own
//	  iterations: 3                     # timed runs of the whole plan
//	  verify: false                     # skip the outputs' check (orders do not change them)
//	  energy_window_seconds: 0.2        # when energy is measured
//	  energy_trials: 1                  # one window per plan (default: the first spec's protocol, ≤ 5 trials)
type File struct {
	Name        string           `yaml:"name"`
	Kernels     []FileKernel     `yaml:"kernels"`
	Order       []string         `yaml:"order"`
	Tune        map[string][]any `yaml:"tune"`
	Measurement *FileMeasurement `yaml:"measurement"`
}

// FileMeasurement is how a workload's plans are measured, over what the
// kernels' specs say (the first spec's protocol, the most iterations any
// of them asks for, every kernel's verification).
type FileMeasurement struct {
	Iterations          int     `yaml:"iterations"`
	Verify              *bool   `yaml:"verify"`
	EnergyWindowSeconds float64 `yaml:"energy_window_seconds"`
	// EnergyTrials caps the energy protocol's trials per plan (package
	// measure, Protocol.MaxTrials); 1 is one stand-alone window, which
	// an exhaustive sweep of launch orders can afford (0: the spec's).
	EnergyTrials int      `yaml:"energy_trials"`
	Energy       *bool    `yaml:"energy"`
	Observers    []string `yaml:"observers"`
}

// measurementFields are the workload file's names of the measurement
// fields it has, by their names in spec.RawMeasurement.
var measurementFields = map[string]string{
	"Iterations": "iterations", "EnergyWindowSeconds": "energy_window_seconds",
	"Trials": "energy_trials", "Observers": "observers",
}

// check checks the measurement section with the spec's schema and
// bounds (spec.CheckMeasurement): the same values are refused with the
// same words in a spec and in a workload. 0 (iterations, energy trials)
// is the specs' own value.
func (m *FileMeasurement) check(path string) error {
	raw := spec.RawMeasurement{EnergyWindowSeconds: m.EnergyWindowSeconds, Trials: m.EnergyTrials, Observers: m.Observers}
	if m.Iterations != 0 {
		it := m.Iterations
		raw.Iterations = &it
	}
	return spec.CheckMeasurement("workload "+path, func(name string) string { return "measurement." + measurementFields[name] }, &raw)
}

// FileKernel is one kernel of a workload file.
type FileKernel struct {
	Name   string         `yaml:"name"`
	Spec   string         `yaml:"spec"`
	Config map[string]any `yaml:"config"`
	Stream *int           `yaml:"stream"`
}

// Member is one kernel of a Set: its spec with the parameters the
// workload fixes or narrows given those values (Params).
type Member struct {
	Name   string
	Spec   *spec.Spec
	Params []space.Param // the spec's, in its order; fixed ones single-valued
	Stream int
}

// Set is a workload as a tuning problem: kernels run together, each with
// its own search space, the launch order, and GPU settings shared by the
// chip (multi-kernel-autotuning-performance-energy.md, section III.D: one
// SM clock for all the kernels). Its combined search space (Space) has
// every member's parameters prefixed with its name, then the chip's GPU
// settings, then, when asked, the launch order as a parameter (OrderParam).
type Set struct {
	Path    string
	Name    string
	Members []Member
	// Order is the launch order as written (member indexes).
	Order []int
	// Settings are the chip's tunable GPU settings (nvml_gr_clock,
	// nvml_mem_clock, nvml_pwr_limit), unprefixed.
	Settings []space.Param
	// Measurement is the file's measurement section (nil: the specs').
	Measurement *FileMeasurement
	fileHash    string
}

// OrderParam names the parameter of a combined space whose values are the
// launch orders: member names joined by OrderSeparator, the order as
// written first.
const (
	OrderParam     = "order"
	OrderSeparator = ">"
	// MaxOrdered is the most kernels whose launch orders can be a search
	// space (9! = 362,880 orders).
	MaxOrdered = 9
)

var memberName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// IsFile reports whether path holds a workload file rather than a spec:
// a YAML or JSON document whose top level has "kernels".
func IsFile(path string) bool {
	b, err := bounded.ReadFile(path, bounded.Text, "a workload")
	if err != nil {
		return false
	}
	var top map[string]any
	if yaml.Unmarshal(b, &top) != nil {
		return false
	}
	if _, ok := top["kernels"]; ok {
		return true
	}
	// No kernels, and none of a T1 spec's sections: a workload whose
	// keys are misspelt ("kernel:") is read as one, so that its error
	// says which key was meant rather than that a spec lacks its own.
	for _, k := range []string{"General", "ConfigurationSpace", "KernelSpecification", "Gtune", "Search", "Budget"} {
		if _, ok := top[k]; ok {
			return false
		}
	}
	known := yamlKeys(reflect.TypeFor[File]())
	for k := range top {
		if near := spec.Closest(k, known); near == "kernels" {
			return true
		}
	}
	return false
}

// Load reads a workload file and the specs it names. Errors name the
// file and the kernel: a field gtune does not know, a kernel without a
// name or spec, a duplicate or malformed name, a spec that does not load,
// a fixed parameter the spec does not have or a value that is not a
// scalar, an order that is not a permutation of the kernels, a tuned
// setting other than nvml_gr_clock, nvml_mem_clock and nvml_pwr_limit.
func Load(path string) (*Set, error) {
	b, err := bounded.ReadFile(path, bounded.Text, "a workload")
	if err != nil {
		return nil, err
	}
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		// One line per problem, each naming the file (check lists them).
		msg := strings.ReplaceAll(yamlMessage(err), "\n", "\nworkload "+path+": ")
		return nil, fmt.Errorf("workload %s: %s", path, msg)
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("workload %s: %s", path, fmt.Sprintf(format, a...))
	}
	if len(f.Kernels) == 0 {
		return nil, fail("no kernels")
	}
	h := sha256.Sum256(b)
	s := &Set{Path: path, Name: f.Name, Measurement: f.Measurement, fileHash: hex.EncodeToString(h[:])}
	if m := f.Measurement; m != nil {
		if err := m.check(path); err != nil {
			return nil, err
		}
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	index := map[string]int{}
	for i, k := range f.Kernels {
		if k.Name == "" {
			return nil, fail("kernel %d has no name (each kernel needs one: name: NAME)", i)
		}
		if !memberName.MatchString(k.Name) {
			return nil, fail("kernel %d: name %q must start with a letter and hold only letters, digits and _", i, k.Name)
		}
		if _, dup := index[k.Name]; dup {
			return nil, fail("kernel %q is listed twice", k.Name)
		}
		index[k.Name] = i
		if k.Spec == "" {
			return nil, fail("kernel %q has no spec", k.Name)
		}
		sp := k.Spec
		if !filepath.IsAbs(sp) {
			sp = filepath.Join(filepath.Dir(path), sp)
		}
		sc, err := spec.Load(sp)
		if err != nil {
			return nil, fail("kernel %q: %v", k.Name, err)
		}
		m := Member{Name: k.Name, Spec: sc, Stream: i, Params: slices.Clone(sc.Params)}
		if k.Stream != nil {
			if *k.Stream < 0 {
				return nil, fail("kernel %q: negative stream %d", k.Name, *k.Stream)
			}
			m.Stream = *k.Stream
		}
		for name, x := range k.Config {
			p := slices.IndexFunc(m.Params, func(p space.Param) bool { return p.Name == name })
			if p < 0 {
				return nil, fail("kernel %q: config names %s, which is not a tunable parameter of %s", k.Name, name, sp)
			}
			xs, many := x.([]any)
			if !many {
				xs = []any{x}
			}
			if len(xs) == 0 {
				return nil, fail("kernel %q: config %s lists no value", k.Name, name)
			}
			vals := make([]expr.Value, len(xs))
			for j, x := range xs {
				if vals[j], err = expr.FromGo(x); err != nil {
					return nil, fail("kernel %q: config %s: %v", k.Name, name, err)
				}
				if err := sc.CheckValue(name, vals[j]); err != nil {
					return nil, fail("kernel %q: config %s: %v", k.Name, name, err)
				}
			}
			m.Params[p] = space.Param{Name: name, Values: vals}
		}
		s.Members = append(s.Members, m)
	}
	if len(f.Order) > 0 {
		if len(f.Order) != len(f.Kernels) {
			return nil, fail("order lists %d kernels, the workload has %d", len(f.Order), len(f.Kernels))
		}
		seen := map[int]bool{}
		for _, n := range f.Order {
			i, ok := index[n]
			if !ok || seen[i] {
				return nil, fail("order: %q is not a kernel of the workload, or is listed twice", n)
			}
			seen[i] = true
			s.Order = append(s.Order, i)
		}
	} else {
		for i := range f.Kernels {
			s.Order = append(s.Order, i)
		}
	}
	names := make([]string, 0, len(f.Tune))
	for n := range f.Tune {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if n != backend.ParamCoreClock && n != backend.ParamMemClock && n != backend.ParamPowerLimit {
			return nil, fail("tune: %s is not a GPU setting (%s, %s, %s)", n, backend.ParamCoreClock, backend.ParamMemClock, backend.ParamPowerLimit)
		}
		var vals []expr.Value
		for _, x := range f.Tune[n] {
			v, err := expr.FromGo(x)
			if err != nil {
				return nil, fail("tune: %s: %v", n, err)
			}
			vals = append(vals, v)
		}
		if err := s.AddSetting(n, vals); err != nil {
			return nil, fail("tune: %v", err)
		}
	}
	return s, nil
}

// Request is how every plan of the workload is measured: the first
// kernel's spec's request, with the most iterations any kernel's spec
// asks for, every kernel's verification, then the file's measurement
// section over it. Its error is an observer the file names that is not
// registered.
func (s *Set) Request() (measure.Request, error) {
	r := s.Members[0].Spec.Request()
	for _, m := range s.Members[1:] {
		q := m.Spec.Request()
		r.Iterations = max(r.Iterations, q.Iterations)
		r.Verify = r.Verify || q.Verify
		r.Energy = r.Energy || q.Energy
	}
	if m := s.Measurement; m != nil {
		if m.Iterations > 0 {
			r.Iterations = m.Iterations
		}
		if m.Verify != nil {
			r.Verify = *m.Verify
		}
		if m.EnergyWindowSeconds > 0 {
			r.EnergyWindow = time.Duration(m.EnergyWindowSeconds * float64(time.Second))
		}
		if m.Energy != nil {
			r.Energy = *m.Energy
		}
		switch {
		case m.EnergyTrials == 1:
			r.Trials = nil
		case m.EnergyTrials > 1:
			p := measure.DefaultProtocol
			if r.Trials != nil {
				p = *r.Trials
			}
			p.MaxTrials = m.EnergyTrials
			p.MinTrials = min(p.MinTrials, p.MaxTrials)
			r.Trials = &p
		}
		for _, o := range m.Observers {
			if _, err := measure.NewObserver(o); err != nil {
				return r, fmt.Errorf("workload %s: measurement.observers: %w", s.Path, err)
			}
		}
		r.Observers = append(r.Observers, m.Observers...)
	}
	return r, nil
}

// Verifies reports whether plans check their outputs (the file's
// measurement.verify, default yes).
func (s *Set) Verifies() bool {
	return s.Measurement == nil || s.Measurement.Verify == nil || *s.Measurement.Verify
}

// AddSetting adds a chip-wide GPU setting to the combined space (gtune
// tune --gpu-settings does it for a workload). Errors: a name that is
// not a GPU setting or is already tuned, no values, a value that is not
// a positive number.
func (s *Set) AddSetting(name string, values []expr.Value) error {
	if name != backend.ParamCoreClock && name != backend.ParamMemClock && name != backend.ParamPowerLimit {
		return fmt.Errorf("%s is not a GPU setting", name)
	}
	if len(values) == 0 {
		return fmt.Errorf("%s has no values", name)
	}
	for _, p := range s.Settings {
		if p.Name == name {
			return fmt.Errorf("%s is already tuned", name)
		}
	}
	for _, v := range values {
		if f, ok := v.Float(); !ok || !(f > 0) || math.IsInf(f, 0) {
			return fmt.Errorf("%s holds %s; GPU settings are positive numbers (MHz, W)", name, v.String())
		}
	}
	s.Settings = append(s.Settings, space.Param{Name: name, Values: slices.Clone(values)})
	return nil
}

// Hash identifies the workload for the results database: the file's
// bytes, each member's name, spec hash (spec and kernel source) and
// stream, the launch order and the chip's settings.
func (s *Set) Hash() string {
	h := sha256.New()
	h.Write([]byte("gtune-workload-set-1\n" + s.fileHash))
	for _, m := range s.Members {
		fmt.Fprintf(h, "\n%s %s stream %d", m.Name, m.Spec.Hash, m.Stream)
	}
	// The launch order changes what is measured (a plan's key holds the
	// members' configurations, not their order, unless orders are
	// searched).
	h.Write([]byte("\norder " + s.OrderName(s.Order)))
	for _, p := range s.Settings {
		h.Write([]byte("\n" + p.Name))
		for _, v := range p.Values {
			h.Write([]byte(" " + v.PyStr()))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Prefix is the prefix of member i's parameters in the combined space.
func (s *Set) Prefix(i int) string { return s.Members[i].Name + "." }

// Names is the members' kernel names joined by "+", for the run record.
func (s *Set) Names() string {
	n := make([]string, len(s.Members))
	for i, m := range s.Members {
		n[i] = m.Spec.KernelName
	}
	return strings.Join(n, "+")
}

// MemberSpace builds member i's own search space: its spec's parameters,
// narrowed by the workload's fixed values, and restrictions. Errors as
// spec.Spec.BuildSpaceContext; an empty space names the kernel.
func (s *Set) MemberSpace(ctx context.Context, i int, opts space.BuildOptions) (*space.Space, error) {
	m := s.Members[i]
	sp, err := space.BuildContext(ctx, m.Params, m.Spec.Restrictions, m.Spec.Constants, opts)
	if err != nil {
		return nil, fmt.Errorf("kernel %q (%s): %w", m.Name, m.Spec.Path, err)
	}
	if sp.Len() == 0 {
		return nil, fmt.Errorf("kernel %q (%s): no configuration satisfies the restrictions with the workload's fixed values", m.Name, m.Spec.Path)
	}
	return sp, nil
}

// Layout says where each part of the combined space's configurations is.
type Layout struct {
	// Members[i] is the position of member i's first parameter; its
	// parameters follow in its spec's order.
	Members []int
	// Settings[k] is the position of Set.Settings[k].
	Settings []int
	// Order is the position of OrderParam, -1 without it.
	Order int
	// Orders are the launch orders the values of OrderParam stand for
	// (member indexes), in value order.
	Orders  [][]int
	orderOf map[string]int // OrderParam's value -> its index in Orders
}

// NonEmptySpace is Space with the limit of --max-configurations (limit
// configurations at most), refusing an empty space: what a command
// tunes, measures or replays. Errors: an interruption (ctx), else bad
// input (badinput): Space's errors, no valid configuration.
func (s *Set) NonEmptySpace(ctx context.Context, orders bool, limit int) (*space.Space, *Layout, error) {
	sp, lay, err := s.Space(ctx, orders, space.BuildOptions{MaxConfigurations: limit, LimitName: "--max-configurations"})
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("interrupted while building the search space of %s", s.Path)
		}
		return nil, nil, badinput.Wrap(err)
	}
	if sp.Len() == 0 {
		return nil, nil, badinput.New("%s: the combined search space has no valid configuration", s.Path)
	}
	return sp, lay, nil
}

// Space builds the combined search space: the product of the members'
// spaces, their parameters prefixed (Prefix) and their restrictions kept
// as written (space.Restriction.Scope), the chip's GPU settings, and
// with orders the launch order as one more parameter whose values are
// every permutation of the members, the written order first (up to
// MaxOrdered kernels). Errors: a member whose space is empty or does not
// build, too many kernels to order, a space larger than opts allows.
func (s *Set) Space(ctx context.Context, orders bool, opts space.BuildOptions) (*space.Space, *Layout, error) {
	var params []space.Param
	var rs []space.Restriction
	lay := &Layout{Order: -1}
	for i, m := range s.Members {
		if _, err := s.MemberSpace(ctx, i, opts); err != nil {
			return nil, nil, err
		}
		pre := s.Prefix(i)
		lay.Members = append(lay.Members, len(params))
		for _, p := range m.Params {
			params = append(params, space.Param{Name: pre + p.Name, Values: p.Values})
		}
		for _, r := range m.Spec.Restrictions {
			src := r.Source
			if src == "" {
				src = r.Expr.Source()
			}
			rs = append(rs, space.Restriction{Expr: r.Expr, Source: m.Name + ": " + src, Scope: pre})
		}
	}
	consts := s.Constants()
	for _, p := range s.Settings {
		lay.Settings = append(lay.Settings, len(params))
		params = append(params, p)
	}
	if orders {
		if len(s.Members) > MaxOrdered {
			return nil, nil, fmt.Errorf("workload %s: %d kernels have %g launch orders; orders can be searched for at most %d kernels", s.Path, len(s.Members), factorial(len(s.Members)), MaxOrdered)
		}
		lay.Order = len(params)
		lay.Orders = permutations(s.Order)
		vals := make([]expr.Value, len(lay.Orders))
		lay.orderOf = make(map[string]int, len(lay.Orders))
		for k, o := range lay.Orders {
			name := s.OrderName(o)
			vals[k] = expr.Str(name)
			lay.orderOf[name] = k
		}
		params = append(params, space.Param{Name: OrderParam, Values: vals})
	}
	sp, err := space.BuildContext(ctx, params, rs, consts, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("workload %s: %w", s.Path, err)
	}
	return sp, lay, nil
}

// Constants are the members' spec constants, each prefixed with its
// member's name as its parameters are (the constants the combined
// space's scoped restrictions read).
func (s *Set) Constants() expr.MapEnv {
	consts := expr.MapEnv{}
	for i, m := range s.Members {
		for n, v := range m.Spec.Constants {
			consts[s.Prefix(i)+n] = v
		}
	}
	return consts
}

// OrderName writes a launch order as the member names joined by
// OrderSeparator.
func (s *Set) OrderName(order []int) string {
	n := make([]string, len(order))
	for k, i := range order {
		n[k] = s.Members[i].Name
	}
	return strings.Join(n, OrderSeparator)
}

// ParseOrder reads a launch order written as OrderName writes it (member
// names joined by OrderSeparator). Errors: a name that is not a kernel of
// the workload, a kernel missing or listed twice.
func (s *Set) ParseOrder(text string) ([]int, error) {
	names := strings.Split(text, OrderSeparator)
	if len(names) != len(s.Members) {
		return nil, fmt.Errorf("workload %s: order %q names %d kernels, the workload has %d", s.Path, text, len(names), len(s.Members))
	}
	seen := map[int]bool{}
	var out []int
	for _, n := range names {
		i := slices.IndexFunc(s.Members, func(m Member) bool { return m.Name == strings.TrimSpace(n) })
		if i < 0 || seen[i] {
			return nil, fmt.Errorf("workload %s: order %q: %q is not a kernel of the workload, or is listed twice", s.Path, text, n)
		}
		seen[i] = true
		out = append(out, i)
	}
	return out, nil
}

// Workload is the plan of one configuration of the combined space (its
// values in parameter order, as Space laid them out): each member with
// its configuration, the launch order (the configuration's, else the
// written one) and the chip's GPU settings. Errors: a configuration of
// another length, a GPU setting that is not a positive number.
func (s *Set) Workload(lay *Layout, cfg []expr.Value) (*Workload, error) {
	n := len(cfg)
	want := 0
	for _, m := range s.Members {
		want += len(m.Params)
	}
	want += len(s.Settings)
	if lay.Order >= 0 {
		want++
	}
	if n != want {
		return nil, fmt.Errorf("workload %s: a configuration of %d values, the combined space has %d parameters", s.Path, n, want)
	}
	w := &Workload{Order: slices.Clone(s.Order)}
	for i, m := range s.Members {
		at := lay.Members[i]
		w.Launches = append(w.Launches, Launch{Spec: m.Spec, Config: cfg[at : at+len(m.Params)], Stream: m.Stream})
	}
	for k, p := range s.Settings {
		v := cfg[lay.Settings[k]]
		if w.Settings == nil {
			w.Settings = &backend.Settings{}
		}
		f, ok := v.Float()
		if !ok || !(f > 0) {
			return nil, fmt.Errorf("workload %s: %s is %s, not a positive number", s.Path, p.Name, v.String())
		}
		switch p.Name {
		case backend.ParamCoreClock:
			w.Settings.CoreClockMHz = int(f)
		case backend.ParamMemClock:
			w.Settings.MemClockMHz = int(f)
		default:
			w.Settings.PowerLimitW = f
		}
	}
	if lay.Order >= 0 {
		name := cfg[lay.Order].Str()
		k, ok := lay.orderOf[name]
		if !ok {
			return nil, fmt.Errorf("workload %s: %q is not a launch order of its kernels", s.Path, name)
		}
		w.Order = slices.Clone(lay.Orders[k])
	}
	return w, nil
}

// permutations lists every ordering of first, first itself first, in
// lexicographic order of positions in first.
func permutations(first []int) [][]int {
	n := len(first)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	var out [][]int
	for {
		o := make([]int, n)
		for k, i := range idx {
			o[k] = first[i]
		}
		out = append(out, o)
		// Next permutation of idx (lexicographic).
		k := n - 2
		for k >= 0 && idx[k] >= idx[k+1] {
			k--
		}
		if k < 0 {
			return out
		}
		l := n - 1
		for idx[l] <= idx[k] {
			l--
		}
		idx[k], idx[l] = idx[l], idx[k]
		slices.Reverse(idx[k+1:])
	}
}

func factorial(n int) float64 {
	f := 1.0
	for i := 2; i <= n; i++ {
		f *= float64(i)
	}
	return f
}

// FromSpecs is a workload of specs named on a command line (gtune measure
// A B ...): member i is named "k<i>", every parameter fixed to
// configs[i]'s value, launched on streams[i], in the order given. Its
// combined space holds one configuration when the fixed values satisfy
// the specs' restrictions. Errors: no spec, lengths that do not match,
// a negative stream.
func FromSpecs(specs []*spec.Spec, configs [][]expr.Value, streams []int) (*Set, error) {
	if len(specs) == 0 {
		return nil, errors.New("workload: no spec")
	}
	if len(configs) != len(specs) || len(streams) != len(specs) {
		return nil, fmt.Errorf("workload: %d specs, %d configurations, %d streams", len(specs), len(configs), len(streams))
	}
	h := sha256.New()
	h.Write([]byte("gtune-workload-specs-1"))
	paths, names := make([]string, len(specs)), make([]string, len(specs))
	s := &Set{}
	for i, sc := range specs {
		if len(configs[i]) != len(sc.Params) {
			return nil, fmt.Errorf("workload: spec %s has %d tunable parameters, its configuration %d values", sc.Path, len(sc.Params), len(configs[i]))
		}
		if streams[i] < 0 {
			return nil, fmt.Errorf("workload: spec %s: negative stream %d", sc.Path, streams[i])
		}
		m := Member{Name: fmt.Sprintf("k%d", i), Spec: sc, Stream: streams[i], Params: make([]space.Param, len(sc.Params))}
		for k, p := range sc.Params {
			m.Params[k] = space.Param{Name: p.Name, Values: []expr.Value{configs[i][k]}}
		}
		s.Members = append(s.Members, m)
		s.Order = append(s.Order, i)
		paths[i], names[i] = sc.Path, sc.KernelName
	}
	s.Path, s.Name = strings.Join(paths, ","), strings.Join(names, "+")
	s.fileHash = hex.EncodeToString(h.Sum(nil))
	return s, nil
}

// Fix narrows s to one configuration cfg of its combined space (laid out
// as lay says): a copy whose members' parameters and GPU settings each
// hold cfg's value, and whose written order is cfg's launch order (or
// order, when not nil). Its combined space, built without orders, holds
// that one configuration, keyed as in s's. Errors: as Workload.
func (s *Set) Fix(lay *Layout, cfg []expr.Value, order []int) (*Set, error) {
	w, err := s.Workload(lay, cfg)
	if err != nil {
		return nil, err
	}
	out := *s
	out.Members = slices.Clone(s.Members)
	for i := range out.Members {
		m := &out.Members[i]
		at := lay.Members[i]
		m.Params = make([]space.Param, len(s.Members[i].Params))
		for k, p := range s.Members[i].Params {
			m.Params[k] = space.Param{Name: p.Name, Values: []expr.Value{cfg[at+k]}}
		}
	}
	out.Settings = make([]space.Param, len(s.Settings))
	for k, p := range s.Settings {
		out.Settings[k] = space.Param{Name: p.Name, Values: []expr.Value{cfg[lay.Settings[k]]}}
	}
	out.Order = w.Order
	if order != nil {
		if len(order) != len(s.Members) {
			return nil, fmt.Errorf("workload %s: an order of %d kernels for %d", s.Path, len(order), len(s.Members))
		}
		out.Order = slices.Clone(order)
	}
	return &out, nil
}
