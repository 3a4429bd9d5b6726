// Package gomod holds the test that every module of the repository asks
// for the lowest Go that builds it: the highest go line among its
// dependencies. What the module's own code needs of a newer standard
// library is caught by go vet's stdversion analyzer, which ./test.sh runs
// against the same go line.
package gomod
