package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every unknown key is refused at once, by path, with the key it most
// likely misspells; keys of the T1 schema gtune reads past are not.
func TestUnknownKeys(t *testing.T) {
	b, err := os.ReadFile("../examples/vector_add/spec.json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, r := range [][2]string{
		{`"KernelSpecification": {`, `"KernelSpecificaton": {}, "KernelSpecification": {"Profiling": true, "Stream": null,`},
		{`"TuningParameters"`, `"TunningParameters": [], "TuningParameters"`},
		{`"Name": "work_per_thread",`, `"Name": "work_per_thread", "Dfault": 1,`},
		{`"General": {`, `"BenchmarkConfig": {"x": 1}, "Colour": 1, "General": {"LoggingLevel": "info",`},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("no %q in the example", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "spec.json")
	os.WriteFile(p, []byte(s), 0o644)
	_, err = LoadWith(p, LoadOptions{NoSource: true})
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("Load: %v, want *Error", err)
	}
	want := strings.Join([]string{
		p + ": Colour: unknown key",
		p + ": ConfigurationSpace.TuningParameters[1].Dfault: unknown key (did you mean Default?)",
		p + ": ConfigurationSpace.TunningParameters: unknown key (did you mean TuningParameters?)",
		p + ": KernelSpecificaton: unknown key (did you mean KernelSpecification?)",
	}, "\n")
	if err.Error() != want {
		t.Fatalf("got\n%s\nwant\n%s", err, want)
	}
}

func TestClosest(t *testing.T) {
	known := []string{"KernelName", "KernelFile", "GlobalSize", "Arguments"}
	for key, want := range map[string]string{"kernelname": "KernelName", "KernelNmae": "KernelName", "KernalFile": "KernelFile", "Argument": "Arguments", "Colour": ""} {
		if got := closest(key, known); got != want {
			t.Errorf("closest(%q) = %q, want %q", key, got, want)
		}
	}
}
