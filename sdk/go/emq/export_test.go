package emq

// PushIdle reports whether q's coalescer has no batch in flight and no
// push waiting, for tests that count script calls.
func PushIdle(q *Queue) bool {
	f, w := q.p.inFlight()
	return f == 0 && w == 0
}
