// Package templates holds the text templates emqgen renders: the Lua file
// wrapper and the Markdown reference. It exists because go:embed cannot
// reach a parent folder.
package templates

import "embed"

// FS holds lua/*.tmpl and docs/*.tmpl.
//
//go:embed lua/*.tmpl docs/*.tmpl
var FS embed.FS
