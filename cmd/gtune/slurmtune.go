package main

import (
	"context"
	"io"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/slurm"
	"github.com/gtune/gtune/spec"
)

// openSlurmWorkers starts one GPU worker per GPU of the allocation
// (slurm.OpenWorkers) as the flags say. Errors: --device or --devices
// beside it, GPU settings (applied through NVML from the process that
// holds the GPU, which is not this one), the workers'.
func openSlurmWorkers(ctx context.Context, log io.Writer, s *spec.Spec, f tuneFlags) (backend.Backend, []backend.Backend, error) {
	if f.devices != "" || f.device != 0 {
		return nil, nil, badInput("--slurm uses every GPU of the allocation: not with --device or --devices")
	}
	if f.gpu.Strategy != "" || f.gpu.Allow {
		return nil, nil, badInput("--slurm does not combine with GPU settings: they are applied from the process holding the GPU, and the workers hold them on other nodes")
	}
	return slurm.OpenWorkers(ctx, log, slurm.WorkerOptions{Srun: f.srun, Nodes: f.slurmNodes, PerNode: f.slurmGPUsPerNode, Simulated: modelled(f.backend),
		Sim:     registry.Options{Seed: int64(f.seed), SimDevice: f.simDevice, RunWall: f.simRunWall, Spec: s, AllowSettings: allowSettings(f), ProfileDB: f.db},
		Silence: f.workerSilence, CompileProcs: f.compileProcs, CompileTimeout: f.compileTimeout, Interrupt: f.interrupt})
}

// remoteWorkerMain runs this process as a simulated GPU's remote worker
// (slurm.WorkerMain).
func remoteWorkerMain(args []string) int { return slurm.WorkerMain(args, exitBadInput) }
