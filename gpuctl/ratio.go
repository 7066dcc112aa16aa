package gpuctl

// CapSample is one configuration's mean power (W) and the power limit in
// force while it ran (W).
type CapSample struct {
	PowerW float64
	CapW   float64
}

// CappingTolW is the thesis's closeness to the power cap: a configuration
// whose mean power is within 10 W of the power limit is one the power
// limit could influence (autotuning-energy-efficiency-power-capping.md
// section 3: "if the power capping level is 100 watts and the average
// power consumption ... is in the range of 90 to 100 watts").
const CappingTolW = 10

// CappingRatio is the power-capping ratio of
// autotuning-energy-efficiency-power-capping.md section 3: the power
// capping size (configurations whose mean power is at least CapW − tolW)
// over the number of configurations. near is the capping size, total the
// number of samples; ratio is 0 without samples.
func CappingRatio(samples []CapSample, tolW float64) (ratio float64, near, total int) {
	for _, s := range samples {
		if s.CapW > 0 && s.PowerW >= s.CapW-tolW {
			near++
		}
	}
	total = len(samples)
	if total > 0 {
		ratio = float64(near) / float64(total)
	}
	return ratio, near, total
}
