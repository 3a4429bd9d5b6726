package model

import (
	"fmt"
	"math/bits"
	"strings"
	"time"
)

// DecodedID is what an id says of itself.
type DecodedID struct {
	Kind     string
	Value    uint64
	Time     time.Time
	Node     int64
	Sequence int64
}

// ParseID checks id against the canon and decodes it. It is the
// generator's reference implementation, used to validate the manifest's
// examples and to cross-check the generated SDK.
func (c IDCanon) ParseID(id string) (DecodedID, error) {
	if len(id) != c.Length {
		return DecodedID{}, fmt.Errorf("id %q is %d bytes, want %d", id, len(id), c.Length)
	}
	kind, body := id[:c.KindLength], id[c.KindLength:]
	for i := 0; i < len(kind); i++ {
		if kind[i] < 'A' || kind[i] > 'Z' {
			return DecodedID{}, fmt.Errorf("id %q: kind %q is not %d ASCII capitals", id, kind, c.KindLength)
		}
	}
	var v uint64
	base := uint64(len(c.Alphabet))
	for i := 0; i < len(body); i++ {
		d := strings.IndexByte(c.Alphabet, body[i])
		if d < 0 {
			return DecodedID{}, fmt.Errorf("id %q: byte %q is not in the body alphabet", id, body[i])
		}
		hi, lo := bits.Mul64(v, base)
		lo, carry := bits.Add64(lo, uint64(d), 0)
		if hi != 0 || carry != 0 {
			return DecodedID{}, fmt.Errorf("id %q: body overflows 64 bits", id)
		}
		v = lo
	}
	if top := c.Layout[0]; top.Name == "zero" && v>>top.Shift != 0 {
		return DecodedID{}, fmt.Errorf("id %q: body overflows the snowflake (its top %d bit(s) must be zero)", id, top.Bits)
	}
	d := DecodedID{Kind: kind, Value: v}
	field := func(name string) int64 {
		b, _ := c.Bitfield(name)
		return int64((v >> b.Shift) & (1<<b.Bits - 1))
	}
	d.Time = c.Epoch.Add(time.Duration(field("time")) * time.Millisecond).UTC()
	d.Node = field("node")
	d.Sequence = field("sequence")
	return d, nil
}

// FormatID encodes kind and a snowflake value as an id.
func (c IDCanon) FormatID(kind string, v uint64) string {
	base := uint64(len(c.Alphabet))
	body := make([]byte, c.BodyLength)
	for i := len(body) - 1; i >= 0; i-- {
		body[i] = c.Alphabet[v%base]
		v /= base
	}
	return kind + string(body)
}
