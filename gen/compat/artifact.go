package compat

// Surface is what users compile and call against, taken from the
// artifacts generated from one manifest.
type Surface struct {
	// API is the exported API of the generated Go package, one feature per
	// line (see package surface).
	API []string
	// APIFile names where API was read from, for positions; APILines gives
	// the line of each feature in it when it was read from a file.
	APIFile  string
	APILines map[string]int
	// Slots are each script's KEYS and ARGV slot names, in order.
	Slots map[string]Slots
}

// Slots are one script's KEYS and ARGV slot names, in order.
type Slots struct {
	Keys, Argv []string
}

// ArtifactRules are the rules that compare generated artifacts.
func ArtifactRules() []Rule { return nil }

func compareSurfaces(old, new Side) []Finding { return nil }
