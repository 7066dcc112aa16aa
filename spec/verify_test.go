package spec

import (
	"path/filepath"
	"testing"
)

// A copy without verification has no reference check in its problem;
// the spec it came from keeps its own.
func TestWithoutVerification(t *testing.T) {
	s, err := Load(filepath.Join("..", "examples", "vector_add", "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := s.WithoutVerification()
	p, err := c.Problem()
	if err != nil {
		t.Fatal(err)
	}
	q, err := s.Problem()
	if err != nil {
		t.Fatal(err)
	}
	if p.Kernels[0].Verification != nil || q.Kernels[0].Verification == nil || c.KernelName != s.KernelName {
		t.Errorf("copy verifies: %v; original verifies: %v", p.Kernels[0].Verification != nil, q.Kernels[0].Verification != nil)
	}
}
