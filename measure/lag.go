package measure

// CorrectLag undoes the lag of a slow power sensor with equation 6 of
// multi-kernel-autotuning-performance-energy.md (after Burtscher et al.):
//
//	P̂(t_i) = P_m(t_i) + C · (P_m(t_{i+1}) − P_m(t_{i−1})) / (t_{i+1} − t_{i−1})
//
// with C the sensor's capacitance, s (device.Description.SensorCapacitanceS:
// 0.833 for a K20c, 0.79 for a K40c). It models the sensor as a first-order
// low-pass filter, P_m' = (P − P_m)/C, whose inverse this is with a
// central difference; the end samples use one-sided differences. Integrate
// the result (IntegrateSamples) over the kernel's interval.
//
// It applies to GPUs whose sensor lags the load by about a second (Kepler,
// Maxwell). It does not apply to Hopper: an H100's counter and 20 ms
// samples follow a step within one sample (C = 0 in the device database),
// and differentiating its noise would only add error. C ≤ 0 or fewer than
// two samples return a copy of samples unchanged.
func CorrectLag(samples []PowerSample, c float64) []PowerSample {
	out := append([]PowerSample(nil), samples...)
	n := len(samples)
	if c <= 0 || n < 2 {
		return out
	}
	for i := range samples {
		lo, hi := max(i-1, 0), min(i+1, n-1)
		dt := samples[hi].At.Sub(samples[lo].At).Seconds()
		if dt <= 0 {
			continue
		}
		out[i].W = samples[i].W + c*(samples[hi].W-samples[lo].W)/dt
	}
	return out
}
