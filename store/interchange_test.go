package store

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gtune/gtune/measure"
)

// A version-1 database (backend limited to cuda and sim) is upgraded in
// place: its runs and evaluations survive, and replay runs, then (schema
// 4) any backend name but an empty one, are accepted afterwards, by
// BeginRun and by the table's own constraint.
func TestMigrationV2AcceptsReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	saved := migrations
	defer func() { migrations = saved }()
	migrations = saved[:1]
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	old := newRun(t, db, "h", "GPU-0")
	// Written as version 1 wrote it: Add knows only the current schema.
	if _, err := db.sql.Exec(`INSERT INTO evaluations (run_id, spec_hash, device_uuid, config_key, params, status, objective, observations)
		VALUES (?, 'h', 'GPU-0', '1,2', '{}', 'valid', 1.5, '{"time":1.5,"energy":0.25}')`, old.ID); err != nil {
		t.Fatal(err)
	}
	_, err = db.sql.Exec(`INSERT INTO runs (spec_hash, spec_path, kernel, objective, strategy, device_name,
		device_uuid, driver, backend, gtune_version, started_at, status) VALUES
		('h', '', '', '', '', '', '', '', 'replay', '', '2025-01-01T00:00:00.000000000Z', 'done')`)
	if err == nil || !strings.Contains(err.Error(), "CHECK") {
		t.Fatalf("version 1 accepted a replay run: %v", err)
	}
	db.Close()
	migrations = saved

	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version int
	if err := db.sql.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != SchemaVersion {
		t.Fatalf("user_version = %d, %v; want %d", version, err, SchemaVersion)
	}
	var check string
	if err := db.sql.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check = %q, %v", check, err)
	}
	es, err := db.Evaluations(old.ID)
	if err != nil || len(es) != 1 || es[0].Key != "1,2" || *es[0].Objective != 1.5 || es[0].Launches != nil {
		t.Fatalf("evaluations after the upgrade: %v, %v", es, err)
	}
	// Version 3: the old observations read back typed, units from the
	// built-in quantities.
	typed, err := db.Observations(es[0].ID)
	want := measure.Observations{
		{Name: "energy", Unit: "J", Value: 0.25, Method: MethodBeforeV3, Launch: measure.PlanScope},
		{Name: "time", Unit: "ms", Value: 1.5, Method: MethodBeforeV3, Launch: measure.PlanScope},
	}
	if err != nil || !reflect.DeepEqual(typed, want) {
		t.Fatalf("Observations after the upgrade = %+v, %v; want %+v", typed, err, want)
	}
	r := &Run{SpecHash: "h", DeviceUUID: "replay:NVIDIA A100-PCIE-40GB", Backend: "replay"}
	if err := db.BeginRun(r); err != nil {
		t.Fatal(err)
	}
	got, err := db.Run(r.ID)
	if err != nil || got.Backend != "replay" {
		t.Fatalf("Run(%d) = %+v, %v", r.ID, got, err)
	}
	// From schema 4 on, backend names are free-form but not empty.
	if err := db.BeginRun(&Run{Backend: "slurm"}); err != nil {
		t.Fatalf("BeginRun(slurm) = %v", err)
	}
	if err := db.BeginRun(&Run{Backend: " ", Kernel: "k"}); err == nil || !strings.Contains(err.Error(), "no backend name") {
		t.Fatalf("BeginRun without a backend = %v", err)
	}
	_, err = db.sql.Exec(`UPDATE runs SET backend = '' WHERE id = ?`, r.ID)
	if err == nil || !strings.Contains(err.Error(), "CHECK") {
		t.Fatalf("the constraint accepts an empty backend: %v", err)
	}
}

func TestAddMany(t *testing.T) {
	db := openTemp(t)
	r := newRun(t, db, "h", "GPU-0")
	es := []*Evaluation{
		{RunID: r.ID, Key: "16,1", Params: []Param{{"x", 16}, {"y", 1}}, Status: "valid", Objective: ptr(2.5),
			Observations: map[string]float64{"time": 2.5}, Metrics: map[string]float64{"GFLOP/s": 10}, TimesMs: []float64{2, 3}, CompileMs: 900},
		{RunID: r.ID, Key: "32,1", Params: []Param{{"x", 32}, {"y", 1}}, Status: "runtime_failed", Reason: "RuntimeFailedConfig"},
	}
	if err := db.AddMany(es); err != nil {
		t.Fatal(err)
	}
	got, err := db.Evaluations(r.ID)
	if err != nil || len(got) != 2 {
		t.Fatalf("Evaluations = %v, %v", got, err)
	}
	for i, e := range got {
		if e.ID != es[i].ID || e.SpecHash != "h" || e.DeviceUUID != "GPU-0" || e.Key != es[i].Key || e.Status != es[i].Status ||
			e.Reason != es[i].Reason || !reflect.DeepEqual(e.Params, es[i].Params) || !reflect.DeepEqual(e.TimesMs, es[i].TimesMs) {
			t.Errorf("evaluation %d = %+v, want %+v", i, e, es[i])
		}
	}
	if got[0].Metrics["GFLOP/s"] != 10 || *got[0].Objective != 2.5 || got[0].CompileMs != 900 {
		t.Errorf("evaluation 0 = %+v", got[0])
	}
	// All or nothing: a bad evaluation anywhere stores none of them.
	bad := []*Evaluation{
		{RunID: r.ID, Key: "48,1", Status: "valid"},
		{RunID: r.ID, Key: "64,1", Status: "exploded"},
	}
	if err := db.AddMany(bad); err == nil || !strings.Contains(err.Error(), `"64,1"`) {
		t.Fatalf("AddMany with a bad status: %v", err)
	}
	mixed := []*Evaluation{{RunID: r.ID, Key: "48,1", Status: "valid"}, {RunID: r.ID + 1, Key: "64,1", Status: "valid"}}
	if err := db.AddMany(mixed); err == nil || !strings.Contains(err.Error(), "belongs to run") {
		t.Fatalf("AddMany across runs: %v", err)
	}
	if err := db.AddMany([]*Evaluation{{RunID: 999, Key: "1", Status: "valid"}}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("AddMany to an unknown run: %v", err)
	}
	if got, _ := db.Evaluations(r.ID); len(got) != 2 {
		t.Fatalf("%d evaluations after failed AddMany calls, want 2", len(got))
	}
}
