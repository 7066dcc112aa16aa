package report

import (
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/gtune/gtune/store"
)

// A run of a library routine (store.SettingLibrary) is the reference
// point of the runs of kernels measured on the same GPU
// (autotuning-gemm-energy-beast.md section 3.1 draws cuBLAS beside the
// BEAST kernels).

// reference is one valid configuration of a library routine measured on
// one of a run's GPUs, with the run it is of.
type reference struct {
	run  HTMLRun
	eval *store.Evaluation
}

func (r reference) name() string {
	return fmt.Sprintf("%s (%s) %s", r.run.Run.Settings[store.SettingLibrary], r.run.name(), r.eval.Key)
}

// evalGPU is the GPU that measured e, a configuration of run r: its own
// record, else the run's device.
func evalGPU(r *store.Run, e *store.Evaluation) string {
	if e.GPU != "" {
		return e.GPU
	}
	return r.DeviceUUID
}

// runGPUs are the GPUs a run measured on: its device, and every GPU of a
// run over several (the setting "gpus", which a merged run's also holds).
func runGPUs(r *store.Run) []string {
	out := []string{r.DeviceUUID}
	if gs, ok := r.Settings["gpus"].([]any); ok {
		for _, g := range gs {
			if s, ok := g.(string); ok && s != r.DeviceUUID {
				out = append(out, s)
			}
		}
	}
	return out
}

// references are the valid configurations of r's reference runs
// (HTMLRun.References) that hold both of r's hull metrics perf and eff.
func references(r HTMLRun, perf, eff string) []reference {
	var out []reference
	for _, o := range r.References {
		for _, e := range validOf(o.Evals) {
			p, okP := e.Metrics[perf]
			q, okQ := e.Metrics[eff]
			if okP && okQ && !math.IsNaN(p) && !math.IsNaN(q) {
				out = append(out, reference{run: o, eval: e})
			}
		}
	}
	return out
}

// libraryRuns are the runs of library routines among all (db's runs)
// that measured on one of r's GPUs, read from db, each with only the
// configurations measured there (a merged run holds several GPUs'); none
// for a library run.
func libraryRuns(db *store.DB, all []*store.Run, r *store.Run) ([]HTMLRun, error) {
	if r.Settings[store.SettingLibrary] != nil {
		return nil, nil
	}
	gpus := runGPUs(r)
	var out []HTMLRun
	for _, o := range all {
		if o.ID == r.ID || o.Settings[store.SettingLibrary] == nil ||
			!slices.ContainsFunc(runGPUs(o), func(g string) bool { return slices.Contains(gpus, g) }) {
			continue
		}
		run, evals, err := StoredRun(db, fmt.Sprint(o.ID))
		if err != nil {
			return nil, err
		}
		evals = slices.DeleteFunc(evals, func(e *store.Evaluation) bool { return !slices.Contains(gpus, evalGPU(run, e)) })
		if len(evals) > 0 {
			out = append(out, HTMLRun{Run: run, Evals: evals})
		}
	}
	return out, nil
}

// referenceLine says where a reference point lies against the hull h: its
// two metrics as multiples of the fastest's performance and the most
// efficient's efficiency.
func referenceLine(ref reference, h sweepHull, perf, eff string) string {
	p, q := ref.eval.Metrics[perf], ref.eval.Metrics[eff]
	return fmt.Sprintf("reference %s, measured on %s: %s %s, %s %s: %.2f× the fastest's %s, %.2f× the most efficient's %s",
		ref.name(), evalGPU(ref.run.Run, ref.eval), Format(p), perf, Format(q), eff, p/h.Fastest.Metrics[perf], perf, q/h.Frugal.Metrics[eff], eff)
}

// RunsReport prints every run for a terminal (RunReport), each kernel's
// hull followed by its reference points (HTMLRun.References).
func RunsReport(w io.Writer, runs []HTMLRun) {
	for i, r := range runs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		runReport(w, r.Run, r.Evals, r.References)
	}
}
