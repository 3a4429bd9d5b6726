package chaos

import (
	"fmt"
	"sort"

	"github.com/echomq/echomq/sdk/go/emq"
)

// Verdict accounts for every acknowledged job of a run.
type Verdict struct {
	Acknowledged int64 // jobs whose enqueue the server acknowledged
	Finished     int64 // acknowledged jobs completed or buried, each counted once
	Completed    int64 // ... of them completed
	Buried       int64 // ... of them buried (by a worker, or by maintenance out of attempts)
	Lost         int64 // acknowledged, never finished, and in no set at the end
	Queued       int64 // acknowledged, never finished, still in pending, active or schedule
	Twice        int64 // jobs with more than one accepted finish (completion or burial)
	// Cancelled counts acknowledged jobs cancel_ids cancelled (the ledger's
	// Cancelled): each is finished by its cancellation, and must have no
	// accepted completion or burial and be in no set at the end.
	Cancelled int64

	CompletionAttempts int64 // handlers that returned nil, so the worker tried to complete
	StaleRefused       int64 // completions refused with EMQSTALE
	// StaleAccepted counts accepted completions whose token was not the
	// highest minted for the job: a lease holder other than the current
	// one finished it.
	StaleAccepted int64
	// InDoubt counts completion attempts whose outcome the worker never
	// learned: it was killed, or the connection failed, after the handler
	// returned.
	InDoubt int64
	// Inferred counts jobs finished by such an attempt: no accepted finish
	// is recorded, the row is gone, and only a completion deletes a row in
	// these runs, so one of the in-doubt attempts was accepted.
	Inferred int64
	// DoubleLeases counts leases (id, token) that two handlers started or
	// that were settled twice: a token minted twice means attempts went
	// back.
	DoubleLeases int64
	// Resurrected counts jobs completed and yet in pending, active or
	// schedule at the end.
	Resurrected int64
	// Unacknowledged counts jobs the workers ran that no producer saw
	// acknowledged.
	Unacknowledged int64
	// Unexplained counts completion attempts settled otherwise than
	// accepted, refused with EMQSTALE or in doubt.
	Unexplained int64
	// Problems gives examples of what is wrong, at most maxProblems.
	Problems []string
}

const maxProblems = 20

func (v *Verdict) problem(format string, args ...any) {
	if len(v.Problems) < maxProblems {
		v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
	}
}

// Judge accounts for the acknowledged jobs acked with the ledger of the
// workers' records, the set each job is in at the end (final: ids in no
// set are absent), and the highest attempts an observer saw per job
// (minted; may be nil). It is the harness's whole verdict: a job is
// finished when a completion or a burial of it was accepted, lost when it
// is not finished and in no set, finished twice when more than one finish
// was accepted, and a completion is stale-accepted when its token is below
// the highest token minted for the job.
func Judge(acked []string, l *Ledger, final map[string]emq.Set, minted map[string]int64) Verdict {
	var v Verdict
	ack := make(map[string]bool, len(acked))
	ids := append([]string(nil), acked...)
	sort.Strings(ids)
	for _, id := range ids {
		if ack[id] {
			continue
		}
		ack[id] = true
		v.Acknowledged++
		leases := l.Jobs[id]
		maxTok := minted[id]
		var completes, buries, doubt []int64
		for _, tok := range tokens(leases) {
			ls := leases[tok]
			maxTok = max(maxTok, tok)
			if ls.Twice > 0 {
				v.DoubleLeases++
				v.problem("%s token %d: recorded twice (%s)", id, tok, ls)
			}
			if ls.Ended && ls.OK {
				v.CompletionAttempts++
			}
			switch ls.Outcome {
			case recCompleted:
				completes = append(completes, tok)
			case recBuried:
				buries = append(buries, tok)
			case recStaleDone:
				v.StaleRefused++
			case recFailed, 0:
				if ls.Ended && ls.OK {
					doubt = append(doubt, tok)
				}
			default:
				if ls.Ended && ls.OK {
					v.Unexplained++
					v.problem("%s token %d: the handler returned nil, yet the job was settled with %c", id, tok, ls.Outcome)
				}
			}
		}
		v.InDoubt += int64(len(doubt))
		set, inSet := final[id]
		if from, ok := l.Cancelled[id]; ok {
			v.Cancelled++
			v.Finished++
			if len(completes)+len(buries) > 0 {
				v.Twice++
				v.problem("%s cancelled (it was %s), yet a settle of it was accepted: completions at tokens %v, burials at %v", id, from, completes, buries)
			}
			if inSet {
				v.Resurrected++
				v.problem("%s cancelled (it was %s), yet in %s at the end", id, from, set)
			}
			continue
		}
		finishes := len(completes) + len(buries)
		switch {
		case finishes == 0 && inSet && set == emq.SetDead:
			finishes = 1 // maintenance buried an expired lease out of attempts
			buries = append(buries, maxTok)
		case finishes == 0 && !inSet && len(doubt) > 0:
			finishes = 1
			completes = append(completes, doubt[len(doubt)-1])
			v.Inferred++
		}
		switch {
		case finishes == 0 && !inSet:
			v.Lost++
			v.problem("%s lost: acknowledged, never finished, in no set at the end (leases %s)", id, describe(leases))
			continue
		case finishes == 0:
			v.Queued++
			v.problem("%s not finished: still in %s at the end", id, set)
			continue
		}
		v.Finished++
		if len(completes) > 0 {
			v.Completed++
		} else {
			v.Buried++
		}
		if finishes > 1 {
			v.Twice++
			v.problem("%s finished twice: completions at tokens %v, burials at %v", id, completes, buries)
		}
		for _, tok := range completes {
			if tok < maxTok {
				v.StaleAccepted++
				v.problem("%s: the completion at token %d was accepted, but token %d was minted", id, tok, maxTok)
			}
		}
		if len(completes) > 0 && inSet && set != emq.SetDead {
			v.Resurrected++
			v.problem("%s completed, yet in %s at the end", id, set)
		}
		if len(buries) > 0 && len(completes) == 0 && !(inSet && set == emq.SetDead) {
			v.problem("%s buried, yet not in %s at the end", id, emq.SetDead)
		}
	}
	for id := range l.Jobs {
		if !ack[id] {
			v.Unacknowledged++
		}
	}
	return v
}

func describe(leases map[int64]*Lease) string {
	if len(leases) == 0 {
		return "none recorded"
	}
	s := ""
	for _, tok := range tokens(leases) {
		if s != "" {
			s += "; "
		}
		s += fmt.Sprintf("%d: %s", tok, leases[tok])
	}
	return s
}
