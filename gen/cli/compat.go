package cli

func runDiff(e *env, args []string) int {
	e.errorf("diff: not implemented yet")
	return ExitUsage
}

func runCheck(e *env, args []string) int {
	e.errorf("check: not implemented yet")
	return ExitUsage
}

func runRelease(e *env, args []string) int {
	e.errorf("release: not implemented yet")
	return ExitUsage
}
