package emqcli

import "context"

// ServeDashboardUntil makes emq dashboard serve until ctx ends instead of
// until a signal, for tests; the returned func restores the signals.
func ServeDashboardUntil(ctx context.Context) (restore func()) {
	old := dashboardContext
	dashboardContext = func() (context.Context, context.CancelFunc) { return context.WithCancel(ctx) }
	return func() { dashboardContext = old }
}
