package beast

import (
	"strings"
	"testing"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// The DGEMM space written as parameters and restrictions builds, through
// package space, exactly the 2,663 configurations the declared space
// enumerates for the H100 (TestDGEMMExampleIsTheDeclaredSpace's count).
func TestAsParamsBuildsTheSameSpace(t *testing.T) {
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	consts := DeviceConstants(d)
	s, err := Parse(Texts["dgemm"], consts)
	if err != nil {
		t.Fatal(err)
	}
	params, rs, err := s.AsParams("dgemm")
	if err != nil {
		t.Fatal(err)
	}
	if len(params) != 10 || len(rs) != 10+14 {
		t.Fatalf("%d parameters, %d restrictions; want 10 and 24 (10 ranges, 14 filters)", len(params), len(rs))
	}
	sp, err := space.Build(params, rs, consts)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = s.Each(func(cfg []expr.Value) bool {
		n++
		var k []string
		for _, v := range cfg {
			k = append(k, v.String())
		}
		if _, ok := sp.Lookup(strings.Join(k, ",")); !ok {
			t.Errorf("%v: enumerated, not in the built space", k)
			return false
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2663 || sp.Len() != n {
		t.Errorf("declared %d, built %d; want 2663 both", n, sp.Len())
	}
}
