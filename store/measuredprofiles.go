package store

import (
	"os"

	"github.com/gtune/gtune/internal/badinput"
)

// MeasuredProfiles gives, by device id, "measured DATE" for each GPU with
// a profile measured on a real GPU in the database at path; an empty map
// where the file does not exist (it is not created).
func MeasuredProfiles(path string) (map[string]string, error) {
	out := map[string]string{}
	// An empty file holds no profile (it was a database to be): read as
	// absent, not written to make it one.
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		return out, nil
	}
	db, err := OpenReadOnly(path)
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	defer db.Close()
	latest, err := db.LatestProfiles()
	if err != nil {
		return nil, err
	}
	for id, p := range latest {
		out[id] = "measured " + p.MeasuredAt.UTC().Format("2006-01-02")
	}
	return out, nil
}
