package beast_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/beast"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
)

// examples/dgemm/spec.json writes the DGEMM space (Figure 3 and the
// filters of section 2.3.2, for the H100) as a spec's parameter lists and
// restrictions, with n = 4096 a multiple of the tiles: its configurations
// are exactly those of beast.DGEMM whose blk_m, blk_n and blk_k divide
// 4096 (889 of 2,663).
func TestDGEMMExampleIsTheDeclaredSpace(t *testing.T) {
	s, err := spec.Load(filepath.Join("..", "examples", "dgemm", "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := space.Build(s.Params, s.Restrictions, s.Constants)
	if err != nil {
		t.Fatal(err)
	}
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	b, err := beast.DGEMM(d)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, n := range b.Names() {
		pos[n] = i
	}
	want, all := map[string]bool{}, 0
	err = b.Each(func(cfg []expr.Value) bool {
		all++
		get := func(n string) int64 { v, _ := cfg[pos[n]].Int(); return v }
		if 4096%get("blk_m") != 0 || 4096%get("blk_n") != 0 || 4096%get("blk_k") != 0 {
			return true
		}
		var key []string
		for _, p := range s.Params {
			key = append(key, cfg[pos[p.Name]].String())
		}
		want[strings.Join(key, ",")] = true
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if all != 2663 || len(want) != 889 || sp.Len() != len(want) {
		t.Fatalf("declared space %d, divisible %d, the spec's %d; want 2663, 889, 889", all, len(want), sp.Len())
	}
	for i := range sp.Len() {
		if !want[sp.Key(i)] {
			t.Errorf("the spec's configuration %s is not in the declared space", sp.Key(i))
		}
	}
}
