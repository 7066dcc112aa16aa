package backend

import "testing"

type plain struct{ Backend }

type declaring struct {
	Backend
	t Traits
}

func (d declaring) Traits() Traits { return d.t }

type wrapper struct{ Backend }

func (w wrapper) Unwrap() Backend { return w.Backend }

// TraitsOf reads what a backend declares, through wrappers (the
// GPU-settings session's); one that declares nothing is a real GPU's.
func TestTraitsOf(t *testing.T) {
	sim := declaring{t: Traits{InstantCompile: true, Modelled: true, DeclaredResources: true}}
	if got := TraitsOf(wrapper{wrapper{sim}}); got != sim.t {
		t.Errorf("through two wrappers: %+v, want %+v", got, sim.t)
	}
	if got := TraitsOf(wrapper{plain{}}); got != (Traits{}) {
		t.Errorf("a real GPU's: %+v, want none", got)
	}
}
