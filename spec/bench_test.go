package spec

import "testing"

func benchBuild(b *testing.B, name string) {
	s, err := LoadWith(hubSpec(b, name), LoadOptions{NoSource: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.BuildSpace(); err != nil {
			b.Fatal(err)
		}
	}
}

// Target: 50 ms or less each.
func BenchmarkBuildSpaceHotspot(b *testing.B) { benchBuild(b, "hotspot_milo") }
func BenchmarkBuildSpaceGemm(b *testing.B)    { benchBuild(b, "gemm_milo") }
