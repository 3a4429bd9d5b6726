package cli

func runProbe(e *env, args []string) int {
	e.errorf("probe: not implemented yet")
	return ExitUsage
}
