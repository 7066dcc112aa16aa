package report

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/store"
)

// ReadRuns reads the runs args name, opened read-only: a run number of
// the database at dbPath, or FILE:N, run N of the database FILE (named
// "FILE run N" in the report, FILE's base name); none: the newest run of
// dbPath. Errors: a database that cannot be opened, a run it lacks.
func ReadRuns(dbPath string, args []string) ([]HTMLRun, error) {
	if len(args) == 0 {
		return readDBRuns(dbPath, nil)
	}
	// Every argument's form first: a typo is named as such, not blamed on
	// a database it never named.
	for _, a := range args {
		if _, _, named := dbRun(a); named {
			continue
		}
		if _, err := strconv.ParseInt(a, 10, 64); err != nil {
			return nil, badinput.New("RUN %q: want a run number N of --db, or FILE:N for run N of the database FILE (gtune runs lists them)", a)
		}
	}
	var runs []HTMLRun
	seen := map[string]bool{}
	for _, a := range args {
		file, id, named := dbRun(a)
		if !named {
			file, id = dbPath, a
		}
		rs, err := readDBRuns(file, []string{id})
		if err != nil {
			return nil, err
		}
		if named {
			rs[0].Name = fmt.Sprintf("%s run %s", filepath.Base(file), id)
		}
		// The same run twice is the same name twice: a usage error.
		k := rs[0].Name
		if k == "" {
			k = fmt.Sprintf("run %d", rs[0].Run.ID)
		}
		if seen[k] {
			return nil, badinput.New("report: two runs are named %q (%s is given twice; runs of several databases need names of their own: FILE:N)", k, a)
		}
		seen[k] = true
		runs = append(runs, rs...)
	}
	return runs, nil
}

// dbRun splits FILE:N into the database FILE and the run number N; false
// when a is not of that form (a run number of --db).
func dbRun(a string) (file, id string, ok bool) {
	i := strings.LastIndex(a, ":")
	if i <= 0 {
		return "", "", false
	}
	if _, err := strconv.ParseInt(a[i+1:], 10, 64); err != nil {
		return "", "", false
	}
	return a[:i], a[i+1:], true
}

// readDBRuns reads runs args (their numbers; none: the newest run) of the
// database at dbPath, opened read-only.
func readDBRuns(dbPath string, args []string) ([]HTMLRun, error) {
	db, err := store.OpenReadOnly(dbPath)
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	defer db.Close()
	if len(args) == 0 {
		all, err := db.Runs()
		if err != nil {
			return nil, err
		}
		if len(all) == 0 {
			return nil, badinput.New("%s holds no run", db.Path())
		}
		newest := all[0]
		for _, r := range all {
			if r.ID > newest.ID {
				newest = r
			}
		}
		args = []string{strconv.FormatInt(newest.ID, 10)}
	}
	all, err := db.Runs()
	if err != nil {
		return nil, err
	}
	var runs []HTMLRun
	for _, a := range args {
		run, evals, err := StoredRun(db, a)
		if err != nil {
			return nil, err
		}
		refs, err := libraryRuns(db, all, run)
		if err != nil {
			return nil, err
		}
		runs = append(runs, HTMLRun{Run: run, Evals: evals, References: refs})
	}
	return runs, nil
}

// ParetoFound refuses (bad input) a --pareto whose two quantities no
// valid configuration of the runs has both of, naming the quantities
// they do have: a front of nothing is not a report.
func ParetoFound(runs []HTMLRun, a, b string) error {
	has := map[string]bool{}
	for _, r := range runs {
		for _, e := range r.Evals {
			if e.Status != "valid" {
				continue
			}
			get := func(k string) bool {
				_, ok := e.Observations[k]
				if !ok {
					_, ok = e.Metrics[k]
				}
				return ok
			}
			if get(a) && get(b) {
				return nil
			}
			for k := range e.Observations {
				has[k] = true
			}
			for k := range e.Metrics {
				has[k] = true
			}
		}
	}
	names := slices.Sorted(maps.Keys(has))
	if len(names) == 0 {
		return badinput.New("--pareto %s,%s: the runs have no valid configuration", a, b)
	}
	return badinput.New("--pareto %s,%s: no valid configuration of the runs has both (they have: %s)", a, b, strings.Join(names, ", "))
}

// OpenStoredRun opens the results database read-only and reads run arg
// (its number) and its evaluations in the order made. Errors: a bad
// number, a database that cannot be read or holds no such run (bad
// input); a read error. The caller closes db.
func OpenStoredRun(dbPath, arg string) (*store.DB, *store.Run, []*store.Evaluation, error) {
	if _, err := strconv.ParseInt(arg, 10, 64); err != nil {
		return nil, nil, nil, badinput.New("RUN %q: want a run number (gtune runs lists them)", arg)
	}
	db, err := store.OpenReadOnly(dbPath)
	if err != nil {
		return nil, nil, nil, badinput.Wrap(err)
	}
	run, evals, err := StoredRun(db, arg)
	if err != nil {
		db.Close()
		return nil, nil, nil, err
	}
	return db, run, evals, nil
}

// StoredRun reads run arg (its number) of db and its evaluations in the
// order made. Errors: arg is not a number, or db holds no such run.
func StoredRun(db *store.DB, arg string) (*store.Run, []*store.Evaluation, error) {
	run, err := db.RunArg(arg)
	if err != nil {
		return nil, nil, err
	}
	evals, err := db.RunEvaluations(run.ID)
	if err != nil {
		return nil, nil, err
	}
	return run, evals, nil
}
