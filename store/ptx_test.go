package store

import (
	"bytes"
	"errors"
	"testing"
)

// PTX kept with evaluations: read back by configuration (the newest
// evaluation's), stored once when several share it, and ErrNotFound for
// a configuration that kept none.
func TestPTXRoundTrip(t *testing.T) {
	db := openTemp(t)
	r := newRun(t, db, "spec1", "GPU-1")
	ptxA := []byte(".version 8.8\n.target sm_90\n// a\n")
	ptxB := []byte(".version 8.8\n.target sm_90\n// b\n")
	add := func(key string, regs int, ps ...KernelPTX) {
		t.Helper()
		e := &Evaluation{RunID: r.ID, Key: key, Status: "valid", Objective: ptr(1), Observations: map[string]float64{"time": 1}, Registers: regs, PTX: ps}
		if err := db.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	add("1,1", 30, KernelPTX{Kernel: "k", PTX: ptxA})
	add("1,2", 31, KernelPTX{Kernel: "k", PTX: ptxA}) // same text
	add("2,1", 40, KernelPTX{Kernel: "k", PTX: ptxA})
	add("2,1", 41, KernelPTX{Kernel: "k", PTX: ptxB}) // newer, other text
	add("3,1", 20)                                    // none kept
	if n, texts, err := db.PTXCount("spec1"); err != nil || n != 4 || texts != 2 {
		t.Errorf("PTXCount = %d evaluations, %d texts, %v; want 4, 2", n, texts, err)
	}
	p, err := db.PTXOf("spec1", "1,2")
	if err != nil || !bytes.Equal(p.PTX, ptxA) || p.Registers != 31 || p.Kernel != "k" || p.RunID != r.ID || p.DeviceUUID != "GPU-1" {
		t.Errorf("PTXOf(1,2) = %+v, %v", p, err)
	}
	if p, err := db.PTXOf("spec1", "2,1"); err != nil || !bytes.Equal(p.PTX, ptxB) || p.Registers != 41 {
		t.Errorf("PTXOf(2,1) = %+v, %v; want the newer evaluation's text and 41 registers", p, err)
	}
	for _, k := range [][2]string{{"spec1", "3,1"}, {"spec1", "9,9"}, {"spec2", "1,1"}} {
		if _, err := db.PTXOf(k[0], k[1]); !errors.Is(err, ErrNotFound) {
			t.Errorf("PTXOf(%s, %s) = %v; want ErrNotFound", k[0], k[1], err)
		}
	}
	// A text altered on disk is refused, not emulated.
	if _, err := db.sql.Exec(`UPDATE ptx_texts SET bytes = bytes + 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PTXOf("spec1", "1,1"); err == nil {
		t.Error("PTXOf of an altered text: no error")
	}
}
