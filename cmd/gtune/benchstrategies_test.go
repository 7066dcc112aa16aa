package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBenchStrategiesJSON(t *testing.T) {
	const c = "../../../shared/datasets/benchmark_hub/dedispersion_milo_A100.json.gz"
	if _, err := os.Stat(c); err != nil {
		t.Skipf("benchmark_hub cache %s not present: %v", c, err)
	}
	specs := filepath.Dir(hubSpec(t, "dedispersion_milo.T1.json"))
	var out, errb bytes.Buffer
	code := run([]string{"bench-strategies", "--cache", c, "--spec-dir", specs, "--strategy", "brute_force",
		"--strategy", "greedy_ils", "--seeds", "2", "--budgets", "25,100", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var doc struct {
		Problems []struct {
			Name  string `json:"name"`
			Valid int    `json:"valid"`
		} `json:"problems"`
		Results []struct {
			Strategy string    `json:"strategy"`
			Runs     int       `json:"runs"`
			Fraction []float64 `json:"fraction_of_optimum"`
			Success  []float64 `json:"success_rate"`
		} `json:"results"`
		Mean []json.RawMessage `json:"mean"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Problems) != 1 || doc.Problems[0].Name != "dedispersion_milo_A100" || doc.Problems[0].Valid != 11130 {
		t.Fatalf("problems %+v", doc.Problems)
	}
	if len(doc.Results) != 2 || doc.Results[0].Strategy != "brute_force" || doc.Results[0].Runs != 2 || len(doc.Results[1].Fraction) != 2 || len(doc.Mean) != 2 {
		t.Fatalf("results %+v", doc.Results)
	}
	// brute_force is the same for every seed: both runs agree, and its
	// best time only improves with the budget.
	f := doc.Results[0].Fraction
	if !(f[0] > 0 && f[0] <= f[1] && f[1] <= 1) {
		t.Fatalf("brute_force fractions %v", f)
	}
}

func TestBenchStrategiesBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"bench-strategies", "--budgets", "100,25"},
		{"bench-strategies", "--budgets", "a"},
		{"bench-strategies", "--seeds", "0"},
		{"bench-strategies", "--strategy", "nope", "--cache", "x.json"},
		{"bench-strategies", "--strategy-param", "popsize=3", "--cache", "x.json"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != exitBadInput || !strings.Contains(errb.String(), "gtune:") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}

func TestBenchStrategiesTransferPriors(t *testing.T) {
	const hub = "../../../shared/datasets/benchmark_hub/"
	if _, err := os.Stat(hub + "convolution_milo_A4000.json.gz"); err != nil {
		t.Skipf("benchmark_hub cache %sconvolution_milo_A4000.json.gz not present: %v", hub, err)
	}
	if slices.Contains(benchDefaultStrategies(), "transfer") {
		t.Fatal("transfer is in the default (no-prior) strategy list")
	}
	var out, errb bytes.Buffer
	// The evaluated cache is in the prior pool too: it must not be used.
	code := run([]string{"bench-strategies", "--cache", hub + "convolution_milo_A4000.json.gz", "--spec-dir", hub + "specs",
		"--prior-cache", hub + "convolution_milo_A4000.json.gz", "--prior-cache", hub + "convolution_milo_A6000.json.gz",
		"--prior-cache", hub + "dedispersion_milo_A100.json.gz", "--strategy", "transfer", "--seeds", "1", "--budgets", "5",
		"--strategy-param", "transfer.bo_evals=10", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var doc struct {
		Problems []struct {
			Priors []string `json:"transfer_priors"`
		} `json:"problems"`
		Results []struct {
			Fraction []float64 `json:"fraction_of_optimum"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Problems) != 1 || !slices.Equal(doc.Problems[0].Priors, []string{hub + "convolution_milo_A6000.json.gz"}) {
		t.Fatalf("priors %+v", doc.Problems)
	}
	// A6000's optimum is A4000's third best, 1.1% slower: the first
	// proposal, so at least 1/1.011 of the optimum after 5.
	if f := doc.Results[0].Fraction[0]; f < 0.989 || f > 1 {
		t.Fatalf("fraction after 5: %v", f)
	}
}
