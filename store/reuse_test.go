package store

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A re-run's evaluations are its own and those it reused, in the order it
// was told them; a reused one keeps the run that measured it and takes
// the reusing run's objective value. Batched or not, the same.
func TestRunEvaluations(t *testing.T) {
	for _, batch := range []int{0, 8} {
		db := openTemp(t)
		if batch > 0 {
			if err := db.SetBatch(batch, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		r1 := newRun(t, db, "h", "GPU-0")
		var first []*Evaluation
		for _, k := range []string{"a", "b", "c"} {
			e := &Evaluation{RunID: r1.ID, Key: k, Status: "valid", Objective: ptr(1), Observations: map[string]float64{"time": 1}}
			if err := db.Add(e); err != nil {
				t.Fatal(err)
			}
			first = append(first, e)
		}
		r2 := newRun(t, db, "h", "GPU-0")
		// Told: b (reused), d (own), a (reused, not valid under r2), e (own), c (reused).
		if err := db.Reuse(r2.ID, []ReuseLink{{first[1].ID, 0, ptr(5)}}); err != nil {
			t.Fatal(err)
		}
		if err := db.Add(&Evaluation{RunID: r2.ID, Key: "d", Status: "compile_failed", Reason: "x"}); err != nil {
			t.Fatal(err)
		}
		if err := db.Reuse(r2.ID, []ReuseLink{{first[0].ID, 2, nil}}); err != nil {
			t.Fatal(err)
		}
		if err := db.Reuse(r2.ID, []ReuseLink{{first[0].ID, 2, nil}}); err != nil { // told twice: recorded once
			t.Fatal(err)
		}
		if err := db.Add(&Evaluation{RunID: r2.ID, Key: "e", Status: "valid", Objective: ptr(2)}); err != nil {
			t.Fatal(err)
		}
		if err := db.Reuse(r2.ID, []ReuseLink{{first[2].ID, 4, ptr(7)}}); err != nil {
			t.Fatal(err)
		}
		es, err := db.RunEvaluations(r2.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range es {
			obj := "-"
			if e.Objective != nil {
				obj = strconv.FormatFloat(*e.Objective, 'g', -1, 64)
			}
			got = append(got, e.Key+"/"+strconv.FormatInt(e.RunID, 10)+"/"+obj)
		}
		want := "b/1/5 d/2/- a/1/- e/2/2 c/1/7"
		if strings.Join(got, " ") != want {
			t.Errorf("batch %d: RunEvaluations = %s, want %s", batch, strings.Join(got, " "), want)
		}
		// The first run is unchanged, its objectives its own.
		es, err = db.RunEvaluations(r1.ID)
		if err != nil || len(es) != 3 || *es[1].Objective != 1 {
			t.Errorf("batch %d: run 1 = %d evaluations, %v", batch, len(es), err)
		}
		if err := db.Reuse(r2.ID, []ReuseLink{{999, 5, nil}}); !errors.Is(err, ErrNotFound) {
			t.Errorf("batch %d: reuse of an unknown evaluation: %v", batch, err)
		}
		if err := db.Reuse(999, []ReuseLink{{first[0].ID, 5, nil}}); !errors.Is(err, ErrNotFound) {
			t.Errorf("batch %d: reuse by an unknown run: %v", batch, err)
		}
		db.Close()
	}
}

// Reuse records a batch of links in one transaction; a link to an
// unknown evaluation leaves none of its batch.
func TestReuse(t *testing.T) {
	db := openTemp(t)
	r1 := newRun(t, db, "h", "GPU-0")
	var ids []int64
	for _, k := range []string{"a", "b"} {
		e := &Evaluation{RunID: r1.ID, Key: k, Status: "valid", Objective: ptr(1)}
		if err := db.Add(e); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	r2 := newRun(t, db, "h", "GPU-0")
	if err := db.Reuse(r2.ID, []ReuseLink{{ids[0], 0, ptr(3)}, {999, 1, nil}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a batch with an unknown evaluation: %v", err)
	}
	if es, _ := db.RunEvaluations(r2.ID); len(es) != 0 {
		t.Fatalf("a failed batch left %d links", len(es))
	}
	if err := db.Reuse(r2.ID, []ReuseLink{{ids[1], 1, nil}, {ids[0], 0, ptr(3)}, {ids[0], 0, ptr(3)}}); err != nil {
		t.Fatal(err)
	}
	es, err := db.RunEvaluations(r2.ID)
	if err != nil || len(es) != 2 || es[0].Key != "a" || *es[0].Objective != 3 || es[1].Key != "b" || es[1].Objective != nil {
		t.Fatalf("RunEvaluations after Reuse: %d, %v", len(es), err)
	}
}
