// Package profile gives a kernel's instruction mix and memory traffic:
// the application-dependent inputs of the utilisation model of
// symbiotic-scheduling-concurrent-kernels.md (Table 2, lower part:
// N_inst, R_sp, R_dp, R_mem, N_mem), which the symbiotic launch order
// is computed from (package schedule).
//
// Two sources, stated in every Mix:
//   - "ncu": counted on the GPU by Nsight Compute (the paper's own source,
//     "collected through the CUDA profiler"), read-only (--clock-control
//     none): warp-level instructions executed, FP32 and FP64 thread
//     instructions (÷ 32 for warp-level), warp-level global load and store
//     instructions, and DRAM bytes read and written.
//   - "model": derived from the work the spec declares
//     (Gtune.Simulation.Flops and Bytes), for the simulated GPU and for
//     machines without ncu: every floating-point operation an FP32 FMA of
//     2 flops (FLOPs ÷ 64 warp instructions), every byte moved by a
//     coalesced 4-byte-per-thread access (bytes ÷ 128 warp instructions of
//     128 B), and no other instruction. These are the assumptions of the
//     simulated GPU's own throughput model, so the order computed from
//     them is the order that model rewards; on a real GPU they ignore
//     integer, control and shared-memory instructions and the caches.
//
// T_avg_data (the average global-memory latency) is not measured: it
// enters the paper's IPC utilisation (equation 2) but cancels out of the
// utilisation balance (equation 5) that the algorithm scores.
package profile

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/internal/bounded"
)

// Mix is one launch's instruction mix and memory traffic.
type Mix struct {
	// SP, DP and Mem are warp-level instructions executed: single- and
	// double-precision floating point, and global-memory loads and
	// stores.
	SP, DP, Mem float64
	// Instructions is every warp-level instruction executed (≥ SP+DP+Mem;
	// integer, control and shared-memory instructions included where the
	// source counts them).
	Instructions float64
	// MemBytes is the global-memory (DRAM) traffic, bytes.
	MemBytes float64
	Source   string // "ncu" or "model"
}

// Ratios gives the paper's R_sp, R_dp and R_mem (summing to 1 over the
// three classes the model knows, as it assumes), and N_mem, the average
// bytes per memory instruction. Errors: a mix with no instruction of the
// three classes.
func (m Mix) Ratios() (rsp, rdp, rmem, bytesPerMemInst float64, err error) {
	n := m.SP + m.DP + m.Mem
	if !(n > 0) {
		return 0, 0, 0, 0, errors.New("profile: no floating-point or memory instruction counted")
	}
	if m.Mem > 0 {
		bytesPerMemInst = m.MemBytes / m.Mem
	}
	return m.SP / n, m.DP / n, m.Mem / n, bytesPerMemInst, nil
}

// FromWork derives the mix from a job's declared work (the spec's
// Gtune.Simulation Flops and Bytes), with the assumptions the package
// documentation states. Errors: a job without declared work.
func FromWork(j *backend.Job) (Mix, error) {
	if j.Work == nil || (j.Work.Flops <= 0 && j.Work.Bytes <= 0) {
		return Mix{}, fmt.Errorf("profile: configuration %s declares no work (Gtune.Simulation Flops and Bytes)", j.Key)
	}
	m := Mix{SP: j.Work.Flops / 64, Mem: j.Work.Bytes / 128, MemBytes: j.Work.Bytes, Source: "model"}
	m.Instructions = m.SP + m.Mem
	return m, nil
}

// NcuMetrics are the Nsight Compute metrics Mix is read from.
var NcuMetrics = []string{
	"smsp__inst_executed.sum",
	"smsp__sass_thread_inst_executed_op_fp32_pred_on.sum",
	"smsp__sass_thread_inst_executed_op_fp64_pred_on.sum",
	"smsp__inst_executed_op_global_ld.sum",
	"smsp__inst_executed_op_global_st.sum",
	"dram__bytes_read.sum",
	"dram__bytes_write.sum",
}

// NcuArgs are the arguments of an ncu run that profiles the first
// launches launches of the command that follows them, in every process
// of it (gtune measures in a worker process), without touching the GPU's
// clocks, printing the metrics as CSV. ncu serialises concurrent
// launches to count them: their counts are each kernel's own.
func NcuArgs(launches int) []string {
	return []string{
		"--target-processes", "all", "--clock-control", "none",
		"--launch-count", strconv.Itoa(launches),
		"--metrics", strings.Join(NcuMetrics, ","),
		"--csv", "--page", "raw", "--print-units", "base",
	}
}

// Launch is one profiled kernel launch: its kernel's name as ncu prints
// it and its mix.
type Launch struct {
	Kernel string
	Mix    Mix
}

// LaunchMetrics is one launch ncu profiled: its kernel's name as ncu
// prints it, and each metric's value and unit (ncu's base units with
// --print-units base: byte, inst, %, cycle, ...).
type LaunchMetrics struct {
	Kernel string
	// Grid (thread blocks) and Block (threads) are the launch's
	// dimensions x, y, z as ncu gives them; zero where it does not.
	Grid, Block [3]int
	Values      map[string]float64
	Units       map[string]string
}

// dims reads ncu's "(256, 1, 1)"; zero when it is not three integers.
func dims(s string) [3]int {
	var d [3]int
	f := strings.Split(strings.Trim(strings.TrimSpace(s), "()"), ",")
	if len(f) != 3 {
		return [3]int{}
	}
	for i, x := range f {
		v, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return [3]int{}
		}
		d[i] = v
	}
	return d
}

// metaColumns are the columns of ncu's raw CSV page that describe the
// launch rather than measure it.
var metaColumns = map[string]bool{"ID": true, "Process ID": true, "Process Name": true, "Host Name": true, "Kernel Name": true,
	"Context": true, "Stream": true, "Block Size": true, "Grid Size": true, "Device": true, "CC": true}

// ParseNcuMetrics reads ncu's raw CSV page (a header line of column
// names, a line of units, then one line per profiled launch, in launch
// order; lines before the header, such as ncu's "==PROF==" notes, are
// skipped) and gives every metric of each launch. A metric ncu could
// not give ("n/a", a GPU without it) is left out of that launch.
// Errors: no header, or no launch.
func ParseNcuMetrics(r io.Reader) ([]LaunchMetrics, error) {
	b, err := bounded.ReadAll(r, bounded.Data, "Nsight Compute's report", "a profiler report")
	if err != nil {
		return nil, err
	}
	text := string(b)
	i := strings.Index(text, "\"ID\"")
	if i < 0 {
		return nil, errors.New("profile: ncu printed no CSV table (did it profile any launch?)")
	}
	rows, err := csv.NewReader(strings.NewReader(text[i:])).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("profile: ncu CSV: %w", err)
	}
	head := rows[0]
	kc := slices.Index(head, "Kernel Name")
	if kc < 0 {
		return nil, errors.New("profile: ncu CSV has no Kernel Name column")
	}
	units := map[string]string{}
	var out []LaunchMetrics
	for _, row := range rows[1:] {
		if len(row) != len(head) {
			continue
		}
		if row[kc] == "" { // the units line
			for k, name := range head {
				units[name] = row[k]
			}
			continue
		}
		l := LaunchMetrics{Kernel: row[kc], Values: map[string]float64{}, Units: map[string]string{}}
		for k, name := range head {
			switch name {
			case "Grid Size":
				l.Grid = dims(row[k])
			case "Block Size":
				l.Block = dims(row[k])
			}
			if metaColumns[name] {
				continue
			}
			x, err := strconv.ParseFloat(strings.ReplaceAll(row[k], ",", ""), 64)
			if err != nil {
				continue
			}
			l.Values[name], l.Units[name] = x, units[name]
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, errors.New("profile: ncu profiled no launch")
	}
	return out, nil
}

// ParseNcuCSV reads ncu's raw CSV page (ParseNcuMetrics) and gives each
// launch's mix. Errors: those of ParseNcuMetrics, a metric of
// NcuMetrics missing or not a number (ncu prints "n/a" for a metric the
// GPU does not have).
func ParseNcuCSV(r io.Reader) ([]Launch, error) {
	ls, err := ParseNcuMetrics(r)
	if err != nil {
		return nil, err
	}
	out := make([]Launch, len(ls))
	for i, l := range ls {
		for _, m := range NcuMetrics {
			if _, ok := l.Values[m]; !ok {
				return nil, fmt.Errorf("profile: ncu gave no value of %s for %s", m, l.Kernel)
			}
		}
		v := l.Values
		out[i] = Launch{Kernel: l.Kernel, Mix: Mix{
			Instructions: v["smsp__inst_executed.sum"],
			SP:           v["smsp__sass_thread_inst_executed_op_fp32_pred_on.sum"] / 32,
			DP:           v["smsp__sass_thread_inst_executed_op_fp64_pred_on.sum"] / 32,
			Mem:          v["smsp__inst_executed_op_global_ld.sum"] + v["smsp__inst_executed_op_global_st.sum"],
			MemBytes:     v["dram__bytes_read.sum"] + v["dram__bytes_write.sum"],
			Source:       "ncu",
		}}
	}
	return out, nil
}
