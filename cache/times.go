package cache

import (
	"fmt"
	"math"

	"github.com/gtune/gtune/space"
)

// BySpace gives the cache entry of each configuration of sp, by space
// index (nil where the cache has none); the cache's parameters are matched
// to sp's by name (the cache may have more). Entries whose parameter count
// does not match the cache's header are skipped. Errors: a tunable
// parameter of sp the cache lacks (naming both).
func (c *Cache) BySpace(sp *space.Space) ([]*Entry, error) {
	pos := map[string]int{}
	for j, n := range c.ParamNames {
		pos[n] = j
	}
	params := sp.Params()
	perm := make([]int, len(params))
	for k, par := range params {
		j, ok := pos[par.Name]
		if !ok {
			return nil, fmt.Errorf("cache %s has no tunable parameter %q of the search space", c.Path, par.Name)
		}
		perm[k] = j
	}
	out := make([]*Entry, sp.Len())
	vals := make([]any, len(params))
	for _, e := range c.Entries {
		if len(e.Params) != len(c.ParamNames) {
			continue
		}
		for k, j := range perm {
			vals[k] = e.Params[j]
		}
		if i, ok := sp.Lookup(KeyOf(vals)); ok {
			out[i] = e
		}
	}
	return out, nil
}

// SpaceTimes gives the recorded time (ms) of each configuration of sp, by
// space index, NaN where the configuration failed, has no positive time
// or is not in the cache (matched as BySpace does). These are a prior
// device's times for the transfer strategy (strategy.PriorTimes). Errors:
// those of BySpace, and no valid time of sp's configurations in the cache.
func (c *Cache) SpaceTimes(sp *space.Space) ([]float64, error) {
	entries, err := c.BySpace(sp)
	if err != nil {
		return nil, err
	}
	t := make([]float64, len(entries))
	valid := 0
	for i, e := range entries {
		t[i] = math.NaN()
		if e != nil && e.Valid() && e.Time > 0 {
			t[i] = e.Time
			valid++
		}
	}
	if valid == 0 {
		return nil, fmt.Errorf("cache %s has no valid time for a configuration of the search space", c.Path)
	}
	return t, nil
}

// LoadSpaceTimes is Load then SpaceTimes: the times (ms) of sp's
// configurations in the cache file at path. Errors: those of Load and of
// SpaceTimes.
func LoadSpaceTimes(path string, sp *space.Space) ([]float64, error) {
	c, err := Load(path)
	if err != nil {
		return nil, err
	}
	return c.SpaceTimes(sp)
}
