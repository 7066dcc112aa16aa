// Package check is what gtune check and gtune tune check before a run's
// first evaluation, with the same words in both: a spec's or workload's
// keys and values, kernel source, objective, strategy and search space,
// every configuration's grid, thread block and shared memory against
// the GPU's launch limits, the arguments against its memory, and where
// NVRTC loads, the compilation of a sample of configurations.
package check

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/occupancy"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/strategy"
	"github.com/gtune/gtune/workload"
)

// Lines splits text into its non-empty lines, trimmed: warnings written
// one a line.
func Lines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Problems splits an error into its lines (errors.Join of several),
// trimmed and non-empty.
func Problems(err error) []string {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Options are what File checks against.
type Options struct {
	SimDevice         string // device-database id ("": the spec's Gtune.Simulation.Device, else h100_sxm)
	CompileSample     int    // configurations compiled besides the default one, where NVRTC is found
	MaxConfigurations int    // a workload's combined space at most
	// BuildSpace builds a spec's search space as a run would (its limits
	// and progress); errors are the spec's problems.
	BuildSpace func(context.Context, *spec.Spec) (*space.Space, error)
}

// File checks the spec or workload at path as gtune tune does before its
// first evaluation, and what a run would meet only on a GPU where it can
// be checked here (arguments against the device's memory, compilation
// with NVRTC where it loads), and says what it checked, what it could
// not and every problem found (report.CheckFile).
func File(ctx context.Context, path string, f Options) report.CheckFile {
	cf := report.CheckFile{Path: path}
	fail := func(err error) report.CheckFile {
		cf.Problems = append(cf.Problems, Problems(err)...)
		return cf
	}
	if workload.IsFile(path) {
		if err := workloadFile(ctx, path, f, &cf); err != nil {
			return fail(err)
		}
		return cf
	}
	s, err := spec.Load(path)
	if err != nil {
		return fail(err)
	}
	if rt := s.Routine(); rt != nil {
		cf.Checked = append(cf.Checked, "spec keys and values", fmt.Sprintf("the arguments against %s's parameters (%s), leading dimensions and buffer sizes", rt.Name, rt.Signature()))
	} else {
		cf.Checked = append(cf.Checked, "spec keys and values", "kernel source: "+strings.Join(slices.DeleteFunc([]string{"text", "KernelName", s.BracketsChecked, "arguments against the kernel's parameters"}, func(x string) bool { return x == "" }), ", "))
		if s.BracketsChecked == "" {
			cf.NotChecked = append(cf.NotChecked, "the kernel source's brackets (see the warning)")
		}
		includes(s, &cf)
	}
	cf.Warnings = append(cf.Warnings, s.Warnings...)
	if _, err := objective.ResolveList(s, ""); err != nil {
		cf.Problems = append(cf.Problems, Problems(err)...)
	}
	if _, err := strategy.Resolve("", s.Strategy); err != nil {
		cf.Problems = append(cf.Problems, Problems(err)...)
	}
	sp, err := f.BuildSpace(ctx, s)
	if err != nil {
		return fail(err)
	}
	if sp.Len() == 0 {
		return fail(fmt.Errorf("%s: the search space has no valid configuration (%.0f raw, every one excluded by the restrictions)", s.Path, sp.RawCount()))
	}
	cf.Configurations = sp.Len()
	if err := s.CheckJobs(ctx, sp); err != nil {
		return fail(err)
	}
	cf.Checked = append(cf.Checked, fmt.Sprintf("the search space and every configuration's grid, thread block, shared memory and simulated work (%d)", sp.Len()))
	d, err := registry.SimulatedGPU(f.SimDevice, s)
	if err != nil {
		return fail(err)
	}
	if err := ArgumentsFit(s, d); err != nil {
		cf.Problems = append(cf.Problems, err.Error())
	} else {
		cf.Checked = append(cf.Checked, fmt.Sprintf("argument sizes against the %s's memory", d.Name))
	}
	if w, err := GeometryFit(ctx, s, sp, d, ""); err != nil {
		cf.Problems = append(cf.Problems, Problems(err)...)
	} else {
		if w != "" {
			cf.Warnings = append(cf.Warnings, w)
		}
		cf.Checked = append(cf.Checked, fmt.Sprintf("thread block, grid and shared memory against the %s's launch limits", d.Name))
	}
	if w, err := RegistersFit(ctx, s, sp, d, ""); err != nil {
		cf.Problems = append(cf.Problems, Problems(err)...)
	} else if s.Simulation != nil {
		cf.Checked = append(cf.Checked, fmt.Sprintf("the simulated work's registers against the %s's register file", d.Name))
		if w != "" {
			cf.Warnings = append(cf.Warnings, w)
		}
	}
	compile(ctx, s, sp, d, f.CompileSample, &cf)
	return cf
}

// RegistersFit checks the registers s declares for its simulated work
// (Gtune.Simulation Registers) against d's register file, a
// configuration's thread block at a time (spec.RegistersFit, package
// occupancy): a block that cannot be resident is a launch failure on the
// simulated GPU, and gtune project leaves it out. Where the kernel
// declares __launch_bounds__, the compiler caps the registers on a GPU
// and the same configurations launch there, spilling: the warning says
// so. It returns a warning ("" when all fit); errors are the spec's
// expressions' (bad input). where names the kernel in a workload ("": a
// spec alone).
func RegistersFit(ctx context.Context, s *spec.Spec, sp *space.Space, d *device.Description, where string) (warning string, err error) {
	over, checked, first, err := s.RegistersFit(ctx, sp, func(threads, registers int) bool {
		occ, err := occupancy.Compute(d, occupancy.Input{BlockSize: threads, RegistersPerThread: registers})
		return err != nil || occ.ActiveBlocksPerSM > 0 // other limits are GeometryFit's
	})
	if err != nil || over == 0 {
		return "", badinput.Wrap(err)
	}
	w := fmt.Sprintf("%s%s: %d of %d configurations declare more registers than a thread block of theirs can hold on the %s (Gtune.Simulation Registers; %s, over %d a block): the simulated GPU records them launch_failed and gtune project leaves them out",
		where, s.Path, over, checked, d.Name, first, d.MaxRegistersPerBlock)
	if lb := s.LaunchBounds(); lb != "" {
		w += fmt.Sprintf("; the kernel declares __launch_bounds__(%s), under which the compiler caps each thread's registers for such a block and spills the rest, so on a GPU they launch: declare Registers within that cap (at most %d / threads) to simulate them", lb, d.MaxRegistersPerBlock)
	}
	return w, nil
}

// compile compiles the default configuration (the reference, else
// the first) and up to n others drawn at random (seeded) with NVRTC for
// d's compute capability, where NVRTC can be loaded.
func compile(ctx context.Context, s *spec.Spec, sp *space.Space, d *device.Description, n int, cf *report.CheckFile) {
	if !d.IsCUDA() {
		cf.NotChecked = append(cf.NotChecked, fmt.Sprintf("compilation: %s is not a CUDA GPU", d.Name))
		return
	}
	if rt := s.Routine(); rt != nil {
		// A library routine is not compiled: what a run needs is its
		// library.
		p, err := s.Problem()
		if err == nil {
			err = cuda.RoutinesAvailable(p)
		}
		if err != nil {
			msg, _, _ := strings.Cut(err.Error(), " (searched")
			cf.NotChecked = append(cf.NotChecked, "the library: "+msg)
			return
		}
		cf.Checked = append(cf.Checked, fmt.Sprintf("the library: libcublas loads, with %s", rt.Symbol))
		return
	}
	idx := []int{0}
	if cfg, ok, _ := s.ReferenceConfig(); ok {
		if ix, ok := sp.IndexesOf(cfg); ok {
			if i, ok := sp.IndexOf(ix); ok {
				idx[0] = i
			}
		}
	}
	r := rand.New(rand.NewPCG(1, uint64(sp.Len())))
	for _, i := range r.Perm(sp.Len()) {
		if len(idx) > n {
			break
		}
		if i != idx[0] {
			idx = append(idx, i)
		}
	}
	compiled := 0
	for _, i := range idx {
		plan, err := s.Plan(sp.Values(i))
		if err != nil {
			cf.Problems = append(cf.Problems, fmt.Sprintf("%s: configuration %s: %v", s.Path, sp.Key(i), err))
			continue
		}
		j := plan.Launches[0].Job
		src := cmp.Or(j.Source, s.Source)
		_, err = cuda.Compile(ctx, cuda.CompileRequest{Source: src, SourceName: s.KernelFile, KernelName: s.KernelName,
			Options: s.CompilerOptions, Defines: j.Defines, ComputeMajor: d.ComputeMajor, ComputeMinor: d.ComputeMinor})
		var ce *backend.CompileError
		switch {
		case errors.As(err, &ce):
			lines := strings.Split(strings.TrimSpace(ce.Log), "\n")
			cf.Problems = append(cf.Problems, fmt.Sprintf("%s: configuration %s does not compile: %s", s.Path, sp.Key(i), strings.Join(lines[:min(len(lines), 4)], " | ")))
		case err != nil:
			msg, _, _ := strings.Cut(err.Error(), " (searched")
			cf.NotChecked = append(cf.NotChecked, "compilation: "+msg)
			return
		default:
			compiled++
		}
	}
	cf.Checked = append(cf.Checked, fmt.Sprintf("compilation with NVRTC for sm_%d%d: %d of %d configurations compile", d.ComputeMajor, d.ComputeMinor, compiled, len(idx)))
}

// includes looks for the files the kernel source includes: a quoted
// one from the kernel's folder on (a problem when missing: NVRTC would say
// "cannot open source file"), one in angle brackets in the include folders
// and the CUDA toolkit's where a toolkit is here (NVRTC provides some
// standard headers itself, so one missing there is a warning), else it
// says they were not checked.
func includes(s *spec.Spec, cf *report.CheckFile) {
	toolkit := cuda.ToolkitIncludeDirs()
	found := func(name string, in []string) bool {
		for _, d := range in {
			if fi, err := os.Stat(filepath.Join(d, name)); err == nil && !fi.IsDir() {
				return true
			}
		}
		return false
	}
	var angle []string
	for _, inc := range s.Includes() {
		dirs := append(s.IncludeDirs(inc.Angle), toolkit...)
		switch {
		case !inc.Angle && !found(inc.Name, dirs):
			cf.Problems = append(cf.Problems, fmt.Sprintf("%s:%d: #include \"%s\": no such file in %s or the spec's include folders (the kernel cannot compile)", s.KernelFile, inc.Line, inc.Name, filepath.Dir(s.KernelFile)))
		case inc.Angle && len(toolkit) > 0 && !found(inc.Name, dirs):
			cf.Warnings = append(cf.Warnings, fmt.Sprintf("%s:%d: #include <%s> is not in the CUDA toolkit's include folders (%s); NVRTC provides some standard headers itself", s.KernelFile, inc.Line, inc.Name, strings.Join(toolkit, ", ")))
		case inc.Angle && len(toolkit) == 0:
			angle = append(angle, "<"+inc.Name+">")
		}
	}
	if len(angle) > 0 {
		cf.NotChecked = append(cf.NotChecked, "headers "+strings.Join(angle, ", ")+": no CUDA toolkit here")
	}
}

// ArgumentsFit refuses a spec whose arguments take more memory than d
// has (bad input, badinput: the same message in check and tune).
func ArgumentsFit(s *spec.Spec, d *device.Description) error {
	if need := s.WorkingSetBytes(); d.MemoryBytes > 0 && need > d.MemoryBytes {
		return badinput.New("%s: KernelSpecification.Arguments: the arguments take %.2f GiB, more than the %s's %.2f GiB", s.Path, float64(need)/(1<<30), d.Name, float64(d.MemoryBytes)/(1<<30))
	}
	return nil
}

// workloadFile checks a workload file into cf: the file and its
// kernels' specs, the combined search space, each kernel's
// configurations against the simulated GPU's launch limits, the plan's
// measurement. Compiling is left to each spec's check. Errors: the
// first problem found.
func workloadFile(ctx context.Context, path string, f Options, cf *report.CheckFile) error {
	set, err := workload.Load(path)
	if err != nil {
		return badinput.Wrap(err)
	}
	cf.Checked = append(cf.Checked, fmt.Sprintf("workload file and its %d kernels' specs (keys, values, kernel sources)", len(set.Members)))
	sp, _, err := set.NonEmptySpace(ctx, false, f.MaxConfigurations)
	if err != nil {
		return err
	}
	cf.Configurations = sp.Len()
	cf.Checked = append(cf.Checked, "the combined search space")
	d, err := registry.SimulatedGPU(f.SimDevice, set.Members[0].Spec)
	if err != nil {
		return err
	}
	var warn strings.Builder
	if err := WorkloadMembers(ctx, set, d, &warn); err != nil {
		return err
	}
	cf.Warnings = append(cf.Warnings, Lines(warn.String())...)
	cf.Checked = append(cf.Checked, fmt.Sprintf("each kernel's configurations: expressions, and thread block, grid and shared memory against the %s's launch limits", d.Name))
	if _, err := set.Request(); err != nil {
		return badinput.Wrap(err)
	}
	cf.NotChecked = append(cf.NotChecked, "compilation of the kernels (check each spec)")
	return nil
}

// LimitsOf are d's launch limits for spec.GeometryFit.
func LimitsOf(d *device.Description) spec.GeometryLimits {
	return spec.GeometryLimits{Name: d.Name, MaxThreadsPerBlock: d.MaxThreadsPerBlock, MaxBlockDims: d.MaxBlockDims,
		MaxGridDims: d.MaxGridDims, SharedMemoryPerBlockOptin: d.SharedMemoryPerBlockOptin}
}

// GeometryFit checks s's configurations in sp against d's launch limits
// (spec.GeometryFit). It refuses (bad input) a spec whose reference
// configuration cannot launch on d, or none of whose configurations can:
// tune would fail after compiling and launching them. Some over the
// limits is a warning (returned): those are recorded as launch_failed,
// as Kernel Tuner skips them. where names the kernel in a workload ("":
// a spec alone).
func GeometryFit(ctx context.Context, s *spec.Spec, sp *space.Space, d *device.Description, where string) (warning string, err error) {
	lim := LimitsOf(d)
	if why := s.ReferenceFits(lim); why != "" {
		return "", badinput.New("%s%s: Gtune.Reference.Configuration cannot launch: %s", where, s.Path, why)
	}
	over, checked, first, err := s.GeometryFit(ctx, sp, lim)
	switch {
	case err != nil:
		return "", badinput.Wrap(err)
	case over > 0 && over == checked:
		return "", badinput.New("%s%s: no configuration can launch on the %s: all %d exceed its limits (%s)", where, s.Path, d.Name, checked, first)
	case over > 0:
		return fmt.Sprintf("%s%s: %d of %d configurations exceed the %s's launch limits and will be recorded as launch_failed (%s)", where, s.Path, over, checked, d.Name, first), nil
	}
	return "", nil
}

// WorkloadMembers checks each kernel of a workload as a spec alone
// is checked: every configuration's expressions (spec.CheckJobs) over
// the kernel's narrowed space, and its geometry against d. Warnings are
// written to warn.
func WorkloadMembers(ctx context.Context, set *workload.Set, d *device.Description, warn io.Writer) error {
	for i, m := range set.Members {
		sp, err := set.MemberSpace(ctx, i, space.BuildOptions{})
		if err != nil {
			return badinput.Wrap(err)
		}
		if err := m.Spec.CheckJobs(ctx, sp); err != nil {
			return badinput.Wrap(fmt.Errorf("kernel %q: %w", m.Name, err))
		}
		w, err := GeometryFit(ctx, m.Spec, sp, d, fmt.Sprintf("kernel %q: ", m.Name))
		if err != nil {
			return err
		}
		if w != "" {
			fmt.Fprintln(warn, w)
		}
	}
	return nil
}
