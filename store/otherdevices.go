package store

import (
	"context"
	"fmt"
	"sort"
)

// DeviceResults are the results of one spec on one GPU: the newest
// evaluation of each configuration measured there, by configuration key.
type DeviceResults struct {
	DeviceUUID  string
	DeviceName  string // the name the newest run on that GPU recorded
	Evaluations map[string]*Evaluation
}

// OtherDevices returns the results of the spec of hash specHash on every
// GPU but the one of deviceUUID (any run: tune, replay, import), one
// DeviceResults per GPU, in order of device UUID: what the transfer
// strategy learns from when the same kernel is tuned on a new GPU. None
// when no other GPU ran the spec. Errors: the database's.
func (db *DB) OtherDevices(specHash, deviceUUID string) ([]DeviceResults, error) {
	es, err := db.queryEvaluations("evaluations on other devices",
		`SELECT `+evalColumns+` FROM evaluations WHERE id IN (
			SELECT max(id) FROM evaluations WHERE spec_hash = ? AND device_uuid <> ? GROUP BY device_uuid, config_key)`,
		specHash, deviceUUID)
	if err != nil || len(es) == 0 {
		return nil, err
	}
	byUUID := map[string]*DeviceResults{}
	for _, e := range es {
		d := byUUID[e.DeviceUUID]
		if d == nil {
			d = &DeviceResults{DeviceUUID: e.DeviceUUID, Evaluations: map[string]*Evaluation{}}
			byUUID[e.DeviceUUID] = d
		}
		d.Evaluations[e.Key] = e
	}
	rows, err := db.sql.QueryContext(context.Background(),
		`SELECT device_uuid, device_name FROM runs WHERE spec_hash = ? AND device_uuid <> ? ORDER BY id`, specHash, deviceUUID)
	if err != nil {
		return nil, fmt.Errorf("store: reading the devices of spec %s from %s: %v", specHash, db.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var uuid, name string
		if err := rows.Scan(&uuid, &name); err != nil {
			return nil, fmt.Errorf("store: reading the devices of spec %s from %s: %v", specHash, db.path, err)
		}
		if d := byUUID[uuid]; d != nil {
			d.DeviceName = name // newest run last
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reading the devices of spec %s from %s: %v", specHash, db.path, err)
	}
	out := make([]DeviceResults, 0, len(byUUID))
	for _, d := range byUUID {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DeviceUUID < out[j].DeviceUUID })
	return out, nil
}
