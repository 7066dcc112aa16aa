package main

import (
	"context"
	"fmt"
	"io"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/workload"
)

// This file holds the checks that check and tune (and measure) share, so
// that what tune refuses, check refuses with the same words: each is
// called by both.

// limitsOf are d's launch limits for spec.GeometryFit.
func limitsOf(d *device.Description) spec.GeometryLimits {
	return spec.GeometryLimits{Name: d.Name, MaxThreadsPerBlock: d.MaxThreadsPerBlock, MaxBlockDims: d.MaxBlockDims,
		MaxGridDims: d.MaxGridDims, SharedMemoryPerBlockOptin: d.SharedMemoryPerBlockOptin}
}

// geometryFit checks s's configurations in sp against d's launch limits
// (spec.GeometryFit). It refuses (bad input) a spec whose reference
// configuration cannot launch on d, or none of whose configurations can:
// tune would fail after compiling and launching them. Some over the
// limits is a warning (returned): those are recorded as launch_failed,
// as Kernel Tuner skips them. where names the kernel in a workload ("":
// a spec alone).
func geometryFit(ctx context.Context, s *spec.Spec, sp *space.Space, d *device.Description, where string) (warning string, err error) {
	lim := limitsOf(d)
	if why := s.ReferenceFits(lim); why != "" {
		return "", badInput("%s%s: Gtune.Reference.Configuration cannot launch: %s", where, s.Path, why)
	}
	over, checked, first, err := s.GeometryFit(ctx, sp, lim)
	switch {
	case err != nil:
		return "", inputError{err}
	case over > 0 && over == checked:
		return "", badInput("%s%s: no configuration can launch on the %s: all %d exceed its limits (%s)", where, s.Path, d.Name, checked, first)
	case over > 0:
		return fmt.Sprintf("%s%s: %d of %d configurations exceed the %s's launch limits and will be recorded as launch_failed (%s)", where, s.Path, over, checked, d.Name, first), nil
	}
	return "", nil
}

// checkWorkloadMembers checks each kernel of a workload as a spec alone
// is checked: every configuration's expressions (spec.CheckJobs) over
// the kernel's narrowed space, and its geometry against d. Warnings are
// written to warn.
func checkWorkloadMembers(ctx context.Context, set *workload.Set, d *device.Description, warn io.Writer) error {
	for i, m := range set.Members {
		sp, err := set.MemberSpace(ctx, i, space.BuildOptions{})
		if err != nil {
			return inputError{err}
		}
		if err := m.Spec.CheckJobs(ctx, sp); err != nil {
			return inputError{fmt.Errorf("kernel %q: %w", m.Name, err)}
		}
		w, err := geometryFit(ctx, m.Spec, sp, d, fmt.Sprintf("kernel %q: ", m.Name))
		if err != nil {
			return err
		}
		if w != "" {
			fmt.Fprintln(warn, w)
		}
	}
	return nil
}
