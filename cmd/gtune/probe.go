package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/flagrange"
	"github.com/gtune/gtune/internal/progress"
	"github.com/gtune/gtune/model"
	"github.com/gtune/gtune/probe"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/store"
)

func init() { subcommands = append(subcommands, newProbeCmd) }

func newProbeCmd() *cobra.Command {
	var f tuneFlags
	var asJSON, power bool
	var iterations int
	c := &cobra.Command{
		Use:   "probe",
		Short: "Measure the GPU's device profile with microbenchmarks and store it (instruction, memory, shared-memory, L2 and launch throughput)",
		Long: `probe runs gtune's microbenchmarks on one GPU, compiled and launched through gtune's backend like any tuned
kernel (performance-projection-heterogeneous-gpus.md section IV-B): FP32, FP64, 32-bit integer multiply-add
and special-function throughput at full occupancy; coalesced loads (float4, float), stores, copies, scattered
loads (a float per 32-byte sector) and conflict-free shared-memory loads at 1, 2, 4, ... resident 256-thread
blocks per SM; 32-way bank conflicts; loads of a working set L2 holds; an empty launch. The median of
--iterations timed runs of each. The profile (device, clocks observed, driver, date) is stored in the results
database, where gtune devices --all and the projection find it, and printed against the device database's
specifications. Read-only: no GPU setting is changed. On the simulated GPU it gives what the simulator's
model answers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runProbe(cmd, f, asJSON, power, iterations) },
	}
	fl := c.Flags()
	fl.StringVar(&f.backend, "backend", "auto", "GPU backend: auto, cuda or sim")
	flagrange.Int(fl, &f.device, "device", 0, 0, 1023, "GPU index (CUDA device ordinal)")
	fl.StringVar(&f.simDevice, "sim-device", "h100_sxm", "device-database id of the simulated GPU")
	fl.StringVar(&f.db, "db", "gtune.db", "results database (SQLite) the profile is stored in")
	fl.BoolVar(&asJSON, "json", false, "print one JSON document: the profile, the specification's, where it was stored")
	flagrange.Int(fl, &iterations, "iterations", 10, 1, 10_000, "timed runs of each microbenchmark (the median is taken)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the simulator")
	fl.BoolVar(&power, "power", true, "also measure the board's power at eight operating points (idle SMs, busy SMs, FP32 issue, shared-memory loads, DRAM loads and stores; an energy window each) and fit the power model to them (model.FitPowerModel), against gtune's model for the device")
	fl.BoolVar(&f.noProgress, "no-progress", false, "no line per microbenchmark on stderr")
	return c
}

// progressLog is where probe writes a line per microbenchmark: stderr,
// unless --no-progress or --quiet.
func progressLog(cmd *cobra.Command, f tuneFlags) io.Writer {
	if f.noProgress || progress.Quiet {
		return nil
	}
	return cmd.ErrOrStderr()
}

// runProbe measures the GPU's device profile, stores it and prints it
// against the specification's.
func runProbe(cmd *cobra.Command, f tuneFlags, asJSON, power bool, iterations int) error {
	d, err := chooseSimulated(cmd, f.backend, f.simDevice, f.device, "probing")
	if err != nil {
		return err
	}
	db, err := openRunDB(f.db)
	if err != nil {
		return err
	}
	defer db.Close()
	var be backend.Backend
	if d != nil {
		be = sim.New(d, sim.Options{Seed: int64(f.seed)})
	} else {
		if err := cuda.Available(); err != nil {
			return fmt.Errorf("--backend cuda: %w", err)
		}
		if be, err = cuda.Open(cmd.Context(), f.device, cuda.Options{Stderr: cmd.ErrOrStderr()}); err != nil {
			return err
		}
	}
	defer be.Close()
	p, err := probe.Run(cmd.Context(), be, probe.Options{Iterations: iterations, Log: progressLog(cmd, f), Power: power})
	if err != nil {
		return err
	}
	js, err := json.Marshal(p)
	if err != nil {
		return err
	}
	sp := &store.Profile{Device: p.Device, Name: p.Name, UUID: p.UUID, Source: p.Source, JSON: js}
	if err := db.AddProfile(sp); err != nil {
		return err
	}
	var spec *model.Profile
	if d, err := device.Lookup(p.Device); err == nil {
		s := model.SpecProfile(d)
		spec = &s
	}
	if asJSON {
		return report.WriteJSON(cmd.OutOrStdout(), map[string]any{"profile": p, "specification": spec, "stored": sp.ID, "db": db.Path()})
	}
	report.Profile(cmd.OutOrStdout(), p, spec)
	if d, err := device.Lookup(p.Device); err == nil {
		report.PowerAgainst(cmd.OutOrStdout(), d, p.PowerReadings)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "stored as device profile %d in %s\n", sp.ID, db.Path())
	return nil
}
