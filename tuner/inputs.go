package tuner

import (
	"context"
	"fmt"
	"io"

	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/strategy"
)

// Provide fills the inputs the run's strategy declares it needs
// (strategy.Needs) and only those: compiled resources
// (NewResourceProvider), the GPU's description with each configuration's
// launch geometry (OccupancyTarget), the kernel's times on other GPUs (the
// caches its prior hyperparameter names, matched to the space by
// cache.LoadSpaceTimes). c.Spec, c.Space, c.Backend, c.DB and
// c.StrategyParams must be set; log receives the resource provider's
// notes. Errors (*ConfigError): an unknown strategy, a GPU missing from
// the device database for a strategy that needs its description, a
// prior cache that cannot be read or does not match the space.
func (c *Config) Provide(ctx context.Context, log io.Writer) error {
	needs, err := strategy.NeedsOf(c.Strategy)
	if err != nil {
		return &ConfigError{err}
	}
	if needs.Resources && c.Resources == nil {
		c.Resources = NewResourceProvider(ctx, log, c.Backend, c.Spec, c.Space, c.DB).Resources
	}
	if needs.Target && c.Target == nil {
		t, err := OccupancyTarget(c.Backend, c.Spec, c.Space)
		if err != nil {
			return &ConfigError{fmt.Errorf("strategy %s: %w", c.Strategy, err)}
		}
		c.Target = t
	}
	if needs.Priors && c.Priors == nil {
		priors, err := strategy.LoadPriors(c.StrategyParams["prior"], func(path string) ([]float64, error) { return cache.LoadSpaceTimes(path, c.Space) })
		if err != nil {
			return &ConfigError{err}
		}
		c.Priors = priors
	}
	return nil
}
