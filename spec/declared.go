package spec

import (
	"slices"
	"strings"

	"github.com/gtune/gtune/beast"
)

// declared builds the tunable parameters and restrictions of the declared
// space name (Gtune.DeclaredSpace) (beast.Texts) with the spec's
// constants as its device limits, or LoadOptions.Device's where given
// (beast.Space.AsParams): a spec that
// tunes BEAST's DGEMM space for the GPU whose limits its constants give,
// where `gtune space --beast` only counts it. rawParams is how many
// ConfigurationSpace.TuningParameters the file gives: none may be given
// beside a declared space. Errors name Gtune.DeclaredSpace: an unknown
// name, parameters given too, a device limit the constants lack, a space
// without a configuration, or an iterator named like a constant.
func (l *loader) declared(name string, rawParams int) error {
	const field = "Gtune.DeclaredSpace"
	s := l.s
	text, ok := beast.Texts[name]
	if !ok {
		known := make([]string, 0, len(beast.Texts))
		for k := range beast.Texts {
			known = append(known, k)
		}
		slices.Sort(known)
		return l.errf(field, "unknown declared space %q (known: %s)", name, strings.Join(known, ", "))
	}
	if rawParams > 0 {
		return l.errf(field, "the declared space %s gives the tunable parameters: leave ConfigurationSpace.TuningParameters out", name)
	}
	if l.device != nil {
		// The GPU tuned: its limits in place of the Constants' (which
		// keep the names the filters read).
		for k, v := range beast.DeviceConstants(l.device) {
			s.Constants[k] = v
		}
	}
	bs, err := beast.Parse(text, s.Constants)
	if err == nil {
		s.Params, s.Restrictions, err = bs.AsParams(name)
	}
	if err != nil {
		return l.errf(field, "%v (the device limits are Gtune.Constants: %s)", err, strings.Join(beast.ConstantNames(), ", "))
	}
	s.paramIndex = map[string]int{}
	for i, p := range s.Params {
		s.paramIndex[p.Name] = i
		s.Types = append(s.Types, "")
	}
	return nil
}
