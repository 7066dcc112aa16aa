package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// migrateV5 adds device profiles (package probe, model.Profile): what a
// GPU sustained in gtune's microbenchmarks, kept per device so that a
// projection across GPUs uses what was measured rather than the
// specifications. The profile itself is JSON; device, source and the
// date are columns to choose by.
func migrateV5(ctx context.Context, tx *sql.Tx) error {
	const schema = `
CREATE TABLE device_profiles (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	device      TEXT NOT NULL,
	name        TEXT NOT NULL,
	uuid        TEXT NOT NULL DEFAULT '',
	source      TEXT NOT NULL,
	measured_at TEXT NOT NULL,
	host        TEXT NOT NULL DEFAULT '',
	profile     TEXT NOT NULL CHECK (json_valid(profile))
);
CREATE INDEX device_profiles_device ON device_profiles (device, measured_at);
`
	_, err := tx.ExecContext(ctx, schema)
	return err
}

// Profile is a stored device profile: Device is its device-database id,
// Source where its figures came from ("measured", "simulated"), JSON the
// profile (model.Profile) as written.
type Profile struct {
	ID         int64
	Device     string
	Name       string
	UUID       string
	Source     string
	MeasuredAt time.Time
	Host       string
	JSON       json.RawMessage
}

// AddProfile stores p (its ID and, when empty, Host are set). Errors: an
// empty device or source, JSON that is not valid, the database's.
func (db *DB) AddProfile(p *Profile) error {
	if p.Device == "" || p.Source == "" {
		return fmt.Errorf("store: a device profile needs a device and a source")
	}
	if !json.Valid(p.JSON) {
		return fmt.Errorf("store: device profile of %s: invalid JSON", p.Device)
	}
	if p.Host == "" {
		p.Host, _ = os.Hostname()
	}
	if p.MeasuredAt.IsZero() {
		p.MeasuredAt = time.Now()
	}
	res, err := db.sql.Exec(`INSERT INTO device_profiles (device, name, uuid, source, measured_at, host, profile) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		p.Device, p.Name, p.UUID, p.Source, p.MeasuredAt.UTC().Format(time.RFC3339Nano), p.Host, string(p.JSON))
	if err != nil {
		return err
	}
	p.ID, err = res.LastInsertId()
	return err
}

// Profiles gives the stored device profiles, the newest first.
func (db *DB) Profiles() ([]*Profile, error) {
	rows, err := db.sql.Query(`SELECT id, device, name, uuid, source, measured_at, host, profile FROM device_profiles ORDER BY measured_at DESC, id DESC`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Profile
	for rows.Next() {
		var p Profile
		var at, js string
		if err := rows.Scan(&p.ID, &p.Device, &p.Name, &p.UUID, &p.Source, &at, &p.Host, &js); err != nil {
			return nil, err
		}
		if p.MeasuredAt, err = time.Parse(time.RFC3339Nano, at); err != nil {
			return nil, fmt.Errorf("store: device profile %d: measured_at %q: %v", p.ID, at, err)
		}
		p.JSON = json.RawMessage(js)
		out = append(out, &p)
	}
	return out, rows.Err()
}

// LatestProfiles gives, per device, the newest stored profile measured on
// a real GPU (source "measured"), by device id.
func (db *DB) LatestProfiles() (map[string]*Profile, error) {
	all, err := db.Profiles()
	if err != nil {
		return nil, err
	}
	out := map[string]*Profile{}
	for _, p := range all {
		if _, seen := out[p.Device]; !seen && p.Source == "measured" {
			out[p.Device] = p
		}
	}
	return out, nil
}
