// Package surface records what users of the generated artifacts compile
// and call against, so that the protocol's governance can refuse a minor
// version that breaks it.
//
// Two surfaces are recorded. The Go surface (GoAPI) is the exported API of
// the generated package sdk/go/emq, one feature per line in the style of
// Go's api/go1.*.txt files (cmd/api), written to and read from disk with
// WriteAPI and ReadAPI. The Lua surface (LuaSlots) is each script's KEYS
// and ARGV names, in order, as the generated bundle declares them.
// CompareAPI and CompareSlots judge a new surface against an old one and
// list the Breaks; what counts as a break follows
// golang.org/x/exp/apidiff for Go, and for Lua any change to a script's
// positional slots.
//
// Everything is read from the generated files' syntax with the standard
// library's go/parser and go/ast; nothing is type-checked or loaded.
package apirecord
