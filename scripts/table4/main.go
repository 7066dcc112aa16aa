// Command table4 summarises brute-force and occupancy-guided runs as the
// rows of Table IV of multi-kernel-autotuning-performance-energy.md: full
// and reduced search space, evaluations the procedure needed, whether it
// found the brute-force optimum and the gap when not.
//
// Usage:
//
//	go run ./scripts/table4 -mode time|energy -device ID -bf BF.db -alg ALG.db SPEC...
//	go run ./scripts/table4 -mode time -device ID -bf BF.db -replay [-bf-strategy S] [-resources measured] [-filter relative] SPEC...
//
// With -replay there is no run of the procedure: it is replayed over the
// brute-force evaluations themselves (every configuration it asks for
// must be there), counting what it asks; -bf-strategy names the runs
// that cover the space ("" for any, e.g. a random sample as large as the
// space), -resources measured takes each configuration's registers and
// static shared memory from what the compiler reported in those runs
// instead of the spec's declarations, and -filter relative the
// occupancy threshold relative to each thread-block size
// (occupancy_filter).
//
// For each spec it takes the brute-force evaluations (-bf, all runs of the
// spec) and the last run of the procedure (-alg: occupancy_greedy for
// -mode time, occupancy_greedy_energy for -mode energy), replays the
// procedure over that run's stored results to get the configuration it
// returned (the procedure is deterministic given its results; the replay
// must ask for exactly the configurations the run measured), and judges
// that configuration with the brute-force measurements. Registers and
// shared memory are the spec's Gtune.Simulation declarations, and the
// device is -device from the device database, as gtune tune gives them
// to the strategy.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/strategy"
)

func main() {
	mode := flag.String("mode", "time", "time (Algorithm 1, occupancy_greedy) or energy (Algorithm 2, occupancy_greedy_energy)")
	devID := flag.String("device", "h100_sxm", "device-database id used for occupancy")
	bfPath := flag.String("bf", "", "database with the brute-force runs")
	algPath := flag.String("alg", "", "database with the procedure's runs")
	minOcc := flag.Float64("min-occupancy", strategy.DefaultMinOccupancy, "the procedure's min_occupancy, as the run used it")
	replay := flag.Bool("replay", false, "replay the procedure over the brute-force evaluations instead of a run of it (-alg)")
	bfStrategy := flag.String("bf-strategy", "brute_force", "the strategy of the runs that cover the space in -bf (\"\": any)")
	resourcesFrom := flag.String("resources", "spec", "registers and shared memory: spec (Gtune.Simulation) or measured (the compiler's, recorded in -bf)")
	filter := flag.String("filter", "absolute", "the procedure's occupancy_filter: absolute or relative")
	flag.Parse()
	if *replay {
		*algPath = *bfPath
	}
	if *bfPath == "" || *algPath == "" || flag.NArg() == 0 || (*mode != "time" && *mode != "energy") {
		flag.Usage()
		os.Exit(2)
	}
	d, err := device.Lookup(*devID)
	check(err)
	bf, err := store.Open(*bfPath)
	check(err)
	alg, err := store.Open(*algPath)
	check(err)
	strat := "occupancy_greedy"
	if *mode == "energy" {
		strat = "occupancy_greedy_energy"
		fmt.Println("| kernel | space (config × clock) | reduced | evaluations | Algorithm 2 choice | brute-force energy optimum | found | energy gap | fastest (brute force) | energy saved vs fastest | time lost vs fastest |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	} else {
		fmt.Println("| kernel | space | reduced (occupancy ≥ min) | evaluations | Algorithm 1 choice | brute-force optimum | found | gap (time) |")
		fmt.Println("|---|---|---|---|---|---|---|---|")
	}
	o := rowOptions{mode: *mode, minOcc: *minOcc, replay: *replay, bfStrategy: *bfStrategy, measured: *resourcesFrom == "measured", filter: *filter}
	for _, path := range flag.Args() {
		row(path, d, bf, alg, strat, o)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "table4:", err)
		os.Exit(1)
	}
}

// evals gives the valid evaluations of the spec in db by key (the latest
// of each key) and the evaluations of the last run of strategy name ("" :
// any).
func evals(db *store.DB, s *spec.Spec, name string) (all map[string]*store.Evaluation, last []*store.Evaluation) {
	runs, err := db.Runs()
	check(err)
	all = map[string]*store.Evaluation{}
	for _, r := range runs {
		if r.SpecHash != s.Hash || (name != "" && r.Strategy != name) {
			continue
		}
		es, err := db.RunEvaluations(r.ID)
		check(err)
		for _, e := range es {
			all[e.Key] = e
		}
		last = es
	}
	return all, last
}

// rowOptions are the flags a row reads.
type rowOptions struct {
	mode, bfStrategy, filter string
	minOcc                   float64
	replay, measured         bool
}

func row(path string, d *device.Description, bfDB, algDB *store.DB, strat string, ro rowOptions) {
	mode := ro.mode
	s, err := spec.Load(path)
	check(err)
	sp, err := s.BuildSpace()
	check(err)
	target := &strategy.Target{Device: d, Geometry: func(i int) (int, int, error) {
		j, err := s.Job(sp.Values(i))
		if err != nil {
			return 0, 0, err
		}
		return j.Block[0] * j.Block[1] * j.Block[2], j.Grid[0] * j.Grid[1] * j.Grid[2], nil
	}}
	resources := func(i int) (int, int, error) {
		j, err := s.Job(sp.Values(i))
		if err != nil {
			return 0, 0, err
		}
		return j.Work.Registers, j.Work.SharedMemory + j.DynamicSharedBytes, nil
	}
	bf, _ := evals(bfDB, s, ro.bfStrategy)
	if ro.measured {
		resources = func(i int) (int, int, error) {
			e, ok := bf[sp.Key(i)]
			if !ok {
				return 0, 0, fmt.Errorf("%s was not measured", sp.Key(i))
			}
			j, err := s.Job(sp.Values(i))
			if err != nil {
				return 0, 0, err
			}
			return int(e.Observations["registers"]), int(e.Observations["shared_memory"]) + j.DynamicSharedBytes, nil
		}
	}
	opts := strategy.Options{Space: sp, Target: target, Resources: resources, Params: map[string]any{"min_occupancy": ro.minOcc, "occupancy_filter": ro.filter}}
	reduce := strategy.Reduce
	if ro.filter == "relative" {
		reduce = strategy.ReduceRelative
	}
	reduced, err := reduce(opts, target, resources, ro.minOcc)
	check(err)
	_, run := evals(algDB, s, strat)
	if ro.replay {
		run = nil
		for _, e := range bf {
			run = append(run, e)
		}
	}
	if len(run) == 0 {
		check(fmt.Errorf("%s: no %s run in the procedure's database", path, strat))
	}
	byKey := map[string]*store.Evaluation{}
	for _, e := range run {
		byKey[e.Key] = e
	}
	st, err := strategy.New(strat, opts)
	check(err)
	asked := 0
	for {
		ids := st.Next(1)
		if len(ids) == 0 {
			break
		}
		key := sp.Key(ids[0])
		e, ok := byKey[key]
		if !ok {
			check(fmt.Errorf("%s: the replay asks for %s, which the run did not measure", path, key))
		}
		asked++
		st.Tell(strategy.Evaluation{Index: ids[0], Valid: e.Status == "valid", Observations: e.Observations})
	}
	if asked != len(run) && !ro.replay {
		check(fmt.Errorf("%s: the replay asked for %d configurations, the run measured %d", path, asked, len(run)))
	}
	evaluations := len(run)
	if ro.replay {
		evaluations = asked
	}
	ci, ok := st.(strategy.Chooser).Choice()
	if !ok {
		check(fmt.Errorf("%s: the replayed procedure did not return", path))
	}
	choice := sp.Key(ci)
	obs := "time"
	if mode == "energy" {
		obs = "energy"
	}
	best, fastest := "", ""
	// In space order, so that ties (a power-capped clock gives equal
	// energies) go to the first configuration.
	for i := range sp.Len() {
		k := sp.Key(i)
		e, ok := bf[k]
		if !ok || e.Status != "valid" {
			continue
		}
		if best == "" || e.Observations[obs] < bf[best].Observations[obs] {
			best = k
		}
		if fastest == "" || e.Observations["time"] < bf[fastest].Observations["time"] {
			fastest = k
		}
	}
	if best == "" {
		check(fmt.Errorf("%s: no valid brute-force evaluation", path))
	}
	names := make([]string, len(sp.Params()))
	for i, p := range sp.Params() {
		names[i] = p.Name
	}
	label := func(k string) string { return "(" + k + ")" }
	ce, ok := bf[choice]
	gap := "n/a (not valid in brute force)"
	found := "no"
	if choice == best {
		found = "yes"
	}
	if ok && ce.Status == "valid" {
		gap = fmt.Sprintf("%.1f %%", 100*(ce.Observations[obs]-bf[best].Observations[obs])/bf[best].Observations[obs])
	}
	nclocks := 1
	for _, p := range sp.Params() {
		if p.Name == strategy.ClockParam {
			nclocks = len(p.Values)
		}
	}
	name := s.Name
	if mode == "energy" {
		f := bf[fastest]
		saved, lost := "n/a", "n/a"
		if ok && ce.Status == "valid" {
			saved = fmt.Sprintf("%.1f %%", 100*(f.Observations["energy"]-ce.Observations["energy"])/f.Observations["energy"])
			lost = fmt.Sprintf("%.1f %%", 100*(ce.Observations["time"]-f.Observations["time"])/f.Observations["time"])
		}
		fmt.Printf("| %s | %d | %d | %d | %s %s | %s %s | %s | %s | %s %.4g ms, %.4g J | %s | %s |\n",
			name, sp.Len(), len(reduced)*nclocks, evaluations, strings.Join(names, ","), label(choice),
			label(best), fmtJ(bf[best].Observations["energy"]), found, gap,
			label(fastest), f.Observations["time"], f.Observations["energy"], saved, lost)
		return
	}
	fmt.Printf("| %s | %d | %d | %d | %s %s | %s %.4g ms | %s | %s |\n",
		name, sp.Len(), len(reduced), evaluations, strings.Join(names, ","), label(choice),
		label(best), bf[best].Observations["time"], found, gap)
}

func fmtJ(j float64) string {
	if math.IsNaN(j) {
		return "n/a"
	}
	return fmt.Sprintf("%.4g J", j)
}
