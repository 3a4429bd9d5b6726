package dashboard

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"unicode"
	"unicode/utf8"
)

// Payload is a job's payload as a page shows it.
type Payload struct {
	// Text is the payload indented as JSON when it parses as JSON, as hex
	// otherwise, cut at the dashboard's cap.
	Text string
	// JSON reports that the payload parsed as JSON.
	JSON bool
	// Size is the payload's size in bytes; Truncated that Text shows only
	// its first Options.PayloadCap bytes.
	Size      int
	Truncated bool
	// Masked reports that Options.Mask rewrote the payload.
	Masked bool
}

// renderPayload shows p as JSON when it parses, as a hex dump otherwise,
// of at most limit bytes.
func renderPayload(p []byte, limit int) Payload {
	out := Payload{Size: len(p)}
	if json.Valid(p) {
		var b bytes.Buffer
		if err := json.Indent(&b, p, "", "  "); err == nil {
			out.JSON = true
			text := b.Bytes()
			if len(text) > limit {
				text, out.Truncated = text[:limit], true
				for len(text) > 0 && !utf8.Valid(text) {
					text = text[:len(text)-1]
				}
			}
			out.Text = string(text)
			return out
		}
	}
	if len(p) > limit {
		p, out.Truncated = p[:limit], true
	}
	out.Text = hex.Dump(p)
	return out
}

// MaskJSONFields returns an Options.Mask that replaces the value of every
// object member named by one of fields, at any depth, with "***", in a
// payload that parses as JSON, and hides any other payload whole (a
// payload it cannot parse cannot be shown safely).
func MaskJSONFields(fields ...string) func(queue string, payload []byte) []byte {
	hide := map[string]bool{}
	for _, f := range fields {
		hide[f] = true
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				if hide[k] {
					t[k] = "***"
				} else {
					t[k] = walk(x)
				}
			}
		case []any:
			for i, x := range t {
				t[i] = walk(x)
			}
		}
		return v
	}
	return func(_ string, payload []byte) []byte {
		var v any
		d := json.NewDecoder(bytes.NewReader(payload))
		d.UseNumber()
		if err := d.Decode(&v); err != nil || d.More() {
			return []byte(`"*** not JSON: hidden ***"`)
		}
		b, err := json.Marshal(walk(v))
		if err != nil {
			return []byte(`"*** hidden ***"`)
		}
		return b
	}
}

// MaskAll is an Options.Mask that hides every payload, showing its size
// only.
func MaskAll(_ string, payload []byte) []byte {
	return []byte(`"*** hidden ***"`)
}

// previewCap is how many characters of a payload a set page's preview
// column shows.
const previewCap = 80

// previewPayload shows p on one line: compact JSON when it parses, the
// text when it is printable UTF-8, hex otherwise; cut at limit runes with
// an ellipsis.
func previewPayload(p []byte, limit int) string {
	var text string
	var b bytes.Buffer
	switch {
	case len(p) == 0:
		return ""
	case json.Valid(p) && json.Compact(&b, p) == nil:
		text = b.String()
	case utf8.Valid(p) && printable(p):
		text = string(p)
	default:
		text = "0x" + hex.EncodeToString(p[:min(len(p), limit/2)])
		if len(p) > limit/2 {
			text += "…"
		}
		return text
	}
	if utf8.RuneCountInString(text) > limit {
		r := []rune(text)
		text = string(r[:limit]) + "…"
	}
	return text
}

// printable reports whether every rune of the valid UTF-8 p is a graphic
// character or a space.
func printable(p []byte) bool {
	for _, r := range string(p) {
		if !unicode.IsGraphic(r) {
			return false
		}
	}
	return true
}
