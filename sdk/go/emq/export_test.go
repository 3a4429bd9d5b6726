package emq

// PushIdle reports whether q's coalescer has no batch in flight and no
// push waiting, for tests that count script calls.
func PushIdle(q *Queue) bool {
	f, w := q.p.inFlight()
	return f == 0 && w == 0
}

// PeerClosed reports whether the server has closed conn, as the client
// looks before a write (a peek that consumes nothing).
var PeerClosed = peerClosed
