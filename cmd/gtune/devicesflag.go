package main

import (
	"context"
	"fmt"
	"io"

	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/internal/flagrange"
	"github.com/gtune/gtune/spec"
)

// gpuIndexes reads --devices: "all" (every GPU NVML counts; the
// simulated GPU has none to count) or distinct GPU indexes, "0,2,3".
// Errors are bad input.
func gpuIndexes(f tuneFlags) ([]int, error) {
	if strings.TrimSpace(f.devices) == "all" {
		k, err := registry.Resolve(f.backend)
		if err != nil {
			return nil, err
		}
		n, err := k.Count()
		if badinput.Is(err) {
			return nil, badInput("--devices all: %v; name them, e.g. --devices 0,1,2,3 for four simulated GPUs of one model", err)
		}
		if err != nil {
			return nil, fmt.Errorf("--devices all: counting the GPUs: %w", err)
		}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx, nil
	}
	return flagrange.GPUIndexes("--devices", f.devices, 1023)
}

// deviceOrDevices refuses --device beside --devices, whatever the index
// (--device 0, the default's value, too): one names the run's GPU, the
// other its GPUs.
func deviceOrDevices(cmd *cobra.Command) error {
	if cmd.Flags().Changed("device") && cmd.Flags().Changed("devices") {
		return badInput("give --device or --devices, not both")
	}
	return nil
}

// openBackends opens the GPUs a run measures on: --device's alone, or
// with --devices the first as the run's backend (compiling in worker
// processes as --compile-processes says, for every GPU) and the others
// as tuner.Config.GPUs, each its own GPU worker (GPU settings, where the
// run tunes them, are applied to each GPU by its own session:
// gpuctl.Run.AddGPUs). On error nothing is left open.
func openBackends(ctx context.Context, log io.Writer, s *spec.Spec, f tuneFlags) (backend.Backend, []backend.Backend, error) {
	if f.slurm {
		return openSlurmWorkers(ctx, log, s, f)
	}
	if f.devices == "" {
		be, err := openBackend(ctx, log, s, f)
		return be, nil, err
	}
	idx, err := gpuIndexes(f)
	if err != nil {
		return nil, nil, err
	}
	k, err := registry.Resolve(f.backend)
	if err != nil {
		return nil, nil, err
	}
	// A modelled GPU is device 0 of its model; several are told apart
	// by their index.
	at := func(i int) tuneFlags {
		g := f
		g.device, g.simIndex = i, i
		if k.Modelled {
			g.device = 0
		}
		return g
	}
	// Every GPU's worker starts at once (a process, cuInit, a context
	// and NVML each: about half a second on an H100 host, paid once
	// instead of once per GPU); the first's compile processes compile
	// for all.
	bes := make([]backend.Backend, len(idx))
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	for j, i := range idx {
		wg.Go(func() {
			if j == 0 {
				bes[j], errs[j] = openBackend(ctx, log, s, at(i))
				return
			}
			if bes[j], errs[j] = registry.Open(ctx, k, backendOptions(s, at(i))); errs[j] != nil {
				errs[j] = fmt.Errorf("GPU %d: %w", i, errs[j])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			for _, b := range bes {
				if b != nil {
					b.Close()
				}
			}
			return nil, nil, err
		}
	}
	return bes[0], bes[1:], nil
}
