package gpuctl

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gtune/gtune/internal/bounded"
)

// JournalVersion is the version of the journal format this package
// writes and reads.
const JournalVersion = 1

// Journal is the record, written before the first change, of a GPU's
// original settings, so that they can be restored after a crash (`gtune
// restore`). It is JSON with a checksum over its other fields.
type Journal struct {
	Version    int    `json:"version"`
	Backend    string `json:"backend"` // "nvml" (a real GPU) or "sim" (a simulated control surface)
	DeviceUUID string `json:"device_uuid"`
	DeviceName string `json:"device_name"`
	// SimState is the simulated control surface's state file (absolute),
	// for Backend "sim".
	SimState string `json:"sim_state,omitempty"`
	Original State  `json:"original"`
	PID      int    `json:"pid"`     // the process that changed the settings
	Created  string `json:"created"` // RFC 3339
	// Checksum is "sha256:" and the hex SHA-256 of the journal's JSON
	// encoding with Checksum empty.
	Checksum string `json:"checksum"`
}

// JournalError is a journal that cannot be trusted: unreadable JSON, a
// wrong checksum or version, a missing field. Nothing should be restored
// from it.
type JournalError struct {
	Path string
	Msg  string
}

func (e *JournalError) Error() string { return fmt.Sprintf("journal %s: %s", e.Path, e.Msg) }

// ErrJournalExists is returned by WriteJournal when a journal is already
// there: an earlier run changed the settings and was not restored.
var ErrJournalExists = errors.New("a journal of an earlier run exists")

func (j Journal) sum() string {
	j.Checksum = ""
	b, _ := json.Marshal(j)
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// WriteJournal writes j (with its checksum) to path durably: a
// temporary file in the same directory, fsync, rename, fsync of the
// directory. Errors: ErrJournalExists (wrapped) when path exists, and
// file-system errors.
func WriteJournal(path string, j Journal) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%w: %s (run `gtune restore --journal %s` first)", ErrJournalExists, path, path)
	}
	j.Version = JournalVersion
	j.Checksum = j.sum()
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("writing the GPU-settings journal: %w", err)
	}
	_, werr := f.Write(append(b, '\n'))
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing the GPU-settings journal %s: %w", path, werr)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// ReadJournal reads and checks a journal. Errors: the file's (os.ErrNotExist
// when absent), or a *JournalError saying what is wrong with it.
func ReadJournal(path string) (*Journal, error) {
	b, err := bounded.ReadFile(path, bounded.MiB, "a GPU-settings journal")
	if err != nil {
		return nil, err
	}
	var j Journal
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, &JournalError{path, "not a gtune GPU-settings journal (corrupt JSON: " + err.Error() + ")"}
	}
	switch {
	case j.Version != JournalVersion:
		return nil, &JournalError{path, fmt.Sprintf("version %d; this gtune reads version %d", j.Version, JournalVersion)}
	case j.Checksum != j.sum():
		return nil, &JournalError{path, fmt.Sprintf("checksum mismatch (recorded %q, content gives %q): the file was changed or cut short", j.Checksum, j.sum())}
	case j.DeviceUUID == "":
		return nil, &JournalError{path, "names no device"}
	case j.Backend != "nvml" && j.Backend != "sim":
		return nil, &JournalError{path, fmt.Sprintf("unknown backend %q", j.Backend)}
	case j.Backend == "sim" && j.SimState == "":
		return nil, &JournalError{path, "a simulated GPU's journal without its state file"}
	}
	return &j, nil
}

// DefaultJournalPath is the journal beside a results database.
func DefaultJournalPath(db string) string { return db + ".gpu-journal" }
