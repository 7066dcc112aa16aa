package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/gpuctl"

	"github.com/gtune/gtune/internal/shared"
)

// k20Spec is the test spec on the simulated K20c (5 SM clocks, one memory
// clock, power limit 150–225 W), with extra tunable parameters appended.
func k20Spec(t *testing.T, extraParams string) string {
	t.Helper()
	return writeSpec(t, `{"Name": "work_per_thread", "Type": "int", "Values": "[1, 2, 4, 8]"}`,
		`{"Name": "work_per_thread", "Type": "int", "Values": "[1, 2, 4, 8]"}`+extraParams)
}

func defaultState(t *testing.T, id string) sim.ControlState {
	d, err := device.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return sim.DefaultControlState(d)
}

func readState(t *testing.T, path string) sim.ControlState {
	t.Helper()
	c, err := sim.OpenControl(path)
	if err != nil {
		t.Fatal(err)
	}
	return c.State()
}

func TestGPUSettingsNeedPermission(t *testing.T) {
	specPath := k20Spec(t, `, {"Name": "nvml_gr_clock", "Type": "int", "Values": "[758, 614]", "Default": 758}`)
	db := filepath.Join(t.TempDir(), "r.db")
	// A real GPU (the refusal comes before CUDA is even looked for, so
	// this runs without a driver).
	code, _, errs := gtune(t, "tune", specPath, "--backend", "cuda", "--db", db)
	if code != 2 || !strings.Contains(errs, "declares the GPU-setting parameters nvml_gr_clock") || !strings.Contains(errs, "only with --allow-gpu-settings") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the refusal opened the database")
	}
	code, _, errs = gtune(t, "tune", writeSpec(t, "", ""), "--backend", "cuda", "--gpu-settings", "g3", "--db", db)
	if code != 2 || !strings.Contains(errs, "--gpu-settings g3: tuning them changes the GPU's clocks and power limit") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// The simulated GPU asks for the same permission as a real one, so
	// that what works on it works on a GPU; with it, it applies the
	// settings to its simulated control surface and changes nothing real.
	code, _, errs = gtune(t, "tune", specPath, "--backend", "sim", "--sim-device", "k20c", "--db", db, "--no-progress", "--max-evals", "5", "--strategy", "random_sample")
	if code != 2 || !strings.Contains(errs, "only with --allow-gpu-settings") {
		t.Fatalf("sim without permission: exit %d: %s", code, errs)
	}
	code, out, errs := gtune(t, "tune", specPath, "--backend", "sim", "--sim-device", "k20c", "--db", db, "--no-progress", "--max-evals", "5", "--strategy", "random_sample", "--allow-gpu-settings")
	if code != 0 || !strings.Contains(out, "nvml_gr_clock") {
		t.Fatalf("sim: exit %d: %s %s", code, out, errs)
	}
	code, _, errs = gtune(t, "tune", specPath, "--backend", "sim", "--sim-device", "k20c", "--db", db, "--sim-nvml-state", filepath.Join(t.TempDir(), "s.json"))
	if code != 2 || !strings.Contains(errs, "only with --allow-gpu-settings") {
		t.Fatalf("sim NVML surface: exit %d: %s", code, errs)
	}
}

func TestGPUSettingsBadValues(t *testing.T) {
	db := filepath.Join(t.TempDir(), "r.db")
	for _, tc := range []struct{ param, want string }{
		{`{"Name": "nvml_gr_clock", "Type": "int", "Values": "[758, 700]", "Default": 758}`,
			"nvml_gr_clock 700 MHz is not a supported SM clock of Tesla K20c; the nearest supported are 666 and 705 MHz"},
		{`{"Name": "nvml_mem_clock", "Type": "int", "Values": "[2600, 324]", "Default": 2600}`,
			"nvml_mem_clock 324 MHz is not a supported memory clock of Tesla K20c; the nearest supported are 2600 MHz (the lowest)"},
		{`{"Name": "nvml_pwr_limit", "Type": "int", "Values": "[225, 250]", "Default": 225}`,
			"nvml_pwr_limit 250 W is outside the power-limit constraints of Tesla K20c, 150–225 W"},
	} {
		code, _, errs := gtune(t, "tune", k20Spec(t, ", "+tc.param), "--backend", "sim", "--sim-device", "k20c", "--db", db, "--allow-gpu-settings", "--no-progress")
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("exit %d: %s\nwant %q", code, errs, tc.want)
		}
	}
	code, _, errs := gtune(t, "tune", k20Spec(t, `, {"Name": "nvml_gr_clock", "Type": "int", "Values": "[758]"}`), "--backend", "sim", "--gpu-settings", "g1", "--allow-gpu-settings", "--db", db)
	if code != 2 || !strings.Contains(errs, "already declares as a tunable parameter") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

func TestGPUSettingsDryRun(t *testing.T) {
	dir := t.TempDir()
	db, state := filepath.Join(dir, "r.db"), filepath.Join(dir, "state.json")
	code, out, errs := gtune(t, "tune", writeSpec(t, "", ""), "--backend", "sim", "--sim-device", "k20c", "--gpu-settings", "g1", "--dry-run", "--db", db, "--sim-nvml-state", state)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"dry run: no GPU setting is changed",
		"nvml_gr_clock: 758, 705, 666, 640, 614 MHz",
		"nvml_mem_clock: 2600 MHz",
		"nvml_pwr_limit: 9 values, 150 .. 225 W",
		"space: 5040 valid configurations", // 112 kernel configurations × 5 × 1 × 9
		"journal: " + db + ".gpu-journal",
		"--allow-gpu-settings not given",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	for _, p := range []string{db + ".gpu-journal", state} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("dry run created %s", p)
		}
	}
}

func TestGPUSettingsTuneJournalAndRestore(t *testing.T) {
	dir := t.TempDir()
	db, state := filepath.Join(dir, "r.db"), filepath.Join(dir, "state.json")
	code, out, errs := gtune(t, "tune", writeSpec(t, "", ""), "--backend", "sim", "--sim-device", "k20c", "--gpu-settings", "g1",
		"--allow-gpu-settings", "--sim-nvml-state", state, "--db", db, "--json", "--objective", "energy", "--strategy", "random_sample", "--max-evals", "60", "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Best struct {
			Params map[string]any `json:"params"`
		} `json:"best"`
		PowerCapping struct {
			Ratio          float64 `json:"ratio"`
			NearCap        int     `json:"near_cap"`
			Configurations int     `json:"configurations"`
		} `json:"power_capping"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if doc.Best.Params["nvml_gr_clock"] == nil || doc.Best.Params["nvml_pwr_limit"] == nil {
		t.Fatalf("best %v", doc.Best.Params)
	}
	pc := doc.PowerCapping
	if pc.Configurations == 0 || pc.Ratio != float64(pc.NearCap)/float64(pc.Configurations) {
		t.Fatalf("power capping %+v", pc)
	}
	if !strings.Contains(errs, "original GPU settings of SIM-k20c restored") {
		t.Fatalf("stderr: %s", errs)
	}
	if st := readState(t, state); st != defaultState(t, "k20c") {
		t.Fatalf("state after the run %+v", st)
	}
	if _, err := os.Stat(db + ".gpu-journal"); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("journal left after a normal exit")
	}
}

func TestGPUSettingsWithoutPermission(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	d, _ := device.Lookup("k20c")
	if _, err := sim.NewControl(d, sim.ControlOptions{StateFile: state, NoPermission: true}); err != nil {
		t.Fatal(err)
	}
	specPath := k20Spec(t, `, {"Name": "nvml_pwr_limit", "Type": "int", "Values": "[150, 200, 225]", "Default": 225}`)
	args := []string{"tune", specPath, "--backend", "sim", "--sim-device", "k20c", "--allow-gpu-settings", "--sim-nvml-state", state,
		"--db", filepath.Join(dir, "r.db"), "--json", "--no-progress", "--max-evals", "10", "--strategy", "random_sample"}
	code, _, errs := gtune(t, args...)
	if code != 2 || !strings.Contains(errs, "no permission to change the GPU settings of Simulated Tesla K20c") || !strings.Contains(errs, "NVML_ERROR_NO_PERMISSION") {
		t.Fatalf("stop: exit %d: %s", code, errs)
	}
	code, out, errs := gtune(t, append(args, "--on-no-permission", "drop")...)
	if code != 0 || !strings.Contains(errs, "tuning without them") {
		t.Fatalf("drop: exit %d: %s", code, errs)
	}
	var doc struct {
		Space int `json:"space"`
		Best  struct {
			Params map[string]any `json:"params"`
		} `json:"best"`
	}
	json.Unmarshal([]byte(out), &doc)
	// 112 kernel configurations, the power limit kept at the present 225 W.
	if doc.Space != 112 || doc.Best.Params["nvml_pwr_limit"] != 225.0 {
		t.Fatalf("drop: space %d, best %v", doc.Space, doc.Best.Params)
	}
	if _, err := os.Stat(filepath.Join(dir, "r.db.gpu-journal")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("journal left behind")
	}
}

// TestChildGtune is the child process of the crash tests: it runs the
// command line in GTUNE_CHILD_ARGS (JSON) as gtune would.
func TestChildGtune(t *testing.T) {
	raw := os.Getenv("GTUNE_CHILD_ARGS")
	if raw == "" {
		t.Skip("child process of TestGPUSettingsCrashRecovery")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

// startTune starts a long simulated tune with GPU settings in a child
// process and waits until the simulated GPU's settings have changed.
func startTune(t *testing.T, dir string, extra ...string) (*exec.Cmd, string, string, *strings.Builder) {
	t.Helper()
	db, state := filepath.Join(dir, "r.db"), filepath.Join(dir, "state.json")
	args, _ := json.Marshal(append([]string{"tune", writeSpec(t, "", ""), "--backend", "sim", "--sim-device", "k20c", "--gpu-settings", "g1",
		"--allow-gpu-settings", "--sim-nvml-state", state, "--db", db, "--no-progress", "--objective", "energy"}, extra...))
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildGtune$")
	cmd.Env = append(os.Environ(), "GTUNE_CHILD_ARGS="+string(args))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	def := defaultState(t, "k20c")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := sim.OpenControl(state); err == nil && c.State() != def {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the child never changed the simulated settings: %s", stderr.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	return cmd, db + ".gpu-journal", state, &stderr
}

func TestGPUSettingsRestoredOnSIGTERM(t *testing.T) {
	cmd, journal, state, stderr := startTune(t, t.TempDir())
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "restored") {
		t.Fatalf("child: %v: %s", err, stderr.String())
	}
	if st := readState(t, state); st != defaultState(t, "k20c") {
		t.Fatalf("after SIGTERM the state is %+v", st)
	}
	if _, err := os.Stat(journal); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("journal left after SIGTERM")
	}
}

func TestGPUSettingsCrashRecovery(t *testing.T) {
	cmd, journal, state, _ := startTune(t, t.TempDir())
	cmd.Process.Kill() // SIGKILL: no defer runs
	cmd.Wait()
	if readState(t, state) == defaultState(t, "k20c") {
		t.Fatal("the simulated settings were restored without gtune restore")
	}
	j, err := gpuctl.ReadJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	if j.Original.AppCoreMHz != 705 || j.Original.PowerLimitW != 225 || j.PID != cmd.Process.Pid {
		t.Fatalf("journal %+v", j)
	}
	code, out, errs := gtune(t, "restore", "--journal", journal)
	if code != 0 || !strings.Contains(out, "restored the original settings of SIM-k20c") {
		t.Fatalf("restore: exit %d: %s %s", code, out, errs)
	}
	if st := readState(t, state); st != defaultState(t, "k20c") {
		t.Fatalf("after gtune restore %+v", st)
	}
	if _, err := os.Stat(journal); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("journal not removed")
	}
	code, out, _ = gtune(t, "restore", "--db", strings.TrimSuffix(journal, ".gpu-journal"))
	if code != 0 || !strings.Contains(out, "nothing to restore") {
		t.Fatalf("second restore: exit %d: %s", code, out)
	}
}

// GPU settings on a run over two simulated GPUs (--devices 0,1): each GPU
// has its own session and journal (the second's at .gpu-journal.1) and
// the settings are applied to each GPU before its own trials; a normal
// exit restores both. After kill -9 both journals stay, and gtune restore
// --db puts back both GPUs' settings.
func TestGPUSettingsOnSeveralGPUs(t *testing.T) {
	dir := t.TempDir()
	db, state := filepath.Join(dir, "r.db"), filepath.Join(dir, "state.json")
	code, out, errs := gtune(t, "tune", writeSpec(t, "", ""), "--backend", "sim", "--sim-device", "k20c", "--gpu-settings", "g1",
		"--allow-gpu-settings", "--sim-nvml-state", state, "--db", db, "--json", "--objective", "energy", "--strategy", "random_sample",
		"--max-evals", "60", "--no-progress", "--devices", "0,1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Best struct {
			Params map[string]any `json:"params"`
		} `json:"best"`
		GPUs []struct {
			UUID      string
			Evaluated int
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if doc.Best.Params["nvml_gr_clock"] == nil || len(doc.GPUs) != 2 || doc.GPUs[0].Evaluated == 0 || doc.GPUs[1].Evaluated == 0 {
		t.Fatalf("best %v, GPUs %+v", doc.Best.Params, doc.GPUs)
	}
	for _, uuid := range []string{"SIM-k20c", "SIM-k20c-1"} {
		if !strings.Contains(errs, "original GPU settings of "+uuid+" restored") {
			t.Errorf("stderr does not say %s was restored: %s", uuid, errs)
		}
	}
	for i, p := range []string{state, state + ".1"} {
		if st := readState(t, p); st != defaultFor(t, i) {
			t.Errorf("%s after the run: %+v", p, st)
		}
	}
	for _, j := range []string{db + ".gpu-journal", db + ".gpu-journal.1"} {
		if _, err := os.Stat(j); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("journal %s left after a normal exit", j)
		}
	}

	// kill -9 once both GPUs run at settings of their own.
	dir = t.TempDir()
	cmd, journal, state, stderr := startTune(t, dir, "--devices", "0,1")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if c, err := sim.OpenControl(state + ".1"); err == nil && c.State() != defaultFor(t, 1) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the second GPU's settings never changed: %s", stderr.String())
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	for _, j := range []string{journal, journal + ".1"} {
		if _, err := gpuctl.ReadJournal(j); err != nil {
			t.Fatalf("journal after kill -9: %v", err)
		}
	}
	// The first GPU's journal damaged: the second GPU is restored all
	// the same (restore stopped at the first bad journal), exit 2.
	good, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(journal, good[:len(good)/2], 0o644)
	code, out, errs = gtune(t, "restore", "--db", strings.TrimSuffix(journal, ".gpu-journal"))
	if code != 2 || !strings.Contains(out, "restored the original settings of SIM-k20c-1;") || !strings.Contains(errs, "1 of the journals of") {
		t.Fatalf("restore with the first journal damaged: exit %d: %s %s", code, out, errs)
	}
	if st := readState(t, state+".1"); st != defaultFor(t, 1) {
		t.Errorf("the second GPU after a restore past a damaged journal: %+v", st)
	}
	os.WriteFile(journal, good, 0o644)
	code, out, errs = gtune(t, "restore", "--db", strings.TrimSuffix(journal, ".gpu-journal"))
	if code != 0 || !strings.Contains(out, "restored the original settings of SIM-k20c;") {
		t.Fatalf("restore: exit %d: %s %s", code, out, errs)
	}
	for i, p := range []string{state, state + ".1"} {
		if st := readState(t, p); st != defaultFor(t, i) {
			t.Errorf("%s after gtune restore: %+v", p, st)
		}
	}
	for _, j := range []string{journal, journal + ".1"} {
		if _, err := os.Stat(j); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("journal %s not removed", j)
		}
	}
}

// defaultFor is the simulated K20c's state as booted, as simulated GPU i
// of a run over several (its UUID "SIM-k20c-i" from the second on).
func defaultFor(t *testing.T, i int) sim.ControlState {
	st := defaultState(t, "k20c")
	if i > 0 {
		st.UUID += "-" + strconv.Itoa(i)
	}
	return st
}

func TestRestoreRefusesBadJournals(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	d, _ := device.Lookup("h100_sxm")
	c, _ := sim.NewControl(d, sim.ControlOptions{StateFile: state})
	ctl, _ := gpuctl.NewSim(c)
	if err := ctl.SetPowerLimit(500); err != nil {
		t.Fatal(err)
	}
	changed := c.State()
	// A journal for another device.
	other := filepath.Join(dir, "other")
	gpuctl.WriteJournal(other, gpuctl.Journal{Backend: "sim", DeviceUUID: "SIM-k20c", DeviceName: "Tesla K20c", SimState: state, Original: gpuctl.State{PowerLimitW: 225}})
	code, _, errs := gtune(t, "restore", "--journal", other)
	if code != 2 || !strings.Contains(errs, "is for device SIM-k20c (Tesla K20c), but the device found is SIM-h100_sxm; nothing was changed") {
		t.Fatalf("other device: exit %d: %s", code, errs)
	}
	// A corrupt journal.
	bad := filepath.Join(dir, "bad")
	gpuctl.WriteJournal(bad, gpuctl.Journal{Backend: "sim", DeviceUUID: "SIM-h100_sxm", SimState: state, Original: gpuctl.State{PowerLimitW: 700}})
	b, _ := os.ReadFile(bad)
	os.WriteFile(bad, []byte(strings.Replace(string(b), "700", "100", 1)), 0o600)
	code, _, errs = gtune(t, "restore", "--journal", bad)
	if code != 2 || !strings.Contains(errs, "checksum mismatch") || !strings.Contains(errs, "nothing was changed") {
		t.Fatalf("corrupt: exit %d: %s", code, errs)
	}
	if c2, _ := sim.OpenControl(state); c2.State() != changed {
		t.Fatal("a refused journal changed the settings")
	}
	for _, p := range []string{other, bad} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("refused journal %s was removed", p)
		}
	}
	code, _, errs = gtune(t, "restore", "--journal", filepath.Join(dir, "none"))
	if code != 2 || !strings.Contains(errs, "nothing to restore") {
		t.Fatalf("missing: exit %d: %s", code, errs)
	}
}

// Kernel Tuner's recorded energy caches, replayed through gtune's import:
// the energy objective picks the clock and block size the data shows.
func TestReplayKernelTunerEnergyCaches(t *testing.T) {
	for _, tc := range []struct {
		file, param string
		want        float64
	}{
		{"synthetic_fp32_cache_NVIDIA_A100-PCIE-40GB.json", "nvml_gr_clock", 1005},
		{"synthetic_fp32_cache_NVIDIA_RTX_A4000.json", "nvml_gr_clock", 1335},
		{"test_cache_time_energy.json", "block_size_x", 896},
	} {
		p := filepath.Join("..", "..", "..", "shared", "datasets", "kernel_tuner_energy", tc.file)
		shared.Need(t, p)
		code, out, errs := gtune(t, "replay", p, "--objective", "energy", "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.file, code, errs)
		}
		var doc struct {
			Repeats []struct {
				Params map[string]any `json:"params"`
				Best   float64        `json:"best"`
			} `json:"repeats"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Repeats) != 1 {
			t.Fatalf("%s: %v: %s", tc.file, err, out)
		}
		if got := doc.Repeats[0].Params[tc.param]; got != tc.want {
			t.Errorf("%s: energy-optimal %s = %v, want %v", tc.file, tc.param, got, tc.want)
		}
		if tc.param == "nvml_gr_clock" && tc.want == 1005 && strconv.FormatFloat(doc.Repeats[0].Best, 'f', 1, 64) != "21.4" {
			t.Errorf("A100: %.3f J at 1005 MHz, want 21.4 J", doc.Repeats[0].Best)
		}
	}
}

// --clock-range ridge on the simulated GPU runs the synthetic kernel at
// every SM clock and keeps the clocks within ±10 % of the fitted ridge,
// with --allow-gpu-settings as on a real GPU; a dry run only says what
// it would run (the simulated GPU asks the same permission).
func TestClockRangeRidgeOnSimulator(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := gtune(t, "tune", writeSpec(t, "", ""), "--backend", "sim", "--gpu-settings", "g2", "--clock-range", "ridge", "--dry-run", "--db", filepath.Join(dir, "r.db"))
	if code != 0 || !strings.Contains(errs, "dry run: --clock-range ridge would first run a synthetic FMA kernel at each of the") {
		t.Fatalf("dry run: exit %d: %s", code, errs)
	}
	code, out, errs := gtune(t, "tune", writeSpec(t, "", ""), "--backend", "sim", "--gpu-settings", "g2", "--clock-range", "ridge", "--allow-gpu-settings",
		"--sim-nvml-state", filepath.Join(dir, "state.json"), "--max-evals", "5", "--json", "--no-progress", "--db", filepath.Join(dir, "r.db"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	m := regexp.MustCompile(`ridge frequency (\d+) MHz .*SM clocks (\d+)\.\.(\d+) MHz \((\d+)\)`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("stderr: %s", errs)
	}
	ridge, lo, hi, n := atoi(m[1]), atoi(m[2]), atoi(m[3]), atoi(m[4])
	if float64(lo) < 0.9*float64(ridge) || float64(hi) > 1.1*float64(ridge) || n != (hi-lo)/15+1 {
		t.Fatalf("ridge %d, clocks %d..%d (%d)", ridge, lo, hi, n)
	}
	var doc struct {
		Best struct {
			Params map[string]any `json:"params"`
		} `json:"best"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if c, ok := doc.Best.Params["nvml_gr_clock"].(float64); !ok || int(c) < lo || int(c) > hi {
		t.Errorf("best nvml_gr_clock %v outside the ridge window %d..%d MHz", doc.Best.Params["nvml_gr_clock"], lo, hi)
	}
	code, _, errs = gtune(t, "tune", writeSpec(t, "", ""), "--backend", "sim", "--clock-range", "ridge", "--db", filepath.Join(dir, "r.db"))
	if code != 2 || !strings.Contains(errs, "--clock-range ridge narrows the nvml_gr_clock dimension") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
