package runner

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// match reports how got differs from want, or nil. Objects match as
// subsets (every expected field present and matching), arrays element by
// element with equal lengths, numbers by value. An expected object whose
// keys start with $ is a matcher: {$any: true}, {$near: x, $within: d},
// {$gt: x}, {$ge: x}. An expected "payload" field also matches a got
// "payload_b64" holding the same bytes.
func match(want, got any, path string) error {
	if m, ok := want.(map[string]any); ok && isMatcher(m) {
		return matcher(m, got, path)
	}
	switch w := want.(type) {
	case nil:
		if got != nil {
			return fmt.Errorf("%s: expected null, got %s", where(path), show(got))
		}
		return nil
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: expected an object %s, got %s", where(path), show(want), show(got))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub := join(path, k)
			if k == "payload" || k == "payload_b64" {
				if err := matchPayload(k, w[k], g, sub); err != nil {
					return err
				}
				continue
			}
			gv, present := g[k]
			if !present {
				return fmt.Errorf("%s: missing (expected %s)", where(sub), show(w[k]))
			}
			if err := match(w[k], gv, sub); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Errorf("%s: expected an array %s, got %s", where(path), show(want), show(got))
		}
		if len(g) != len(w) {
			return fmt.Errorf("%s: expected %d elements %s, got %d %s", where(path), len(w), show(want), len(g), show(got))
		}
		for i := range w {
			if err := match(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case string:
		if g, ok := got.(string); !ok || g != w {
			return fmt.Errorf("%s: expected %s, got %s", where(path), show(want), show(got))
		}
		return nil
	case bool:
		if g, ok := got.(bool); !ok || g != w {
			return fmt.Errorf("%s: expected %v, got %s", where(path), w, show(got))
		}
		return nil
	}
	if wn, ok := number(want); ok {
		if gn, ok := number(got); !ok || gn != wn {
			return fmt.Errorf("%s: expected %s, got %s", where(path), show(want), show(got))
		}
		return nil
	}
	return fmt.Errorf("%s: the case expects a value of type %T, which the runner cannot compare", where(path), want)
}

// matchPayload compares payload bytes: want as text (payload) or base64
// (payload_b64), got from either field.
func matchPayload(field string, want any, got map[string]any, path string) error {
	ws, ok := want.(string)
	if !ok {
		return fmt.Errorf("%s: the case's payload must be a string", where(path))
	}
	wb := []byte(ws)
	if field == "payload_b64" {
		b, err := base64.StdEncoding.DecodeString(ws)
		if err != nil {
			return fmt.Errorf("%s: the case's payload_b64 is not base64: %v", where(path), err)
		}
		wb = b
	}
	var gb []byte
	if s, ok := got["payload_b64"].(string); ok {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("%s: payload_b64 is not base64: %v", where(path), err)
		}
		gb = b
	} else if s, ok := got["payload"].(string); ok {
		gb = []byte(s)
	} else {
		return fmt.Errorf("%s: missing (expected %q)", where(path), ws)
	}
	if string(gb) != string(wb) {
		return fmt.Errorf("%s: expected %q, got %q", where(path), wb, gb)
	}
	return nil
}

func isMatcher(m map[string]any) bool {
	if len(m) == 0 {
		return false
	}
	for k := range m {
		if !strings.HasPrefix(k, "$") {
			return false
		}
	}
	return true
}

func matcher(m map[string]any, got any, path string) error {
	if _, ok := m["$any"]; ok {
		return nil
	}
	g, ok := number(got)
	if !ok {
		return fmt.Errorf("%s: expected a number %s, got %s", where(path), show(m), show(got))
	}
	if x, ok := m["$near"]; ok {
		c, ok1 := number(x)
		d, ok2 := number(m["$within"])
		if !ok1 || !ok2 {
			return fmt.Errorf("%s: $near needs a number and $within a number", where(path))
		}
		if math.Abs(g-c) > d {
			return fmt.Errorf("%s: expected %v within %v, got %v (off by %v)", where(path), c, d, g, g-c)
		}
		return nil
	}
	if x, ok := m["$gt"]; ok {
		c, _ := number(x)
		if !(g > c) {
			return fmt.Errorf("%s: expected more than %v, got %v", where(path), c, g)
		}
		return nil
	}
	if x, ok := m["$ge"]; ok {
		c, _ := number(x)
		if !(g >= c) {
			return fmt.Errorf("%s: expected at least %v, got %v", where(path), c, g)
		}
		return nil
	}
	return fmt.Errorf("%s: unknown matcher %s", where(path), show(m))
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func where(path string) string {
	if path == "" {
		return "(top)"
	}
	return path
}

// show renders a value compactly for failure messages.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
