package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/workload"
)

func init() { subcommands = append(subcommands, newCheckCmd) }

type checkFlags struct {
	simDevice     string
	compileSample int
	asJSON        bool
	limits        spaceLimits
}

func newCheckCmd() *cobra.Command {
	var f checkFlags
	c := &cobra.Command{
		Use:   "check SPEC|WORKLOAD...",
		Short: "Check specs and workloads without a GPU: every problem a run would meet before its first evaluation, all at once",
		Long: `check runs, for each file, what gtune tune checks before any GPU work — the spec's keys and values
(unknown keys with the key meant), the kernel source (text, KernelName, brackets, the argument list
against the kernel's parameters), the objective and strategy, the search space, every configuration's
grid, thread block, shared memory and simulated work — and what a run would only meet on the GPU: the
arguments against the device's memory, and where NVRTC is found, the compilation of the default
configuration and a sample of others. It lists every file's problems, says what it could not check
here, and exits 2 when any file has a problem (0 otherwise).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var files []report.CheckFile
			bad := 0
			for _, p := range args {
				cf := checkFile(cmd.Context(), p, f)
				if len(cf.Problems) > 0 {
					bad++
				}
				files = append(files, cf)
			}
			if f.asJSON {
				if err := report.CheckJSON(cmd.OutOrStdout(), files); err != nil {
					return err
				}
			} else {
				report.CheckText(cmd.OutOrStdout(), files)
			}
			if bad > 0 {
				return badInput("check: %d of %d file(s) have problems", bad, len(args))
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.simDevice, "sim-device", "", "device-database id of the GPU to check against (default: the spec's Gtune.Simulation.Device, else h100_sxm)")
	intFlag(fl, &f.compileSample, "compile-sample", 4, 0, 1000, "configurations compiled besides the default one, where NVRTC is found")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON document")
	addSpaceFlags(fl, &f.limits)
	return c
}

// problems0 splits text into its non-empty lines.
func problems0(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// problems splits an error into its lines (errors.Join of several).
func problems(err error) []string {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func checkFile(ctx context.Context, path string, f checkFlags) report.CheckFile {
	cf := report.CheckFile{Path: path}
	fail := func(err error) report.CheckFile {
		cf.Problems = append(cf.Problems, problems(err)...)
		return cf
	}
	if workload.IsFile(path) {
		if err := checkWorkloadFile(ctx, path, f, &cf); err != nil {
			return fail(err)
		}
		return cf
	}
	s, err := spec.Load(path)
	if err != nil {
		return fail(err)
	}
	cf.Checked = append(cf.Checked, "spec keys and values", "kernel source: "+strings.Join(slices.DeleteFunc([]string{"text", "KernelName", s.BracketsChecked, "arguments against the kernel's parameters"}, func(x string) bool { return x == "" }), ", "))
	if s.BracketsChecked == "" {
		cf.NotChecked = append(cf.NotChecked, "the kernel source's brackets (see the warning)")
	}
	checkIncludes(s, &cf)
	cf.Warnings = append(cf.Warnings, s.Warnings...)
	if _, err := resolveObjectives(s, ""); err != nil {
		cf.Problems = append(cf.Problems, problems(err)...)
	}
	if _, err := resolveStrategy(s, ""); err != nil {
		cf.Problems = append(cf.Problems, problems(err)...)
	}
	sp, err := buildSpace(ctx, s, f.limits)
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
	d, err := registry.SimulatedGPU(f.simDevice, s)
	if err != nil {
		return fail(err)
	}
	if err := argumentsFit(s, d); err != nil {
		cf.Problems = append(cf.Problems, err.Error())
	} else {
		cf.Checked = append(cf.Checked, fmt.Sprintf("argument sizes against the %s's memory", d.Name))
	}
	if w, err := geometryFit(ctx, s, sp, d, ""); err != nil {
		cf.Problems = append(cf.Problems, problems(err)...)
	} else {
		if w != "" {
			cf.Warnings = append(cf.Warnings, w)
		}
		cf.Checked = append(cf.Checked, fmt.Sprintf("thread block, grid and shared memory against the %s's launch limits", d.Name))
	}
	checkCompile(ctx, s, sp, d, f.compileSample, &cf)
	return cf
}

// checkCompile compiles the default configuration (the reference, else
// the first) and up to n others drawn at random (seeded) with NVRTC for
// d's compute capability, where NVRTC can be loaded.
func checkCompile(ctx context.Context, s *spec.Spec, sp *space.Space, d *device.Description, n int, cf *report.CheckFile) {
	if !d.IsCUDA() {
		cf.NotChecked = append(cf.NotChecked, fmt.Sprintf("compilation: %s is not a CUDA GPU", d.Name))
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

// checkIncludes looks for the files the kernel source includes: a quoted
// one from the kernel's folder on (a problem when missing: NVRTC would say
// "cannot open source file"), one in angle brackets in the include folders
// and the CUDA toolkit's where a toolkit is here (NVRTC provides some
// standard headers itself, so one missing there is a warning), else it
// says they were not checked.
func checkIncludes(s *spec.Spec, cf *report.CheckFile) {
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

// argumentsFit refuses a spec whose arguments take more memory than d has
// (bad input, the same message in check and tune).
func argumentsFit(s *spec.Spec, d *device.Description) error {
	if need := s.WorkingSetBytes(); d.MemoryBytes > 0 && need > d.MemoryBytes {
		return badInput("%s: KernelSpecification.Arguments: the arguments take %.2f GiB, more than the %s's %.2f GiB", s.Path, float64(need)/(1<<30), d.Name, float64(d.MemoryBytes)/(1<<30))
	}
	return nil
}

// checkWorkloadFile checks a workload file into cf: the file and its
// kernels' specs, the combined search space, each kernel's
// configurations against the simulated GPU's launch limits, the plan's
// measurement. Compiling is left to each spec's check. Errors: the
// first problem found.
func checkWorkloadFile(ctx context.Context, path string, f checkFlags, cf *report.CheckFile) error {
	set, err := loadWorkload(path)
	if err != nil {
		return err
	}
	cf.Checked = append(cf.Checked, fmt.Sprintf("workload file and its %d kernels' specs (keys, values, kernel sources)", len(set.Members)))
	sp, _, err := workloadSpace(ctx, set, false, f.limits.maxConfigs)
	if err != nil {
		return err
	}
	cf.Configurations = sp.Len()
	cf.Checked = append(cf.Checked, "the combined search space")
	d, err := registry.SimulatedGPU(f.simDevice, set.Members[0].Spec)
	if err != nil {
		return err
	}
	var warn strings.Builder
	if err := checkWorkloadMembers(ctx, set, d, &warn); err != nil {
		return err
	}
	cf.Warnings = append(cf.Warnings, problems0(warn.String())...)
	cf.Checked = append(cf.Checked, fmt.Sprintf("each kernel's configurations: expressions, and thread block, grid and shared memory against the %s's launch limits", d.Name))
	if _, err := set.Request(); err != nil {
		return inputError{err}
	}
	cf.NotChecked = append(cf.NotChecked, "compilation of the kernels (check each spec)")
	return nil
}
