package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestSensorCheckSim(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"sensor-check", "--backend", "sim", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var r map[string]any
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if p, _ := r["counter_period_s"].(float64); math.Abs(p-0.1) > 3e-4 {
		t.Fatalf("counter period %v", r["counter_period_s"])
	}
	if s, _ := r["sample_spacing_s"].(float64); math.Abs(s-0.02) > 1e-9 {
		t.Fatalf("sample spacing %v", r["sample_spacing_s"])
	}
	out.Reset()
	if code := run([]string{"sensor-check", "--backend", "sim"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "energy counter: updates every 100.0 ms") {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	if code := run([]string{"sensor-check", "--backend", "opencl"}, &out, &errb); code != exitBadInput {
		t.Fatalf("bad backend: exit %d", code)
	}
}
