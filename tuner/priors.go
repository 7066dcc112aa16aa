package tuner

import (
	"fmt"
	"math"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/strategy"
)

// PriorDatabase is the transfer strategy's prior "database": the kernel's
// results on the other GPUs of the run's results database
// (DatabasePriors).
const PriorDatabase = "database"

// DatabasePriors gives the transfer strategy's priors from db: for each
// GPU other than the one of uuid on which the spec of hash specHash ran
// (store.DB.OtherDevices: tune, replay and import runs alike) with at
// least strategy.MinPriorValid configurations of sp measured valid, the
// objective obj's value of every configuration of sp there (from its
// newest evaluation; the reciprocal where obj is maximised, so that lower
// is better as for times), NaN where there is none, or the newest failed
// or is flagged implausible. A configuration a partial run never measured is NaN like
// one that failed: the runs the database keeps searched the good regions,
// so the unmeasured are mostly worse (BENCHMARKS.md, "Transfer from the
// results database": priors from runs of 25 and 100 evaluations).
// None where no other GPU qualifies. Errors: the database's.
func DatabasePriors(db *store.DB, specHash, uuid string, sp *space.Space, obj objective.Objective) ([]strategy.PriorTimes, error) {
	devs, err := db.OtherDevices(specHash, uuid)
	if err != nil {
		return nil, err
	}
	var out []strategy.PriorTimes
	for _, d := range devs {
		v := make([]float64, sp.Len())
		valid := 0
		for i := range v {
			v[i] = math.NaN()
			e, ok := d.Evaluations[sp.Key(i)]
			if !ok || e.Status != string(backend.StatusValid) || e.Observations[implausibleKey] != 0 {
				continue
			}
			x, ok := e.Observations[obj.Name]
			if !ok {
				x, ok = e.Metrics[obj.Name]
			}
			if !ok || !(x > 0) || math.IsInf(x, 0) {
				continue
			}
			if obj.Maximize {
				x = 1 / x
			}
			v[i] = x
			valid++
		}
		if valid >= strategy.MinPriorValid {
			out = append(out, strategy.PriorTimes{Source: fmt.Sprintf("database: %s (%s), %d configurations", d.DeviceName, d.DeviceUUID, valid), TimesMs: v})
		}
	}
	return out, nil
}
