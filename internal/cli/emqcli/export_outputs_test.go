package emqcli

import "context"

// FollowEventsUntil makes emq inspect events -follow listen until ctx ends
// instead of until a signal, for tests; the returned func restores the
// signals.
func FollowEventsUntil(ctx context.Context) (restore func()) {
	old := followContext
	followContext = func() (context.Context, context.CancelFunc) { return context.WithCancel(ctx) }
	return func() { followContext = old }
}
