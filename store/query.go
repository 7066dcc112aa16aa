package store

import (
	"context"
	"fmt"
)

// StatusCounts gives, for every run, how many of its evaluations have
// each status (valid, compile_failed, ...).
func (db *DB) StatusCounts() (map[int64]map[string]int, error) {
	if err := db.Flush(); err != nil {
		return nil, err
	}
	rows, err := db.sql.QueryContext(context.Background(), `SELECT run_id, status, count(*) FROM evaluations GROUP BY run_id, status`)
	if err != nil {
		return nil, fmt.Errorf("store: counting evaluations in %s: %v", db.path, err)
	}
	defer rows.Close()
	out := map[int64]map[string]int{}
	for rows.Next() {
		var id int64
		var status string
		var n int
		if err := rows.Scan(&id, &status, &n); err != nil {
			return nil, fmt.Errorf("store: counting evaluations in %s: %v", db.path, err)
		}
		if out[id] == nil {
			out[id] = map[string]int{}
		}
		out[id][status] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: counting evaluations in %s: %v", db.path, err)
	}
	return out, nil
}
