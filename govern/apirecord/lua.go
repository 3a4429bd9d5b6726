package apirecord

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/echomq/echomq/gen/target"
)

// Slots are the positional inputs of one Lua script: the names of its
// KEYS and of its ARGV, in order. A repeated group (zero or more keys or
// values, the last slot) is its name followed by RepeatedMark.
type Slots struct {
	Keys []string
	Argv []string
}

// RepeatedMark follows the name of a repeated slot group in Slots:
// "rows..." for the header line "-- KEYS[3..] -> rows, one per ids: ...".
const RepeatedMark = "..."

// String returns "KEYS a, b; ARGV c, d".
func (s Slots) String() string {
	return "KEYS " + strings.Join(s.Keys, ", ") + "; ARGV " + strings.Join(s.Argv, ", ")
}

// indexFile is the part of the bundle's index.json that LuaSlots reads.
type indexFile struct {
	Scripts *[]struct {
		Name string `json:"name"`
		File string `json:"file"`
		Keys []struct {
			Name     string `json:"name"`
			Repeated bool   `json:"repeated"`
		} `json:"keys"`
		Argv []struct {
			Name     string `json:"name"`
			Repeated bool   `json:"repeated"`
		} `json:"argv"`
	} `json:"scripts"`
}

// LuaSlots returns each Lua script's slots, by script name, read from the
// generated bundle among files. The bundle's index.json (a file of that
// name beside the .lua files) is authoritative; every script's header
// ("-- KEYS[1] -> name: shape", "-- ARGV[1] -> name (type)") is read too
// and must agree with it, and a .lua file the index does not list is an
// error. Without an index.json, the headers alone are read and a script is
// named after its file.
func LuaSlots(files []target.File) (map[string]Slots, error) {
	headers := map[string]Slots{}  // by path
	indexes := map[string][]byte{} // by directory
	for _, f := range files {
		switch {
		case strings.HasSuffix(f.Path, ".lua"):
			s, err := luaHeader(f.Path, f.Data)
			if err != nil {
				return nil, err
			}
			headers[f.Path] = s
		case path.Base(f.Path) == "index.json":
			indexes[path.Dir(f.Path)] = f.Data
		}
	}
	out := map[string]Slots{}
	listed := map[string]bool{}
	dirs := make([]string, 0, len(indexes))
	for d := range indexes {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		where := path.Join(dir, "index.json")
		var idx indexFile
		if err := json.Unmarshal(indexes[dir], &idx); err != nil {
			return nil, fmt.Errorf("surface: %s: %w", where, err)
		}
		if idx.Scripts == nil {
			return nil, fmt.Errorf("surface: %s has no scripts list", where)
		}
		for i, s := range *idx.Scripts {
			if s.Name == "" {
				return nil, fmt.Errorf("surface: %s: script %d has no name", where, i+1)
			}
			if _, dup := out[s.Name]; dup {
				return nil, fmt.Errorf("surface: %s: script %s listed twice", where, s.Name)
			}
			sl := Slots{Keys: []string{}, Argv: []string{}}
			for _, k := range s.Keys {
				sl.Keys = append(sl.Keys, k.Name+repeatedMark(k.Repeated))
			}
			for _, a := range s.Argv {
				sl.Argv = append(sl.Argv, a.Name+repeatedMark(a.Repeated))
			}
			out[s.Name] = sl
			if s.File == "" {
				continue
			}
			p := path.Join(dir, s.File)
			listed[p] = true
			if h, ok := headers[p]; ok && !equalSlots(h, sl) {
				return nil, fmt.Errorf("surface: %s lists script %s as %s, but the header of %s says %s", where, s.Name, sl, p, h)
			}
		}
	}
	paths := make([]string, 0, len(headers))
	for p := range headers {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if listed[p] {
			continue
		}
		if _, ok := indexes[path.Dir(p)]; ok {
			return nil, fmt.Errorf("surface: %s is not listed in %s", p, path.Join(path.Dir(p), "index.json"))
		}
		name := strings.TrimSuffix(path.Base(p), ".lua")
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("surface: two scripts named %s (%s)", name, p)
		}
		out[name] = headers[p]
	}
	return out, nil
}

func equalSlots(a, b Slots) bool {
	return slices.Equal(a.Keys, b.Keys) && slices.Equal(a.Argv, b.Argv)
}

func repeatedMark(repeated bool) string {
	if repeated {
		return RepeatedMark
	}
	return ""
}

var slotLine = regexp.MustCompile(`^-- (KEYS|ARGV)\[([0-9]+)(\.\.)?\] -> ([^\s:(,]+)`)

// luaHeader reads the slot lines of a script's leading comment block; the
// slots must be numbered 1, 2, ... in order.
func luaHeader(p string, data []byte) (Slots, error) {
	s := Slots{Keys: []string{}, Argv: []string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if !strings.HasPrefix(line, "--") {
			break
		}
		m := slotLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		list := &s.Keys
		if m[1] == "ARGV" {
			list = &s.Argv
		}
		i, err := strconv.Atoi(m[2])
		if err != nil || i != len(*list)+1 {
			return Slots{}, fmt.Errorf("surface: %s:%d: %s[%s] out of order, want %s[%d]", p, n, m[1], m[2], m[1], len(*list)+1)
		}
		*list = append(*list, m[4]+repeatedMark(m[3] != ""))
	}
	if err := sc.Err(); err != nil {
		return Slots{}, fmt.Errorf("surface: %s: %w", p, err)
	}
	return s, nil
}
