package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/gtune/gtune/internal/bounded"
)

// migrateV6 keeps the PTX of each compiled configuration
// (performance-projection-heterogeneous-gpus.md section IV-C: the
// mini-emulation of one work-group runs on the kernel's intermediate
// code), so that package emulate can count a configuration's work later,
// on a machine without a GPU or a compiler. Texts are kept once by
// content (gzip-compressed; configurations differing in a parameter the
// compiler folds away share one), each evaluation's launches point at
// theirs.
func migrateV6(ctx context.Context, tx *sql.Tx) error {
	const schema = `
CREATE TABLE ptx_texts (
	sha256 TEXT PRIMARY KEY,
	bytes  INTEGER NOT NULL,
	gz     BLOB NOT NULL
);
CREATE TABLE evaluation_ptx (
	evaluation_id INTEGER NOT NULL REFERENCES evaluations(id) ON DELETE CASCADE,
	launch        INTEGER NOT NULL,
	kernel        TEXT NOT NULL,
	sha256        TEXT NOT NULL REFERENCES ptx_texts(sha256),
	PRIMARY KEY (evaluation_id, launch)
);
`
	_, err := tx.ExecContext(ctx, schema)
	return err
}

// KernelPTX is the PTX a launch of an evaluation ran: Launch is its index
// in the plan, Kernel its kernel's name in the source.
type KernelPTX struct {
	Launch int
	Kernel string
	PTX    []byte
}

// addPTX stores an evaluation's PTX texts inside its transaction.
func addPTX(ctx context.Context, tx *sql.Tx, evalID int64, ps []KernelPTX) error {
	for _, p := range ps {
		if len(p.PTX) == 0 {
			continue
		}
		sum := sha256.Sum256(p.PTX)
		h := hex.EncodeToString(sum[:])
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(p.PTX)
		if err := zw.Close(); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO ptx_texts (sha256, bytes, gz) VALUES (?, ?, ?)`, h, len(p.PTX), buf.Bytes()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO evaluation_ptx (evaluation_id, launch, kernel, sha256) VALUES (?, ?, ?, ?)`, evalID, p.Launch, p.Kernel, h); err != nil {
			return err
		}
	}
	return nil
}

// StoredPTX is a configuration's PTX as a run compiled it, with the
// registers per thread the run's GPU allotted it (0 where not known:
// register allocation follows PTX, so the PTX alone does not say).
type StoredPTX struct {
	RunID        int64
	EvaluationID int64
	DeviceUUID   string
	Kernel       string
	Registers    int
	PTX          []byte
}

// PTXOf returns the PTX of launch 0 of configuration key of the spec
// whose hash is specHash, from the newest evaluation that kept one.
// Errors: ErrNotFound where no evaluation of that configuration kept
// PTX (compiled before PTX was kept, by a backend that makes none, or
// never); the database's; a stored text that does not decompress or
// whose hash does not match (a damaged file).
func (db *DB) PTXOf(specHash, key string) (*StoredPTX, error) {
	var (
		p  StoredPTX
		h  string
		gz []byte
		n  int
	)
	err := db.sql.QueryRow(`SELECT e.run_id, e.id, e.device_uuid, e.registers, x.kernel, x.sha256, t.bytes, t.gz
		FROM evaluations e JOIN evaluation_ptx x ON x.evaluation_id = e.id JOIN ptx_texts t ON t.sha256 = x.sha256
		WHERE e.spec_hash = ? AND e.config_key = ? AND x.launch = 0
		ORDER BY e.id DESC LIMIT 1`, specHash, key).Scan(&p.RunID, &p.EvaluationID, &p.DeviceUUID, &p.Registers, &p.Kernel, &h, &n, &gz)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: no PTX kept for configuration %q in %s: %w", key, db.path, ErrNotFound)
	} else if err != nil {
		return nil, fmt.Errorf("store: PTX of configuration %q in %s: %v", key, db.path, err)
	}
	if p.PTX, err = unzipPTX(gz, h); err == nil && len(p.PTX) != n {
		err = fmt.Errorf("%d bytes where %d were stored", len(p.PTX), n)
	}
	if err != nil {
		return nil, fmt.Errorf("store: PTX %s of configuration %q in %s is damaged: %v", h[:12], key, db.path, err)
	}
	return &p, nil
}

// PTXCount returns how many evaluations of the spec whose hash is
// specHash kept PTX, and how many distinct texts they share.
func (db *DB) PTXCount(specHash string) (evaluations, texts int, err error) {
	err = db.sql.QueryRow(`SELECT COUNT(DISTINCT e.id), COUNT(DISTINCT x.sha256) FROM evaluations e
		JOIN evaluation_ptx x ON x.evaluation_id = e.id WHERE e.spec_hash = ?`, specHash).Scan(&evaluations, &texts)
	if err != nil {
		err = fmt.Errorf("store: counting PTX in %s: %v", db.path, err)
	}
	return
}

// EvaluationPTX returns the PTX kept by evaluation evalID, one per launch
// that kept one, in launch order (none: nil). Errors: the database's, a
// damaged text.
func (db *DB) EvaluationPTX(evalID int64) ([]KernelPTX, error) {
	rows, err := db.sql.Query(`SELECT x.launch, x.kernel, x.sha256, t.gz FROM evaluation_ptx x JOIN ptx_texts t ON t.sha256 = x.sha256
		WHERE x.evaluation_id = ? ORDER BY x.launch`, evalID)
	if err != nil {
		return nil, fmt.Errorf("store: PTX of evaluation %d in %s: %v", evalID, db.path, err)
	}
	defer rows.Close()
	var out []KernelPTX
	for rows.Next() {
		var (
			p  KernelPTX
			h  string
			gz []byte
		)
		if err := rows.Scan(&p.Launch, &p.Kernel, &h, &gz); err != nil {
			return nil, fmt.Errorf("store: PTX of evaluation %d in %s: %v", evalID, db.path, err)
		}
		if p.PTX, err = unzipPTX(gz, h); err != nil {
			return nil, fmt.Errorf("store: PTX %s of evaluation %d in %s is damaged: %v", h[:12], evalID, db.path, err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// unzipPTX decompresses a stored text and checks it against its hash h.
func unzipPTX(gz []byte, h string) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	b, err := bounded.ReadAll(zr, bounded.PTX, "a stored PTX", "PTX")
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != h {
		return nil, errors.New("its content does not match its hash")
	}
	return b, nil
}
