// Package model holds gtune's performance and power models of a GPU: a
// device (device.Description: its specifications and, later, its measured
// profile) times a kernel's work (Work: FLOP, DRAM bytes,
// registers, shared memory) under GPU settings gives the time of a launch,
// its board power and temperature (Predict, the equations at Prediction);
// several launches sharing the SMs go through the block-scheduler model
// (ConcurrentTimes). The simulated GPU (backend/sim) answers with these
// models, and so will the projection across GPUs
// (../shared/papers/performance-projection-heterogeneous-gpus.md): one
// model, not one per user of it.
//
// Power follows the CMOS P ∝ C·V²·f of
// ../shared/papers/autotuning-energy-efficiency-power-capping.md eq. 2.3;
// the calibrations are PowerModelFor's (an H100 and an A100 for the
// default, the published K20m figures for the K20 boards).
package model
