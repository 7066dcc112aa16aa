package occupancy

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/internal/bounded"
)

// Checked is Compute for input given by a user: every error it returns
// comes from the input (or an unsuitable device), so it is bad input
// (badinput), said in the user's terms.
func Checked(d *device.Description, in Input) (Result, error) {
	r, err := Compute(d, in)
	if err == nil {
		return r, nil
	}
	switch {
	case in.BlockSize < 0 || in.BlockSize == 0 || in.BlockSize > d.MaxThreadsPerBlock:
		if d.IsCUDA() {
			return r, badinput.New("block size %d: must be 1..%d threads on %s (any count is allowed; partial warps count whole)", in.BlockSize, d.MaxThreadsPerBlock, d.ID)
		}
	case in.RegistersPerThread < 0:
		return r, badinput.New("registers %d: must be >= 0", in.RegistersPerThread)
	case in.SharedMemoryPerBlock < 0:
		return r, badinput.New("shared memory %d bytes: must be >= 0", in.SharedMemoryPerBlock)
	case errors.Is(err, ErrRegisters):
		return r, badinput.New("registers %d: above the %d registers per thread of %s (compute capability %d.%d)", in.RegistersPerThread, d.MaxRegistersPerThread, d.ID, d.ComputeMajor, d.ComputeMinor)
	case errors.Is(err, ErrSharedMemory):
		return r, badinput.New("shared memory %d bytes: above the opt-in maximum of %d bytes per thread block on %s", in.SharedMemoryPerBlock, d.SharedMemoryPerBlockOptin, d.ID)
	}
	return r, badinput.Wrap(err)
}

// Batch reads CSV block_size,registers,shared_memory from r and
// writes each row back with active_blocks_per_sm,occupancy,limiter.
// Errors name the line of the bad row.
func Batch(r io.Reader, w io.Writer, d *device.Description, carveout int) error {
	cr := csv.NewReader(bounded.Reader(r, bounded.Text, "standard input", "a --batch CSV"))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	// Buffered whole, so a bad row leaves no partial output.
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	header := false
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// A parse error (an unterminated quote) leaves no record:
			// FieldPos would panic.
			return badinput.New("--batch: %v", err)
		}
		line, _ := cr.FieldPos(0)
		if !header {
			want := []string{"block_size", "registers", "shared_memory"}
			if len(rec) != 3 || strings.TrimSpace(rec[0]) != want[0] || strings.TrimSpace(rec[1]) != want[1] || strings.TrimSpace(rec[2]) != want[2] {
				return badinput.New("--batch: line %d: header %q, want block_size,registers,shared_memory", line, strings.Join(rec, ","))
			}
			header = true
			if err := cw.Write(append(want, "active_blocks_per_sm", "occupancy", "limiter")); err != nil {
				return err
			}
			continue
		}
		if len(rec) != 3 {
			return badinput.New("--batch: line %d: %d fields, want 3 (block_size,registers,shared_memory)", line, len(rec))
		}
		var v [3]int
		for i, s := range rec {
			if v[i], err = strconv.Atoi(strings.TrimSpace(s)); err != nil {
				return badinput.New("--batch: line %d: %s %q is not an integer", line, []string{"block_size", "registers", "shared_memory"}[i], s)
			}
		}
		res, err := Checked(d, Input{BlockSize: v[0], RegistersPerThread: v[1], SharedMemoryPerBlock: v[2], CarveoutKiB: carveout})
		if err != nil {
			return badinput.Wrap(fmt.Errorf("--batch: line %d: %w", line, err))
		}
		out := []string{strconv.Itoa(v[0]), strconv.Itoa(v[1]), strconv.Itoa(v[2]),
			strconv.Itoa(res.ActiveBlocksPerSM), strconv.FormatFloat(res.Occupancy, 'f', -1, 64), string(res.Limiter)}
		if err := cw.Write(out); err != nil {
			return err
		}
	}
	if !header {
		return badinput.New("--batch: no input; want CSV with the header block_size,registers,shared_memory")
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
