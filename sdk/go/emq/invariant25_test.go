package emq_test

// TestInvariant's echomq 2.5.0 operations: add_dedup and replace_dedup
// (until_done and debounce admissions over a few keys, no delay, no TTL),
// dedup_entries, sweep_dedup and cancel_ids, through the SDK's Queue
// methods. The model follows each key's holder (invModel.dedup): a key is
// held while its holder is pending, scheduled or active, so every settle
// of the other operations releases it without knowing of it; and check
// holds the dedup hash to the model's entries.

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// invDedupKeys are the deduplication keys the operations take.
var invDedupKeys = []string{"order-1", "order-2", "order-3"}

// invDigest is the dedup hash's field of a key (the scripts' SHA-1).
func invDigest(key string) string {
	sum := sha1.Sum([]byte(key))
	return hex.EncodeToString(sum[:])
}

// dedupHeld returns the model's holder of key and whether it holds it.
func (v *invariant) dedupHeld(key string) (emq.ID, bool) {
	h, ok := v.model.dedup[key]
	if !ok {
		return emq.ID{}, false
	}
	j := v.model.jobs[h]
	return h, j != nil && (j.state == emq.StatePending || j.state == emq.StateScheduled || j.state == emq.StateActive)
}

// checkDedup holds the dedup hash (field: the key's digest, value: the
// holder first) to the model's entries.
func (v *invariant) checkDedup(got map[string]string) {
	v.t.Helper()
	if len(got) != len(v.model.dedup) {
		v.fail("the dedup hash holds %d entries %v; the model has %v", len(got), got, v.model.dedup)
	}
	for key, h := range v.model.dedup {
		if val := got[invDigest(key)]; !strings.HasPrefix(val, h.String()+" ") {
			v.fail("the dedup entry of %q is %q; the model's holder is %v", key, val, h)
		}
	}
}

func (v *invariant) addDedup() {
	key := invDedupKeys[v.rnd.IntN(len(invDedupKeys))]
	id, p := v.pick(), v.payload()
	foreign := v.rnd.IntN(10) == 0
	if foreign {
		id = mint(v.t, v.c, emq.KindORD)
	}
	v.note("add_dedup %v key %q (foreign %v)", id, key, foreign)
	got, err := v.q.AddDedup(v.ctx, []emq.NewJob{{ID: id, Payload: []byte(p), DedupKey: key}}, emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupUntilDone}))
	if foreign {
		if got != nil || !errors.Is(err, emq.ErrKind) {
			v.fail("AddDedup with a foreign kind = %v, %v; want EMQKIND", got, err)
		}
		v.count(wire.ScriptAddDedupPolicy.Name, false)
		return
	}
	if err != nil || len(got) != 1 {
		v.fail("AddDedup(%v, %q) = %v, %v", id, key, got, err)
	}
	h, held := v.dedupHeld(key)
	want := emq.DedupResult{Outcome: emq.AdmissionAdmitted, ID: id}
	switch {
	case held:
		want = emq.DedupResult{Outcome: emq.AdmissionDuplicate, ID: h}
	case v.model.jobs[id] != nil:
		want = emq.DedupResult{Outcome: emq.AdmissionDuplicate, ID: id}
	}
	if got[0] != want {
		v.fail("AddDedup(%v, %q) = %+v; the model says %+v", id, key, got[0], want)
	}
	if want.Outcome == emq.AdmissionAdmitted {
		v.model.jobs[id] = &invJob{state: emq.StatePending, payload: p}
		v.model.dedup[key] = id
		v.model.wake = true
	}
	v.count(wire.ScriptAddDedupPolicy.Name, want.Outcome == emq.AdmissionAdmitted)
}

// replaceDedup admits under debounce: a waiting holder takes the payload
// (and moves to pending, no delay given); an active one is left as it is
// and the new job takes the key. A target that is not the holder answers
// deferred and writes nothing.
func (v *invariant) replaceDedup() {
	key := invDedupKeys[v.rnd.IntN(len(invDedupKeys))]
	id, p := v.pick(), v.payload()
	h, held := v.dedupHeld(key)
	waiting := held && v.model.jobs[h].state != emq.StateActive
	target := id
	if waiting && v.rnd.IntN(4) != 0 {
		target = h
	}
	v.note("replace_dedup %v key %q target %v (holder %v, held %v)", id, key, target, h, held)
	got, err := v.q.ReplaceDedup(v.ctx, id, []byte(p), key, target, 0, emq.WithDedup(emq.DedupPolicy{Mode: emq.DedupDebounce}))
	if err != nil {
		v.fail("ReplaceDedup(%v, %q, %v): %v", id, key, target, err)
	}
	var want emq.DedupResult
	switch {
	case waiting && target != h:
		want = emq.DedupResult{Outcome: emq.AdmissionDeferred, ID: h}
	case waiting:
		want = emq.DedupResult{Outcome: emq.AdmissionReplaced, ID: h}
		j := v.model.jobs[h]
		j.payload, j.state, j.score = p, emq.StatePending, 0
		delete(v.model.options, h)
		v.model.wake = true
	case v.model.jobs[id] != nil:
		want = emq.DedupResult{Outcome: emq.AdmissionDuplicate, ID: id}
	default:
		want = emq.DedupResult{Outcome: emq.AdmissionAdmitted, ID: id}
		v.model.jobs[id] = &invJob{state: emq.StatePending, payload: p}
		v.model.dedup[key] = id
		v.model.wake = true
	}
	if got != want {
		v.fail("ReplaceDedup(%v, %q, %v) = %+v; the model says %+v", id, key, target, got, want)
	}
	v.count(wire.ScriptReplaceDedupPolicy.Name, want.Outcome == emq.AdmissionReplaced || want.Outcome == emq.AdmissionAdmitted)
}

func (v *invariant) dedupEntries() {
	key := invDedupKeys[v.rnd.IntN(len(invDedupKeys))]
	v.note("dedup_entries %q", key)
	got, err := v.q.DedupEntries(v.ctx, key)
	if err != nil || len(got) != 1 {
		v.fail("DedupEntries(%q) = %v, %v", key, got, err)
	}
	h, held := v.dedupHeld(key)
	var want emq.ID
	if _, ok := v.model.dedup[key]; ok {
		want = h
	}
	if got[0].Holder != want || got[0].Held != held {
		v.fail("DedupEntries(%q) = %+v; the model's holder %v, held %v", key, got[0], want, held)
	}
	if held && got[0].State != v.model.jobs[h].state {
		v.fail("DedupEntries(%q) says the holder is %s; the model says %s", key, got[0].State, v.model.jobs[h].state)
	}
	v.count(wire.ScriptDedupPolicyEntries.Name, held)
}

// sweepDedup walks the whole (small) hash in one page: the entries whose
// holders are done are dropped.
func (v *invariant) sweepDedup() {
	v.note("sweep_dedup")
	got, err := v.q.SweepDedup(v.ctx, "0", emq.MaxDedupSweep)
	if err != nil {
		v.fail("SweepDedup: %v", err)
	}
	dropped := 0
	for key := range v.model.dedup {
		if _, held := v.dedupHeld(key); !held {
			delete(v.model.dedup, key)
			dropped++
		}
	}
	if got.Cursor != "0" || got.Dropped != dropped || got.Released != 0 {
		v.fail("SweepDedup = %+v; the model drops %d in one page", got, dropped)
	}
	v.count(wire.ScriptSweepDedupPolicy.Name, dropped > 0)
}

// cancelIDs cancels a few ids of any state: the pending, scheduled and
// active ones go with what they left (policy, progress, failure record);
// the others are left as they are.
func (v *invariant) cancelIDs() {
	ids := []emq.ID{v.pick()}
	for _, st := range []emq.State{emq.StatePending, emq.StateScheduled, emq.StateActive, emq.StateDead} {
		if v.rnd.IntN(3) == 0 {
			ids = append(ids, v.pickIn(st))
		}
	}
	v.note("cancel_ids %v", ids)
	got, err := v.q.CancelIDs(v.ctx, ids, 0)
	if err != nil || len(got) != len(ids) {
		v.fail("CancelIDs(%v) = %v, %v", ids, got, err)
	}
	n := 0
	for i, id := range ids {
		var want emq.State
		if j := v.model.jobs[id]; j != nil && j.state != emq.StateDead {
			want = j.state
			v.retire(id)
			delete(v.model.options, id)
			delete(v.model.progress, id)
			delete(v.model.records, id)
			n++
		}
		if got[i] != want {
			v.fail("CancelIDs(%v): %v was cancelled from %q; the model says %q", ids, id, got[i], want)
		}
	}
	v.count(wire.ScriptCancelPolicyIDs.Name, n > 0)
}
