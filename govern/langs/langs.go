// Package langs is the list of the languages whose SDK API the gate
// records and compares (govern/lang). Adding a language is a folder under
// govern/lang implementing lang.Language and one entry in list; a
// program may also Register one of its own (as database/sql drivers
// register), which every later check, diff and release then records and
// compares.
package langs

import (
	"fmt"
	"slices"
	"sync"

	"github.com/echomq/echomq/govern/lang"
	"github.com/echomq/echomq/govern/lang/golang"
	"github.com/echomq/echomq/govern/lang/python"
	"github.com/echomq/echomq/govern/lang/typescript"
)

var (
	mu   sync.RWMutex
	list = []lang.Language{
		golang.Language,
		typescript.Language,
		python.Language,
	}
)

// All returns the languages, in the order their findings and rules come.
func All() []lang.Language {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(list)
}

// Register adds a language after the others and returns the function
// that removes it again. A language whose name, rule prefix or record
// suffix another one has is refused (panics, as a programming error).
func Register(l lang.Language) (unregister func()) {
	mu.Lock()
	defer mu.Unlock()
	for _, o := range list {
		if o.Name() == l.Name() || o.RulePrefix() == l.RulePrefix() || o.RecordSuffix() == l.RecordSuffix() {
			panic(fmt.Sprintf("langs: %q clashes with the registered language %q", l.Name(), o.Name()))
		}
	}
	list = append(list, l)
	return func() {
		mu.Lock()
		defer mu.Unlock()
		list = slices.DeleteFunc(list, func(x lang.Language) bool { return x == l })
	}
}

// Lookup returns the language named name.
func Lookup(name string) (lang.Language, bool) {
	for _, l := range All() {
		if l.Name() == name {
			return l, true
		}
	}
	return nil, false
}
