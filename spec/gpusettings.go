package spec

import (
	"fmt"

	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// AddParam appends a tunable parameter after the spec's own (gtune tune
// --gpu-settings adds nvml_gr_clock, nvml_mem_clock and nvml_pwr_limit
// this way before BuildSpace). typ is its T1 type ("int", "float", ...);
// a Gtune.Reference configuration takes the first value. No restriction,
// metric or geometry expression of the spec can name it, since they were
// checked at Load. Errors: an empty name, no values, or a name that is
// already a parameter or a constant.
func (s *Spec) AddParam(name, typ string, values []expr.Value) error {
	if name == "" || len(values) == 0 {
		return fmt.Errorf("spec %s: AddParam: a parameter needs a name and values", s.Path)
	}
	if _, dup := s.paramIndex[name]; dup {
		return &Error{File: s.Path, Field: "ConfigurationSpace.TuningParameters", Msg: fmt.Sprintf("%s is already a tunable parameter of the spec", name)}
	}
	if _, dup := s.Constants[name]; dup {
		return &Error{File: s.Path, Field: "Gtune.Constants", Msg: fmt.Sprintf("%s is a constant of the spec and cannot also be a tunable parameter", name)}
	}
	s.paramIndex[name] = len(s.Params)
	s.Params = append(s.Params, space.Param{Name: name, Values: append([]expr.Value(nil), values...)})
	s.Types = append(s.Types, typ)
	if s.refConfig != nil {
		s.refConfig = append(s.refConfig, values[0])
	}
	return nil
}
