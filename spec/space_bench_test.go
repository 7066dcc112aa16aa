package spec

import (
	"testing"

	"github.com/gtune/gtune/space"
)

func loadBench(tb testing.TB, name string) *Spec {
	s, err := LoadWith(hubSpec(tb, name), LoadOptions{NoSource: true})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// benchBrute measures the reference construction (space.BuildBruteForce:
// every raw configuration against every restriction), to compare with
// BenchmarkBuildSpace* in the same run; it reports bytes/config of the
// stored space too.
func benchBrute(b *testing.B, name string) {
	s := loadBench(b, name)
	b.ReportAllocs()
	var sp *space.Space
	for b.Loop() {
		var err error
		if sp, err = space.BuildBruteForce(s.Params, s.Restrictions, s.Constants); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(sp.BytesPerConfig(), "bytes/config")
}

func BenchmarkBruteForceHotspot(b *testing.B) { benchBrute(b, "hotspot_milo") }
func BenchmarkBruteForceGemm(b *testing.B)    { benchBrute(b, "gemm_milo") }

// Bytes per valid configuration of the stored space (packed codes and the
// membership table), with the table built.
func BenchmarkLookupGemm(b *testing.B) {
	sp, err := loadBench(b, "gemm_milo").BuildSpace()
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = sp.Key(i * sp.Len() / len(keys))
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok := sp.Lookup(keys[i%len(keys)]); !ok {
			b.Fatal("not found")
		}
	}
	b.ReportMetric(sp.BytesPerConfig(), "bytes/config")
}

func BenchmarkNeighborsGemm(b *testing.B) {
	sp, err := loadBench(b, "gemm_milo").BuildSpace()
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range []space.NeighborKind{space.Hamming, space.StrictlyAdjacent, space.Adjacent} {
		b.Run(k.String(), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				sp.Neighbors(i*7919%sp.Len(), k)
			}
		})
	}
}

// Build must give exactly the brute-force space, configuration by
// configuration, on the real specs (hotspot's 4.4 M raw configurations are
// left to BenchmarkBruteForceHotspot to keep the test fast).
func TestBuildSpaceMatchesBruteForce(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
	}{{"convolution_milo", 4362}, {"dedispersion_milo", 11130}, {"gemm_milo", 116928}} {
		s := loadBench(t, c.name)
		fast, err := s.BuildSpace()
		if err != nil {
			t.Fatal(err)
		}
		ref, err := space.BuildBruteForce(s.Params, s.Restrictions, s.Constants)
		if err != nil {
			t.Fatal(err)
		}
		if fast.Len() != c.n || ref.Len() != c.n {
			t.Fatalf("%s: Build %d, brute force %d, want %d", c.name, fast.Len(), ref.Len(), c.n)
		}
		for i := range c.n {
			if fast.Key(i) != ref.Key(i) {
				t.Fatalf("%s: configuration %d is %s, brute force %s", c.name, i, fast.Key(i), ref.Key(i))
			}
		}
		if bpc := fast.BytesPerConfig(); bpc > 32 {
			t.Errorf("%s: %.1f bytes per configuration, want at most 32", c.name, bpc)
		}
	}
}
