package spec

import (
	"fmt"
	"strings"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/library"
	"github.com/gtune/gtune/expr"
)

// checkRoutine checks a spec whose kernel is a library routine (package
// library): its tunable parameters are the routine's own options
// (library.TunableParameters, each value one the library knows) or GPU
// settings, and its arguments are the routine's, sizes included
// (library.Routine.CheckGemm), so that a wrong list is bad input before
// any GPU work rather than a routine reading past a buffer.
func (l *loader) checkRoutine() error {
	s := l.s
	own := library.TunableParameters()
	for i, p := range s.Params {
		field := fmt.Sprintf("ConfigurationSpace.TuningParameters[%d] (%s)", i, p.Name)
		switch p.Name {
		case backend.ParamCoreClock, backend.ParamMemClock, backend.ParamPowerLimit:
			continue
		case library.MathModeParam:
			for _, v := range p.Values {
				if _, err := library.OptionsOf([]backend.Define{{Name: p.Name, Value: defineValue(v)}}); err != nil || v.Kind() != expr.KindString {
					return l.errf(field, "%s is not a math mode (the values are strings: \"%s\")", v, strings.Join(library.MathModeNames(), `", "`))
				}
			}
			continue
		}
		return l.errf(field, "a %s routine has no tunable parameter %s (its own: %s; the GPU's: %s, %s, %s)",
			s.Language, p.Name, strings.Join(own, ", "), backend.ParamCoreClock, backend.ParamMemClock, backend.ParamPowerLimit)
	}
	if _, err := s.routine.CheckGemm(s.args); err != nil {
		return l.errf("KernelSpecification.Arguments", "%v", err)
	}
	return nil
}

// Routine is the library routine the spec names (Language cuBLAS); nil
// for a compiled kernel.
func (s *Spec) Routine() *library.Routine { return s.routine }
