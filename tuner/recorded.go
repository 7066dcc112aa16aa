package tuner

import (
	"slices"

	"github.com/gtune/gtune/store"
)

// recorded tells the strategy the results a re-run takes from the database
// in the order they were told in the run that measured them, so that a run
// resumed after an interruption follows the interrupted run's path: with
// Config.CompletionOrder the results of a run were told (and stored, and
// given ascending ids) in the order compilations finished, not in the
// order the strategy proposed them, and an adaptive strategy's next
// proposals depend on that order.
//
// The order is kept among the stored results of each earlier run (by
// store.Evaluation.ID): a stored result the strategy proposes waits until
// every result of its run with a smaller id has been told or proved
// unusable (not reusable, so evaluated again). Results of different runs
// are not ordered against each other. A strategy that cannot propose more
// before it is told something while results wait (it diverged from the
// recorded path: another seed, look-ahead or strategy) is told the waiting
// result of smallest id; at the end of the run every waiting result is
// told, by id.
type recorded struct {
	// order is each run's stored ids, ascending; next the position in it
	// of the first not yet told or skipped.
	order map[int64][]int64
	next  map[int64]int
	// done marks ids told or skipped; waiting holds proposed results until
	// their turn.
	done    map[int64]bool
	waiting map[int64]*Evaluation
}

func newRecorded(previous map[string]*store.Evaluation) *recorded {
	rc := &recorded{order: map[int64][]int64{}, next: map[int64]int{}, done: map[int64]bool{}, waiting: map[int64]*Evaluation{}}
	for _, e := range previous {
		rc.order[e.RunID] = append(rc.order[e.RunID], e.ID)
	}
	for _, ids := range rc.order {
		slices.Sort(ids)
	}
	return rc
}

// add holds o, the reused result of stored evaluation e, and returns the
// results now due, in the order to tell them.
func (rc *recorded) add(e *store.Evaluation, o *Evaluation) []*Evaluation {
	if _, twice := rc.waiting[e.ID]; twice || rc.done[e.ID] {
		return []*Evaluation{o} // proposed again: told at once
	}
	rc.waiting[e.ID] = o
	return rc.due(e.RunID)
}

// skip marks stored evaluation e as not told from the database (it is
// evaluated again) and returns the results now due.
func (rc *recorded) skip(e *store.Evaluation) []*Evaluation {
	rc.done[e.ID] = true
	return rc.due(e.RunID)
}

// due pops the waiting results of run whose turn has come.
func (rc *recorded) due(run int64) []*Evaluation {
	var out []*Evaluation
	ids := rc.order[run]
	i := rc.next[run]
	for ; i < len(ids); i++ {
		id := ids[i]
		if o, ok := rc.waiting[id]; ok {
			out = append(out, o)
			delete(rc.waiting, id)
			rc.done[id] = true
			continue
		}
		if !rc.done[id] {
			break
		}
	}
	rc.next[run] = i
	return out
}

// pending reports whether results wait.
func (rc *recorded) pending() bool { return len(rc.waiting) > 0 }

// force gives up waiting for the earliest result: the waiting result of
// smallest id is due, with those of its run that then follow.
func (rc *recorded) force() []*Evaluation {
	if len(rc.waiting) == 0 {
		return nil
	}
	first := int64(-1)
	for id := range rc.waiting {
		if first < 0 || id < first {
			first = id
		}
	}
	for run, ids := range rc.order {
		i := slices.Index(ids, first)
		if i < rc.next[run] {
			continue
		}
		for _, id := range ids[rc.next[run]:i] {
			rc.done[id] = true
		}
		return rc.due(run)
	}
	return nil
}

// flush returns every waiting result, by id.
func (rc *recorded) flush() []*Evaluation {
	ids := make([]int64, 0, len(rc.waiting))
	for id := range rc.waiting {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]*Evaluation, len(ids))
	for i, id := range ids {
		out[i] = rc.waiting[id]
		delete(rc.waiting, id)
		rc.done[id] = true
	}
	return out
}
