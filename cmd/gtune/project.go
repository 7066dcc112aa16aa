package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/internal/flagrange"
	"github.com/gtune/gtune/projection"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/workload"
)

func init() { subcommands = append(subcommands, newProjectCmd) }

type projectFlags struct {
	config    string
	from      string
	ptx       string
	registers int
	devices   string
	db        string
	asJSON    bool
	emulate   bool
	cacheOut  string
	against   []string
	limits    spaceLimits
}

func newProjectCmd() *cobra.Command {
	var f projectFlags
	c := &cobra.Command{
		Use:   "project SPEC",
		Short: "Project a kernel's time on several GPUs without running it, and rank them (device selection)",
		Long: `project gives a configuration's projected time on each GPU of --devices, per
performance-projection-heterogeneous-gpus.md section IV-D: the kernel's work (its Gtune.Simulation section:
FLOP, DRAM bytes, registers, shared memory) over each GPU's device profile at the kernel's occupancy,
t = max(t_compute, t_global, t_local) plus the launch, and ranks the GPUs fastest first. A GPU's profile is
the newest one gtune probe measured on it in --db, else one derived from those measured there of other GPUs
(its architecture's first), else its specifications' (model.SpecProfile), and the table says which. --against
checks the projections against times measured on the GPUs (section V's device selection). Without a Gtune.Simulation section the work comes from emulating one thread block of the kernel's
PTX (section IV-C; package emulate): --emulate takes each configuration's from --db, where a tuning run on a
GPU kept it, --ptx from a file. --config all projects every configuration of the space (for checking against measured runs).
Nothing runs on a GPU.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runProject(cmd.Context(), cmd, args[0], f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.config, "config", "", "configuration key, e.g. 256,4; all: every configuration of the space (default: the spec's reference configuration, else its first)")
	fl.StringVar(&f.devices, "devices", "", "device-database ids to project on, comma-separated, e.g. h100_sxm,h200,a100_40gb (default: every CUDA GPU of the database with compute capability 5.0 or newer)")
	fl.StringVar(&f.db, "db", "gtune.db", "results database whose measured device profiles (gtune probe) are used (left alone when it does not exist)")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON: per configuration, the projections fastest first")
	fl.StringVar(&f.ptx, "ptx", "", "take the kernel's work from emulating its first thread blocks in this PTX file (the configuration's, e.g. from nvcc -ptx with its defines; package emulate) instead of the spec's Gtune.Simulation section")
	fl.BoolVar(&f.emulate, "emulate", false, "take each configuration's work from emulating its first thread blocks in the PTX a tuning run on a GPU kept in --db (the newest evaluation that compiled it), with the registers that run's GPU allotted; configurations none kept are left out")
	fl.StringVar(&f.cacheOut, "write-cache", "", "also write the times projected on each GPU of --devices as a Kernel Tuner cache file DIR/DEVICE.json (a prior for the transfer strategy: bench-strategies --prior-cache, tune --strategy-param transfer.prior=FILE); configurations a GPU cannot launch are marked so, those not projected are absent")
	flagrange.Int(fl, &f.registers, "registers", 0, 0, 255, "with --ptx: registers per thread as the compiler allotted them (ptxas -v; register allocation is after PTX); 0: the spec's Gtune.Simulation Registers, else 32")
	fl.StringSliceVar(&f.against, "against", nil, "check the projections against measured times, for device selection (seed 003 section V: the chosen GPU, the best, the penalty, per configuration and with each GPU at its projected best): tuning runs (RUN of --db, or FILE:RUN) or Kernel Tuner caches (FILE.json, FILE.json.gz), one per GPU, comma-separated or repeated")
	fl.StringVar(&f.from, "from", "", "anchor on a measured run: RUN of --db, or FILE:RUN; each configuration it measured is projected from its measured time on the run's GPU (model.Anchored) instead of from its work alone")
	addSpaceFlags(fl, &f.limits)
	return c
}

func runProject(ctx context.Context, cmd *cobra.Command, path string, f projectFlags) error {
	s, err := loadProjectSpec(path, f)
	if err != nil {
		return err
	}
	devs, err := projection.Devices(f.devices)
	if err != nil {
		return err
	}
	if err := projection.CheckCacheDir(f.cacheOut); err != nil {
		return err
	}
	profiles, err := registry.Profiles(f.db, devs)
	if err != nil {
		return err
	}
	sp, err := buildSpace(ctx, s, f.limits)
	if err != nil {
		return err
	}
	if sp.Len() == 0 {
		return badInput("%s: the search space has no valid configuration", s.Path)
	}
	idx, err := projection.Indexes(s, sp, f.config)
	if err != nil {
		return err
	}
	w := projection.Work{}
	if f.ptx != "" {
		if f.config == "all" || f.from != "" {
			return badInput("--ptx is the PTX of one configuration: give it with --config KEY (not all, not --from); --emulate takes each configuration's PTX from --db")
		}
		if w.Emulated, err = projection.PTXWork(cmd.ErrOrStderr(), s, sp, idx[0], f.ptx, f.registers); err != nil {
			return err
		}
	}
	if f.emulate {
		if w.Kept, idx, err = projection.KeptWork(cmd.ErrOrStderr(), s, sp, idx, f.db); err != nil {
			return err
		}
	}
	if f.from != "" {
		if w.Anchor, idx, err = projection.Anchor(s, sp, idx, f.from, f.db); err != nil {
			return err
		}
	}
	var out []projection.Configuration
	for _, i := range idx {
		pc, ok, err := projection.Project(s, sp, i, devs, profiles, w)
		if err != nil {
			return err
		}
		if ok {
			out = append(out, pc)
		}
	}
	if err := projection.WriteCaches(cmd.ErrOrStderr(), f.cacheOut, s, sp, idx, out, devs); err != nil {
		return err
	}
	sel, err := projection.Against(f.against, f.db, s, out)
	if err != nil {
		return err
	}
	doc := map[string]any{"spec": s.Path, "kernel": s.KernelName, "configurations": out}
	if sel != nil {
		doc["selection"] = sel
	}
	if f.asJSON {
		return report.WriteJSON(cmd.OutOrStdout(), doc)
	}
	for _, pc := range out {
		projection.WriteTable(cmd.OutOrStdout(), s, pc)
	}
	projection.WriteSelection(cmd.OutOrStdout(), s.KernelName, sel)
	return nil
}

// loadProjectSpec loads the spec a projection is of, checking the flags
// that depend on it. Errors are bad input: --registers without --ptx, a
// workload file, --emulate beside --ptx, no work to project.
func loadProjectSpec(path string, f projectFlags) (*spec.Spec, error) {
	if f.registers > 0 && f.ptx == "" {
		return nil, badInput("--registers goes with --ptx (the spec's Gtune.Simulation gives the registers of its work)")
	}
	if workload.IsFile(path) {
		return nil, badInput("%s is a workload file; project takes one kernel's spec (project each kernel of the workload by its spec)", path)
	}
	s, err := spec.Load(path)
	if err != nil {
		return nil, err
	}
	if f.emulate && (f.ptx != "" || f.registers > 0) {
		return nil, badInput("--emulate takes each configuration's PTX and registers from --db: not with --ptx or --registers")
	}
	if s.Simulation == nil && f.ptx == "" && !f.emulate {
		return nil, badInput("%s has no Gtune.Simulation section: the kernel's work (Flops, Bytes, Registers) is what a projection divides by the GPUs' throughputs; give it there, or emulate one thread block of its PTX (--emulate: the PTX a tuning run on a GPU kept in --db; --ptx FILE)", s.Path)
	}
	return s, nil
}
