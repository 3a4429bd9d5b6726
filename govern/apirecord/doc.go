// Package apirecord records what users of the Go SDK and the Lua bundle
// compile and call against, so that the protocol's governance can refuse a
// minor version that breaks it.
//
// Two surfaces are recorded. The Go surface (SDKAPI) is the whole public
// API of the Go SDK: package emq (sdk/go/emq, the hand-written idiomatic
// layer and its generated re-exports) and package wire (sdk/go/emq/wire,
// the generated wire layer), one package-qualified feature per line in the
// style of Go's api/go1.*.txt files (cmd/api), written to and read from
// disk with WriteAPI and ReadAPI. GoAPI gives the unqualified lines of one
// package. Records frozen before the layers split are unqualified and
// describe the generated layer; Normalize reads them as lines of
// LegacyPackage. The Lua surface (LuaSlots) is each script's KEYS and ARGV
// names, in order, as the generated bundle declares them. CompareAPI and
// CompareSlots judge a new surface against an old one and list the
// Breaks; what counts as a break follows golang.org/x/exp/apidiff for Go,
// and for Lua any change to a script's positional slots.
//
// Everything is read from the files' syntax with the standard library's
// go/parser and go/ast; nothing is type-checked or loaded (SDKAPI says
// why).
package apirecord
