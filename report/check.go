package report

import (
	"encoding/json"
	"fmt"
	"io"
)

// CheckFile is what gtune check found in one spec or workload file.
type CheckFile struct {
	Path string `json:"path"`
	// Problems are the reasons the file would be refused, each naming the
	// file and the key or line; empty when it passes.
	Problems []string `json:"problems"`
	// Warnings are what a run would warn about.
	Warnings []string `json:"warnings"`
	// Checked are the checks that ran, NotChecked those that could not
	// here (with why), e.g. compilation where no NVRTC is found.
	Checked    []string `json:"checked"`
	NotChecked []string `json:"not_checked"`
	// Configurations is the number of valid configurations (0 when the
	// search space could not be built).
	Configurations int `json:"configurations"`
}

// CheckDoc is gtune check --json.
type CheckDoc struct {
	OK    bool        `json:"ok"`
	Files []CheckFile `json:"files"`
}

// CheckText prints the files' problems, warnings and what was and was not
// checked, one file after another.
func CheckText(w io.Writer, files []CheckFile) {
	for _, f := range files {
		status := "ok"
		if len(f.Problems) > 0 {
			status = fmt.Sprintf("%d problem(s)", len(f.Problems))
		}
		fmt.Fprintf(w, "%s: %s", f.Path, status)
		if f.Configurations > 0 {
			fmt.Fprintf(w, ", %d valid configurations", f.Configurations)
		}
		fmt.Fprintln(w)
		for _, p := range f.Problems {
			fmt.Fprintf(w, "  error: %s\n", p)
		}
		for _, p := range f.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", p)
		}
		for _, c := range f.Checked {
			fmt.Fprintf(w, "  checked: %s\n", c)
		}
		for _, c := range f.NotChecked {
			fmt.Fprintf(w, "  not checked: %s\n", c)
		}
	}
}

// CheckJSON writes files as one CheckDoc.
func CheckJSON(w io.Writer, files []CheckFile) error {
	doc := CheckDoc{OK: true, Files: files}
	for i := range doc.Files {
		f := &doc.Files[i]
		if len(f.Problems) > 0 {
			doc.OK = false
		}
		for _, l := range []*[]string{&f.Problems, &f.Warnings, &f.Checked, &f.NotChecked} {
			if *l == nil {
				*l = []string{}
			}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
