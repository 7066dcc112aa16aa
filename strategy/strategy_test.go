package strategy

import (
	"slices"
	"strings"
	"testing"
)

func drain(s Strategy, batch int) []int {
	var all []int
	for {
		b := s.Next(batch)
		if len(b) == 0 {
			return all
		}
		all = append(all, b...)
	}
}

func TestBruteForceVisitsAllInOrder(t *testing.T) {
	s, err := New("brute_force", Options{Size: 7})
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(s, 3); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6}) {
		t.Fatalf("got %v", got)
	}
}

func TestRandomSampleIsSeededPermutation(t *testing.T) {
	a, _ := New("random_sample", Options{Size: 100, Seed: 7})
	b, _ := New("random_sample", Options{Size: 100, Seed: 7})
	c, _ := New("random_sample", Options{Size: 100, Seed: 8})
	ga, gb, gc := drain(a, 9), drain(b, 13), drain(c, 9)
	if !slices.Equal(ga, gb) {
		t.Fatal("same seed gave different orders")
	}
	if slices.Equal(ga, gc) {
		t.Fatal("different seeds gave the same order")
	}
	sorted := slices.Clone(ga)
	slices.Sort(sorted)
	for i, v := range sorted {
		if v != i {
			t.Fatalf("not a permutation: %v", sorted)
		}
	}
}

func TestUnknownStrategy(t *testing.T) {
	_, err := New("annealing", Options{Size: 1})
	if err == nil || !strings.Contains(err.Error(), "brute_force, random_sample") {
		t.Fatalf("err = %v", err)
	}
}
