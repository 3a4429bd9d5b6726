package sdkref_test

// Fuzz targets of the SDK's input edges: the key builders (queue names and
// ids, checked against the manifest's key grammar), the id's text forms,
// and the reply decoders (fed arbitrary RESP3 structures).
//
//	go test ./internal/sdkref -run XXX -fuzz FuzzQueueKeys -fuzztime 3m
//	go test ./internal/sdkref -run XXX -fuzz FuzzIDText -fuzztime 3m
//	go test ./internal/sdkref -run XXX -fuzz FuzzDecodeReply -fuzztime 3m
//	go test ./internal/sdkref -run XXX -fuzz FuzzDecodeRecords -fuzztime 3m

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// render fills a key shape's holes from vals.
func render(parts []model.Part, vals map[string]string) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Hole != "" {
			b.WriteString(vals[p.Hole])
		} else {
			b.WriteString(p.Lit)
		}
	}
	return b.String()
}

func keyClass(t testing.TB, p *model.Protocol, name string) model.KeyClass {
	t.Helper()
	for _, c := range p.KeyClasses {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("the manifest has no key class %q", name)
	return model.KeyClass{}
}

// checkKeyOf checks one key built for queue: the manifest's shape filled
// with the queue name, one hashtag (exactly one '{' and one '}') that is
// the queue name, nothing a terminal, a log line or a glob would misread,
// and as many ':'-separated segments as the shape has for a name without
// colons.
func checkKeyOf(t *testing.T, what, key, want, queue string) {
	t.Helper()
	if key != want {
		t.Fatalf("%s: built %q; the manifest's shape gives %q", what, key, want)
	}
	if strings.Count(key, "{") != 1 || strings.Count(key, "}") != 1 {
		t.Fatalf("%s: %q has more than one hashtag brace", what, key)
	}
	open := strings.IndexByte(key, '{')
	end := strings.IndexByte(key[open:], '}')
	if end < 0 || key[open+1:open+end] != queue {
		t.Fatalf("%s: the hashtag of %q is not the queue name %q", what, key, queue)
	}
	if !utf8.ValidString(key) {
		t.Fatalf("%s: %q is not valid UTF-8", what, key)
	}
	for _, r := range key {
		if r <= ' ' || r == 0x7f || r > 0x7e || strings.ContainsRune(`*?[]\"'`, r) {
			t.Fatalf("%s: %q holds the byte %q", what, key, r)
		}
	}
}

// FuzzQueueKeys builds every key of a queue from an arbitrary name and id:
// a name is accepted exactly when it matches the manifest's queue pattern;
// an accepted name yields the manifest's shapes with one hashtag and no
// injected colon, brace, space or control byte; a refused one is ErrQueueName
// from every builder, on one line. Row admits exactly the ids ParseID admits
// and refuses the zero ID with ErrID.
func FuzzQueueKeys(f *testing.F) {
	p := reference(f)
	for _, ex := range p.Queues.Examples {
		f.Add(ex, p.IDs.Examples[0].ID)
	}
	for _, bad := range p.Queues.Invalid {
		f.Add(bad, p.IDs.Invalid[0])
	}
	for _, s := range []string{"a}b", "{a}", "a}:{b", "}", "a\r", "a\x00", "é", "ａ", "a\u202eb", "\xff", "a*", "a?", "a[b]", "a\\b", strings.Repeat("z", 64), strings.Repeat("9", 65)} {
		f.Add(s, "")
	}
	nameRE := regexp.MustCompile(`\A(?:` + p.Queues.Pattern + `)\z`)
	queueClass, jobClass, reserveClass := keyClass(f, p, "queue"), keyClass(f, p, "job"), keyClass(f, p, "reserve")
	var migration model.Member
	for _, m := range p.Reserve {
		for _, part := range m.Parts {
			if part.Hole == "queue" {
				migration = m
			}
		}
	}
	if migration.Name == "" {
		f.Fatal("the manifest has no reserve member with a queue hole")
	}
	f.Fuzz(func(t *testing.T, name, idText string) {
		k, err := wire.NewQueueKeys(name)
		want := nameRE.MatchString(name) && len(name) <= p.Queues.MaxLength
		if (err == nil) != want {
			t.Fatalf("NewQueueKeys(%q) = %v; the manifest's pattern admits it: %v", name, err, want)
		}
		verr := emq.ValidateQueueName(name)
		mig, merr := wire.KeyMigration(name)
		rkey, rerr := wire.ReserveKey(strings.TrimRight(migration.Parts[0].Lit, ":"), name)
		if !want {
			for what, err := range map[string]error{"NewQueueKeys": err, "ValidateQueueName": verr, "KeyMigration": merr, "ReserveKey": rerr} {
				if !errors.Is(err, emq.ErrQueueName) {
					t.Fatalf("%s(%q) = %v; want ErrQueueName", what, name, err)
				}
				if strings.ContainsAny(err.Error(), "\r\n") {
					t.Fatalf("%s(%q): the error spans lines: %q", what, name, err)
				}
			}
			if k != (wire.QueueKeys{}) || mig != "" || rkey != "" {
				t.Fatalf("a refused name %q still built keys: %+v %q %q", name, k, mig, rkey)
			}
			return
		}
		if verr != nil || merr != nil || rerr != nil {
			t.Fatalf("builders disagree on %q: Validate %v, KeyMigration %v, ReserveKey %v", name, verr, merr, rerr)
		}
		if k.Queue() != name {
			t.Fatalf("Queue() = %q; want %q", k.Queue(), name)
		}
		for _, typ := range p.KeyTypes {
			key, ok := k.Key(typ.Name)
			if typ.Class != queueClass.Name {
				if ok {
					t.Fatalf("Key(%q) of class %s answered %q", typ.Name, typ.Class, key)
				}
				continue
			}
			if !ok {
				t.Fatalf("Key(%q): no such key type", typ.Name)
			}
			checkKeyOf(t, typ.Name, key, render(queueClass.Parts, map[string]string{"queue": name, "type": typ.Name}), name)
			// Parsing the key back names the same queue and type: cut at
			// the first "}" (the name holds none).
			rest := strings.TrimPrefix(key, queueClass.Parts[0].Lit)
			q, tp, ok := strings.Cut(rest, "}")
			if !ok || q != name || tp != strings.TrimPrefix(queueClass.Parts[2].Lit, "}")+typ.Name {
				t.Fatalf("%q parses back to queue %q, rest %q", key, q, tp)
			}
		}
		for _, s := range wire.Sets() {
			if key, ok := k.Key(string(s)); !ok || k.Set(s) != key {
				t.Fatalf("Set(%s) = %q; Key gives %q", s, k.Set(s), key)
			}
		}
		wantMig := render(reserveClass.Parts, map[string]string{"member": render(migration.Parts, map[string]string{"queue": name})})
		if mig != wantMig || rkey != wantMig {
			t.Fatalf("the migration member of %q is %q (ReserveKey %q); the manifest gives %q", name, mig, rkey, wantMig)
		}
		if strings.Count(mig, "{") != 1 || strings.Count(mig, "}") != 1 || strings.ContainsAny(mig, "\r\n\x00 ") {
			t.Fatalf("the migration member %q has another hashtag or a control byte", mig)
		}
		// The job position.
		if _, err := k.Row(emq.ID{}); !errors.Is(err, emq.ErrID) {
			t.Fatalf("Row(zero ID) = %v; want ErrID", err)
		}
		id, err := emq.ParseID(idText)
		if err != nil {
			if !errors.Is(err, emq.ErrID) || id != (emq.ID{}) {
				t.Fatalf("ParseID(%q) = %v, %v; want the zero ID and ErrID", idText, id, err)
			}
			return
		}
		row, err := k.Row(id)
		if err != nil {
			t.Fatalf("Row(%s): %v", id, err)
		}
		checkKeyOf(t, "Row(id)", row, render(jobClass.Parts, map[string]string{"queue": name, "id": idText}), name)
		if row != k.RowPrefix()+idText {
			t.Fatalf("Row(%s) = %q; RowPrefix gives %q", id, row, k.RowPrefix()+idText)
		}
	})
}

// FuzzIDText checks the id's text forms beyond FuzzParseID: refusals wrap
// ErrID on one line and leave the zero ID; UnmarshalText and JSON agree
// with ParseID; an accepted id's fields agree with the generator's
// reference decoding, and NewID makes the same id back from them.
func FuzzIDText(f *testing.F) {
	p := reference(f)
	for _, ex := range p.IDs.Examples {
		f.Add(ex.ID)
	}
	for _, bad := range p.IDs.Invalid {
		f.Add(bad)
	}
	_, _, bad := seedIDs(f)
	for _, s := range append(bad, `"quoted"`, "ÅB0NgWEfAEJfs") {
		f.Add(s)
	}
	// The largest snowflake, and one past it.
	top := p.IDs.FormatID(string(emq.WorkKind), 1<<63-1)
	f.Add(top)
	f.Add(top[:wire.IDLength-1] + string(top[wire.IDLength-1]+1))
	f.Fuzz(func(t *testing.T, s string) {
		id, err := emq.ParseID(s)
		var un emq.ID
		uerr := un.UnmarshalText([]byte(s))
		quoted, _ := json.Marshal(s)
		var js struct{ ID emq.ID }
		jerr := json.Unmarshal([]byte(`{"ID":`+string(quoted)+`}`), &js)
		if err != nil {
			if !errors.Is(err, emq.ErrID) || !errors.Is(uerr, emq.ErrID) || !errors.Is(jerr, emq.ErrID) {
				t.Fatalf("refusals of %q are not ErrID: ParseID %v, UnmarshalText %v, JSON %v", s, err, uerr, jerr)
			}
			if !id.IsZero() || !un.IsZero() || !js.ID.IsZero() {
				t.Fatalf("a refused id %q left a value", s)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("ParseID(%q): the error spans lines: %q", s, err)
			}
			return
		}
		if uerr != nil || jerr != nil || un != id || js.ID != id {
			t.Fatalf("ParseID(%q) = %v, but UnmarshalText = %v, %v and JSON = %v, %v", s, id, un, uerr, js.ID, jerr)
		}
		out, err := json.Marshal(js)
		if err != nil || string(out) != `{"ID":`+string(quoted)+`}` {
			t.Fatalf("json.Marshal of %q = %s, %v", s, out, err)
		}
		ref, err := p.IDs.ParseID(s)
		if err != nil {
			t.Fatalf("ParseID accepts %q; the reference refuses it: %v", s, err)
		}
		if string(id.Kind()) != ref.Kind || id.Value() != ref.Value || int64(id.Node()) != ref.Node || int64(id.Sequence()) != ref.Sequence || !id.Time().Equal(ref.Time) {
			t.Fatalf("%q: kind %s value %d node %d seq %d time %v; the reference decodes %+v", s, id.Kind(), id.Value(), id.Node(), id.Sequence(), id.Time(), ref)
		}
		back, err := emq.NewID(id.Kind(), id.Time(), id.Node(), id.Sequence())
		if err != nil || back != id {
			t.Fatalf("NewID(fields of %q) = %v, %v", s, back, err)
		}
	})
}

// --- replies ---------------------------------------------------------------

// resp is one RESP3 value, parsed from the fuzzer's bytes.
type resp struct {
	typ  byte // one of $ + - ! = , ( : _ # * ~ %
	str  string
	n    int64
	kids []resp // arrays and sets; a map's keys and values, alternating
}

var errResp = errors.New("not RESP3")

// parseRESP reads one RESP3 value from the front of b: the reply forms a
// server sends (RESP2 nulls included). It refuses anything else, and
// bounds depth and sizes so that a mutation cannot make it expensive.
func parseRESP(b []byte, depth int) (resp, []byte, error) {
	line := func() (string, []byte, error) {
		i := strings.Index(string(b[1:]), "\r\n")
		if i < 0 {
			return "", nil, errResp
		}
		return string(b[1 : 1+i]), b[1+i+2:], nil
	}
	if len(b) == 0 || depth > 6 {
		return resp{}, nil, errResp
	}
	typ := b[0]
	switch typ {
	case '+', '-', ',', '(':
		s, rest, err := line()
		return resp{typ: typ, str: s}, rest, err
	case ':':
		s, rest, err := line()
		if err != nil {
			return resp{}, nil, err
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return resp{typ: typ, n: n}, rest, err
	case '_':
		_, rest, err := line()
		return resp{typ: '_'}, rest, err
	case '#':
		s, rest, err := line()
		if err != nil || (s != "t" && s != "f") {
			return resp{}, nil, errResp
		}
		v := int64(0)
		if s == "t" {
			v = 1
		}
		return resp{typ: typ, n: v}, rest, nil
	case '$', '!', '=':
		s, rest, err := line()
		if err != nil {
			return resp{}, nil, err
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < -1 {
			return resp{}, nil, errResp
		}
		if n == -1 && typ == '$' {
			return resp{typ: '_'}, rest, nil
		}
		if n < 0 || n > len(rest)-2 || string(rest[n:n+2]) != "\r\n" {
			return resp{}, nil, errResp
		}
		return resp{typ: typ, str: string(rest[:n])}, rest[n+2:], nil
	case '*', '~', '%':
		s, rest, err := line()
		if err != nil {
			return resp{}, nil, err
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < -1 || n > 64 {
			return resp{}, nil, errResp
		}
		if n == -1 && typ == '*' {
			return resp{typ: '_'}, rest, nil
		}
		if n < 0 {
			return resp{}, nil, errResp
		}
		if typ == '%' {
			n *= 2
		}
		v := resp{typ: typ, kids: []resp{}}
		for i := 0; i < n; i++ {
			var k resp
			if k, rest, err = parseRESP(rest, depth+1); err != nil {
				return resp{}, nil, err
			}
			v.kids = append(v.kids, k)
		}
		return v, rest, nil
	}
	return resp{}, nil, errResp
}

// text writes v back in RESP3.
func (v resp) text() string {
	switch v.typ {
	case '+', '-', ',', '(':
		return string(v.typ) + v.str + "\r\n"
	case ':':
		return ":" + strconv.FormatInt(v.n, 10) + "\r\n"
	case '_':
		return "_\r\n"
	case '#':
		if v.n == 1 {
			return "#t\r\n"
		}
		return "#f\r\n"
	case '$', '!', '=':
		return string(v.typ) + strconv.Itoa(len(v.str)) + "\r\n" + v.str + "\r\n"
	}
	n := len(v.kids)
	if v.typ == '%' {
		n /= 2
	}
	s := string(v.typ) + strconv.Itoa(n) + "\r\n"
	for _, k := range v.kids {
		s += k.text()
	}
	return s
}

// cache serializes v in the form rueidis.RedisMessage.CacheUnmarshalView
// reads (a 7-byte TTL, then per value its type byte, an 8-byte length or
// integer, and its bytes or elements): the one exported way of v1.0.79 to
// make a RedisMessage of any shape without a server. TestReplyBuilder
// checks the form against rueidis's own CacheMarshal.
func (v resp) cache(b []byte) []byte {
	b = append(b, v.typ)
	switch v.typ {
	case ':', '_', '#':
		return binary.BigEndian.AppendUint64(b, uint64(v.n))
	case '*', '~', '%':
		b = binary.BigEndian.AppendUint64(b, uint64(len(v.kids)))
		for _, k := range v.kids {
			b = k.cache(b)
		}
		return b
	}
	b = binary.BigEndian.AppendUint64(b, uint64(len(v.str)))
	return append(b, v.str...)
}

// result makes the rueidis result of a reply v.
func (v resp) result(t testing.TB) rueidis.RedisResult {
	t.Helper()
	var m rueidis.RedisMessage
	if err := m.CacheUnmarshalView(v.cache(make([]byte, 7))); err != nil {
		t.Fatalf("CacheUnmarshalView(%q): %v", v.text(), err)
	}
	return rueidis.NewResult(m, nil)
}

func (v resp) isErr() bool { return v.typ == '-' || v.typ == '!' }

// stringy reports whether rueidis reads v as text without an error, and
// the text: strings, and the simple types it reads as their raw text.
func (v resp) stringy() (string, bool) {
	switch v.typ {
	case '$', '+', '=', ',', '(':
		return v.str, true
	case '#':
		return "", true
	}
	return "", false
}

// intOf is what AsInt64 makes of v, and whether it succeeds.
func (v resp) intOf() (int64, bool) {
	if v.typ == ':' {
		return v.n, true
	}
	s, ok := v.stringy()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// TestReplyBuilder pins the serialized form the fuzzers build replies with
// to rueidis's own: each parsed value round-trips through CacheMarshal and
// reads back with the type and contents rueidis gives a server's reply.
func TestReplyBuilder(t *testing.T) {
	for _, in := range []string{
		"$3\r\nabc\r\n", "+OK\r\n", "-ERR x\r\n", "!5\r\nERR y\r\n", ":-42\r\n", "_\r\n", "$-1\r\n", "*-1\r\n",
		"#t\r\n", ",1.5\r\n", "(12345678901234567890\r\n", "=7\r\ntxt:abc\r\n", "*2\r\n:1\r\n$1\r\nx\r\n",
		"~1\r\n+a\r\n", "%1\r\n+k\r\n:2\r\n", "*0\r\n", "*1\r\n*1\r\n*0\r\n",
	} {
		v, rest, err := parseRESP([]byte(in), 0)
		if err != nil || len(rest) != 0 {
			t.Fatalf("parseRESP(%q) = %v, rest %q", in, err, rest)
		}
		buf := v.cache(make([]byte, 7))
		var m rueidis.RedisMessage
		if err := m.CacheUnmarshalView(buf); err != nil {
			t.Fatalf("%q: CacheUnmarshalView: %v", in, err)
		}
		if back := m.CacheMarshal(nil); string(back) != string(buf) {
			t.Errorf("%q: CacheMarshal gives %x; the builder wrote %x", in, back, buf)
		}
		switch v.typ {
		case '$', '+':
			if s, err := m.ToString(); err != nil || s != v.str || !m.IsString() {
				t.Errorf("%q reads as %q, %v", in, s, err)
			}
		case '-', '!':
			if _, ok := rueidis.IsRedisErr(m.Error()); !ok {
				t.Errorf("%q does not read as a Redis error: %v", in, m.Error())
			}
		case ':':
			if n, err := m.ToInt64(); err != nil || n != v.n {
				t.Errorf("%q reads as %d, %v", in, n, err)
			}
		case '_':
			if !m.IsNil() || !rueidis.IsRedisNil(m.Error()) {
				t.Errorf("%q does not read as nil", in)
			}
		case '#':
			if b, err := m.ToBool(); err != nil || !b {
				t.Errorf("%q reads as %v, %v", in, b, err)
			}
		case '*', '~':
			if a, err := m.ToArray(); err != nil || len(a) != len(v.kids) {
				t.Errorf("%q reads as %d elements, %v", in, len(a), err)
			}
		case '%':
			if mm, err := m.AsMap(); err != nil || len(mm) != len(v.kids)/2 {
				t.Errorf("%q reads as %v, %v", in, mm, err)
			}
		}
	}
}

// decoded is what a decoder made of a reply, for the checks.
type decoded struct {
	ints     []int64    // an int reply
	records  [][]string // record replies: id, token, payload, deadline as text
	entries  []int64    // records of one integer (push_many's enqueued flags)
	attempts [][]string // the failures script's records: attempt, at_ms, class, worker, error as text
	fence    []string
	ok       bool // DecodeClaim's ok
	// fields are the records of a reply described by shape (2.4.0's
	// scripts): each element as text, by shape's letters (i an integer, s
	// a string or bytes, d an id); one record when repeated is false.
	fields   [][]string
	shape    string
	repeated bool
}

type decoder func(rueidis.RedisResult) (decoded, error)

func intDecoder(d func(rueidis.RedisResult) (int64, error)) decoder {
	return func(r rueidis.RedisResult) (decoded, error) {
		v, err := d(r)
		return decoded{ints: []int64{v}}, err
	}
}

func rec(id emq.ID, token int64, payload string, deadline int64) []string {
	return []string{id.String(), strconv.FormatInt(token, 10), payload, strconv.FormatInt(deadline, 10)}
}

// decoders is every script's decoder, by script.
func decoders() map[*wire.Script]decoder {
	return map[*wire.Script]decoder{
		wire.ScriptEnqueue:   intDecoder(wire.DecodeEnqueue),
		wire.ScriptEnqueueAt: intDecoder(wire.DecodeEnqueueAt),
		wire.ScriptExtend:    intDecoder(wire.DecodeExtend),
		wire.ScriptComplete:  intDecoder(wire.DecodeComplete),
		wire.ScriptRetry:     intDecoder(wire.DecodeRetry),
		wire.ScriptBury:      intDecoder(wire.DecodeBury),
		wire.ScriptPromote:   intDecoder(wire.DecodePromote),
		wire.ScriptReap:      intDecoder(wire.DecodeReap),
		wire.ScriptRevive:    intDecoder(wire.DecodeRevive),
		wire.ScriptLock:      intDecoder(wire.DecodeLock),
		wire.ScriptUnlock:    intDecoder(wire.DecodeUnlock),
		wire.ScriptPush:      intDecoder(wire.DecodePush),
		wire.ScriptRing:      intDecoder(wire.DecodeRing),
		wire.ScriptPurge:     intDecoder(wire.DecodePurge),
		wire.ScriptClaim: func(r rueidis.RedisResult) (decoded, error) {
			v, ok, err := wire.DecodeClaim(r)
			d := decoded{ok: ok}
			if ok {
				d.records = [][]string{rec(v.ID, v.Token, v.Payload, v.DeadlineMS)}
			}
			return d, err
		},
		wire.ScriptFence: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeFence(r)
			return decoded{fence: []string{v.Version, v.Bundle}}, err
		},
		wire.ScriptClaimMany: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeClaimMany(r)
			d := decoded{records: [][]string{}}
			for _, x := range v {
				d.records = append(d.records, rec(x.ID, x.Token, x.Payload, x.DeadlineMS))
			}
			return d, err
		},
		wire.ScriptPromoteIDs:     intDecoder(wire.DecodePromoteIDs),
		wire.ScriptReapIDs:        intDecoder(wire.DecodeReapIDs),
		wire.ScriptRetryFailed:    intDecoder(wire.DecodeRetryFailed),
		wire.ScriptBuryFailed:     intDecoder(wire.DecodeBuryFailed),
		wire.ScriptReapFailedIDs:  intDecoder(wire.DecodeReapFailedIDs),
		wire.ScriptForgetFailures: intDecoder(wire.DecodeForgetFailures),
		wire.ScriptFailures: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeFailures(r)
			d := decoded{attempts: [][]string{}}
			for _, x := range v {
				d.attempts = append(d.attempts, []string{strconv.FormatInt(x.Attempt, 10), strconv.FormatInt(x.AtMS, 10), string(x.Class), x.Worker, x.Error})
			}
			return d, err
		},
		wire.ScriptPushMany: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodePushMany(r)
			d := decoded{entries: []int64{}}
			for _, x := range v {
				d.entries = append(d.entries, x.Enqueued)
			}
			return d, err
		},
		wire.ScriptClaimIDs: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeClaimIDs(r)
			d := decoded{records: [][]string{}}
			for _, x := range v {
				d.records = append(d.records, rec(x.ID, x.Token, x.Payload, x.DeadlineMS))
			}
			return d, err
		},
		wire.ScriptCompleteClaimIDs: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeCompleteClaimIDs(r)
			d := decoded{records: [][]string{}}
			for _, x := range v {
				d.records = append(d.records, rec(x.ID, x.Token, x.Payload, x.DeadlineMS))
			}
			return d, err
		},
		wire.ScriptReapRecordedIDs: intDecoder(wire.DecodeReapRecordedIDs),
		wire.ScriptProgress:        intDecoder(wire.DecodeProgress),
		wire.ScriptReviveRecorded:  intDecoder(wire.DecodeReviveRecorded),
		wire.ScriptForgetIDs:       intDecoder(wire.DecodeForgetIDs),
		wire.ScriptCompleteResultClaimIDs: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeCompleteResultClaimIDs(r)
			d := decoded{records: [][]string{}}
			for _, x := range v {
				d.records = append(d.records, rec(x.ID, x.Token, x.Payload, x.DeadlineMS))
			}
			return d, err
		},
		wire.ScriptAddMany: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeAddMany(r)
			d := decoded{fields: [][]string{}, shape: "ii", repeated: true}
			for _, x := range v {
				d.fields = append(d.fields, []string{itoa(x.Enqueued), itoa(x.RunAtMS)})
			}
			return d, err
		},
		wire.ScriptFail: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeFail(r)
			return decoded{fields: [][]string{{string(v.Outcome), itoa(v.RunAtMS)}}, shape: "si"}, err
		},
		wire.ScriptOutput: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeOutput(r)
			return decoded{fields: [][]string{{v.Progress, itoa(v.CompletedAtMS), itoa(v.Attempt), v.Result}}, shape: "siis"}, err
		},
		wire.ScriptCounters: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeCounters(r)
			d := decoded{fields: [][]string{}, shape: "iiiii", repeated: true}
			for _, x := range v {
				d.fields = append(d.fields, []string{itoa(x.MinuteMS), itoa(x.Completed), itoa(x.Failed), itoa(x.Retried), itoa(x.Dead)})
			}
			return d, err
		},
		wire.ScriptEvents: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeEvents(r)
			d := decoded{fields: [][]string{}, shape: "ssdissis", repeated: true}
			for _, x := range v {
				d.fields = append(d.fields, []string{x.StreamID, string(x.Event), x.ID.String(), itoa(x.Attempt), string(x.Class), x.Error, itoa(x.RunAtMS), x.Progress})
			}
			return d, err
		},
		wire.ScriptAddDedup: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeAddDedup(r)
			d := decoded{fields: [][]string{}, shape: "sdi", repeated: true}
			for _, x := range v {
				d.fields = append(d.fields, []string{string(x.Outcome), x.ID.String(), itoa(x.RunAtMS)})
			}
			return d, err
		},
		wire.ScriptReplaceDedup: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeReplaceDedup(r)
			return decoded{fields: [][]string{{string(v.Outcome), v.ID.String(), itoa(v.RunAtMS)}}, shape: "sdi"}, err
		},
		wire.ScriptDedupEntries: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeDedupEntries(r)
			d := decoded{fields: [][]string{}, shape: "ssiiss", repeated: true}
			for _, x := range v {
				d.fields = append(d.fields, []string{x.Holder, x.Mode, itoa(x.ExpiresMS), itoa(x.Held), x.State, x.Parked})
			}
			return d, err
		},
		wire.ScriptSweepDedup: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeSweepDedup(r)
			return decoded{fields: [][]string{{v.Cursor, itoa(v.Dropped), itoa(v.Released)}}, shape: "sii"}, err
		},
		wire.ScriptCancelIDs: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeCancelIDs(r)
			d := decoded{fields: [][]string{}, shape: "s", repeated: true}
			for _, x := range v {
				d.fields = append(d.fields, []string{x.State})
			}
			return d, err
		},
		wire.ScriptUpsertScheduler: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeUpsertScheduler(r)
			return decoded{fields: [][]string{{itoa(v.Created), itoa(v.Changed), itoa(v.NextMS)}}, shape: "iii"}, err
		},
		wire.ScriptRemoveSchedulers: intDecoder(wire.DecodeRemoveSchedulers),
		wire.ScriptPauseSchedulers:  intDecoder(wire.DecodePauseSchedulers),
		wire.ScriptSchedulerEntries: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeSchedulerEntries(r)
			return schedRecords(v), err
		},
		wire.ScriptListSchedulers: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeListSchedulers(r)
			recs := make([]wire.SchedulerEntriesReply, len(v))
			for i, x := range v {
				recs[i] = wire.SchedulerEntriesReply(x)
			}
			return schedRecords(recs), err
		},
		wire.ScriptDueSchedulers: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeDueSchedulers(r)
			recs := make([]wire.SchedulerEntriesReply, len(v))
			for i, x := range v {
				recs[i] = wire.SchedulerEntriesReply(x)
			}
			return schedRecords(recs), err
		},
		wire.ScriptFireSchedulers: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeFireSchedulers(r)
			d := decoded{fields: [][]string{}, shape: "s", repeated: true}
			for _, x := range v {
				d.fields = append(d.fields, []string{string(x.Outcome)})
			}
			return d, err
		},
		// 2.7.0: the twins decode as their 2.6 scripts do.
		wire.ScriptClaimPolicyIDs: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeClaimPolicyIDs(r)
			d := decoded{records: [][]string{}}
			for _, x := range v {
				d.records = append(d.records, rec(x.ID, x.Token, x.Payload, x.DeadlineMS))
			}
			return d, err
		},
		wire.ScriptCompletePolicyIDs: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeCompletePolicyIDs(r)
			d := decoded{records: [][]string{}}
			for _, x := range v {
				d.records = append(d.records, rec(x.ID, x.Token, x.Payload, x.DeadlineMS))
			}
			return d, err
		},
		wire.ScriptFailPolicy: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeFailPolicy(r)
			return decoded{fields: [][]string{{string(v.Outcome), itoa(v.RunAtMS)}}, shape: "si"}, err
		},
		wire.ScriptReapPolicyIDs: intDecoder(wire.DecodeReapPolicyIDs),
		wire.ScriptExtendPolicy:  intDecoder(wire.DecodeExtendPolicy),
		wire.ScriptRetryPolicy:   intDecoder(wire.DecodeRetryPolicy),
		wire.ScriptBuryPolicy:    intDecoder(wire.DecodeBuryPolicy),
		wire.ScriptCancelPolicyIDs: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeCancelPolicyIDs(r)
			d := decoded{fields: [][]string{}, shape: "s", repeated: true}
			for _, x := range v {
				d.fields = append(d.fields, []string{x.State})
			}
			return d, err
		},
		wire.ScriptAddDedupPolicy: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeAddDedupPolicy(r)
			d := decoded{fields: [][]string{}, shape: "sdi", repeated: true}
			for _, x := range v {
				d.fields = append(d.fields, []string{string(x.Outcome), x.ID.String(), itoa(x.RunAtMS)})
			}
			return d, err
		},
		wire.ScriptReplaceDedupPolicy: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeReplaceDedupPolicy(r)
			return decoded{fields: [][]string{{string(v.Outcome), v.ID.String(), itoa(v.RunAtMS)}}, shape: "sdi"}, err
		},
		wire.ScriptDedupPolicyEntries: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeDedupPolicyEntries(r)
			d := decoded{fields: [][]string{}, shape: "ssiiss", repeated: true}
			for _, x := range v {
				d.fields = append(d.fields, []string{x.Holder, x.Mode, itoa(x.ExpiresMS), itoa(x.Held), x.State, x.Parked})
			}
			return d, err
		},
		wire.ScriptSweepDedupPolicy: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeSweepDedupPolicy(r)
			return decoded{fields: [][]string{{v.Cursor, itoa(v.Dropped), itoa(v.Released)}}, shape: "sii"}, err
		},
		wire.ScriptSetPolicy: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeSetPolicy(r)
			return decoded{fields: [][]string{{itoa(v.Paused), itoa(v.Concurrency), itoa(v.Requires)}}, shape: "iii"}, err
		},
		wire.ScriptQueuePolicy: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeQueuePolicy(r)
			return decoded{fields: [][]string{{itoa(v.Paused), itoa(v.Concurrency), itoa(v.Requires), itoa(v.Leased)}}, shape: "iiii"}, err
		},
		// 2.8.0: the rate limit's claims decode as their 2.7 twins do.
		wire.ScriptClaimRateIDs: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeClaimRateIDs(r)
			d := decoded{records: [][]string{}}
			for _, x := range v {
				d.records = append(d.records, rec(x.ID, x.Token, x.Payload, x.DeadlineMS))
			}
			return d, err
		},
		wire.ScriptCompleteRateIDs: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeCompleteRateIDs(r)
			d := decoded{records: [][]string{}}
			for _, x := range v {
				d.records = append(d.records, rec(x.ID, x.Token, x.Payload, x.DeadlineMS))
			}
			return d, err
		},
		wire.ScriptConfigurePolicy: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeConfigurePolicy(r)
			return decoded{fields: [][]string{{itoa(v.Paused), itoa(v.Concurrency), itoa(v.RateLimit), itoa(v.RatePeriodMS), itoa(v.Requires)}}, shape: "iiiii"}, err
		},
		wire.ScriptReadPolicy: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeReadPolicy(r)
			return decoded{fields: [][]string{{itoa(v.Paused), itoa(v.Concurrency), itoa(v.Requires), itoa(v.Leased), itoa(v.RateLimit), itoa(v.RatePeriodMS), itoa(v.AdmitInMS)}}, shape: "iiiiiii"}, err
		},
		wire.ScriptCompleteClaim: func(r rueidis.RedisResult) (decoded, error) {
			v, err := wire.DecodeCompleteClaim(r)
			d := decoded{records: [][]string{}}
			for _, x := range v {
				d.records = append(d.records, rec(x.ID, x.Token, x.Payload, x.DeadlineMS))
			}
			return d, err
		},
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// schedShape is the shape of a scheduler's record (scheduler_entries,
// list_schedulers and due_schedulers, 2.6.0): a missed word outside the
// vocabulary is kept as it is, and the last run's id is a string (empty
// before the first run).
const schedShape = "ssiissiisiiisii"

// schedRecords is the decoded form of scheduler records.
func schedRecords(v []wire.SchedulerEntriesReply) decoded {
	d := decoded{fields: [][]string{}, shape: schedShape, repeated: true}
	for _, x := range v {
		d.fields = append(d.fields, []string{x.Scheduler, x.Cron, itoa(x.EveryMS), itoa(x.StartMS), x.Tz, string(x.Missed), itoa(x.Backfill),
			itoa(x.GraceMS), x.Template, itoa(x.Paused), itoa(x.NextMS), itoa(x.LastSlotMS), x.LastID, itoa(x.Runs), itoa(x.NowMS)})
	}
	return d
}

// fieldsOf is what a well-decoded record described by shape must hold for
// the reply element v (an array of len(shape) elements): each element as
// text, an integer (i) in decimal, a string or bytes (s) as it is (a nil
// as empty), an id (d) when it parses; ok false when one cannot decode.
func fieldsOf(v resp, shape string) ([]string, bool) {
	if (v.typ != '*' && v.typ != '~') || len(v.kids) != len(shape) {
		return nil, false
	}
	out := make([]string, len(shape))
	for i, k := range v.kids {
		switch shape[i] {
		case 'i':
			n, ok := k.intOf()
			if !ok {
				return nil, false
			}
			out[i] = itoa(n)
		default:
			str, ok := k.stringy()
			if k.typ == '_' {
				str, ok = "", true
			}
			if !ok {
				return nil, false
			}
			if shape[i] == 'd' {
				if _, err := emq.ParseID(str); err != nil {
					return nil, false
				}
			}
			out[i] = str
		}
	}
	return out, true
}

// attemptOf is what a well-decoded record of the failures script must
// hold for the reply element v (a 5-element array): the attempt and its
// time as integers, the class, worker and error as text (a nil as empty),
// or ok false when one of them cannot decode. A class outside the
// vocabulary is kept as it is.
func attemptOf(v resp) ([]string, bool) {
	if (v.typ != '*' && v.typ != '~') || len(v.kids) != 5 {
		return nil, false
	}
	out := make([]string, 5)
	for i, k := range v.kids {
		if i < 2 {
			n, ok := k.intOf()
			if !ok {
				return nil, false
			}
			out[i] = strconv.FormatInt(n, 10)
			continue
		}
		str, ok := k.stringy()
		if k.typ == '_' {
			str, ok = "", true
		}
		if !ok {
			return nil, false
		}
		out[i] = str
	}
	return out, true
}

// recordOf is what a well-decoded record must hold for the reply element
// v (a 4-element array): its id text, token, payload text and deadline, or
// ok false when one of them cannot decode.
func recordOf(v resp) ([]string, bool) {
	if (v.typ != '*' && v.typ != '~') || len(v.kids) != 4 {
		return nil, false
	}
	id, ok := v.kids[0].stringy()
	if v.kids[0].typ == '_' {
		id, ok = "", true
	}
	if _, err := emq.ParseID(id); !ok || err != nil {
		return nil, false
	}
	token, ok1 := v.kids[1].intOf()
	payload, ok2 := v.kids[2].stringy()
	if v.kids[2].typ == '_' {
		payload, ok2 = "", true
	}
	deadline, ok3 := v.kids[3].intOf()
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	return []string{id, strconv.FormatInt(token, 10), payload, strconv.FormatInt(deadline, 10)}, true
}

// checkRefusal checks the error a decoder gave for an error reply v: a
// *ClassError of the script when the reply's first word (after rueidis
// drops a leading "ERR ") is a registered class, the Redis error wrapped
// otherwise; and ErrKind or ErrStale exactly when the class is theirs.
func checkRefusal(t *testing.T, s *wire.Script, v resp, err error) {
	t.Helper()
	text := strings.TrimPrefix(v.str, "ERR ")
	word, rest, _ := strings.Cut(text, " ")
	var ce *emq.ClassError
	isClass := false
	for _, c := range wire.Classes() {
		isClass = isClass || c == word
	}
	if isClass {
		if !errors.As(err, &ce) || ce.Class != word || ce.Message != rest || ce.Script != s.Name {
			t.Fatalf("%s: the refusal %q decoded to %#v; want a *ClassError of class %s", s.Name, v.str, err, word)
		}
	} else {
		var re *rueidis.RedisError
		if errors.As(err, &ce) || !errors.As(err, &re) || re.Error() != text {
			t.Fatalf("%s: the error reply %q decoded to %#v; want the Redis error wrapped", s.Name, v.str, err)
		}
	}
	if errors.Is(err, emq.ErrStale) != (word == wire.ClassStale) || errors.Is(err, emq.ErrKind) != (word == wire.ClassKind) {
		t.Fatalf("%s: %q: errors.Is ErrStale %v, ErrKind %v", s.Name, v.str, errors.Is(err, emq.ErrStale), errors.Is(err, emq.ErrKind))
	}
}

// seedIDs are well-formed ids of the work kind and of another kind, and
// malformed ones, built from generated names only.
func seedIDs(t testing.TB) (work, other emq.ID, bad []string) {
	t.Helper()
	at := time.UnixMilli(1780000000000)
	work, err := emq.NewID(emq.WorkKind, at, 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range wire.Kinds() {
		if k != emq.WorkKind {
			other, _ = emq.NewID(k, at, 0, 0)
		}
	}
	w := work.String()
	bad = []string{"", w[:wire.IDLength-1], w + "0", strings.ToLower(w), w[:wire.IDLength-1] + "!", w[:wire.IDLength-1] + "\x00",
		string(emq.WorkKind) + strings.Repeat("z", wire.IDLength-wire.KindLength), "x}y", w[:wire.IDLength-1] + "\n"}
	return work, other, bad
}

// replySeeds are well-formed and borderline replies of every shape the
// scripts produce, in RESP3.
func replySeeds(t testing.TB) []string {
	work, other, bad := seedIDs(t)
	str := func(s string) resp { return resp{typ: '$', str: s} }
	num := func(n int64) resp { return resp{typ: ':', n: n} }
	arr := func(kids ...resp) resp { return resp{typ: '*', kids: kids} }
	record := func(id string, token int64, payload resp) resp {
		return arr(str(id), num(token), payload, num(1780000000000))
	}
	vals := []resp{
		num(1), num(0), num(-1), num(math.MaxInt64), str("17"), {typ: '_'},
		{typ: '-', str: wire.ClassStale + " token 3 is not the row's 4"}, {typ: '-', str: wire.ClassKind + " job id must be " + string(emq.WorkKind) + "-namespaced"},
		{typ: '-', str: "ERR " + wire.ClassStale + " x"}, {typ: '-', str: wire.ClassStale}, {typ: '!', str: wire.ClassKind},
		{typ: '-', str: "WRONGTYPE Operation against a key holding the wrong kind of value"}, {typ: '-', str: "ERR run_at_ms is not an integer"},
		{typ: '-', str: "NOSCRIPT No matching script."},
		record(work.String(), 1, str("payload")), record(work.String(), 1, resp{typ: '_'}), record(other.String(), 1, str("")),
		arr(str(work.String()), num(1), str("p")), arr(num(1), num(1), num(1), num(1)),
		arr(str(wire.VersionRecord), str(wire.BundleDigest)), arr(str(strings.TrimSuffix(wire.VersionRecord, emq.Version)+"9.0.0"), resp{typ: '_'}),
		arr(), arr(record(work.String(), 1, str("a")), record(other.String(), 2, str("b"))),
		arr(arr(num(1)), arr(num(0))), arr(arr(num(1), num(1))), arr(arr(str("x"))), arr(num(1)),
		arr(arr(str(work.String()), str("x"), str("a"), num(5))), arr(resp{typ: '_'}, arr()), arr(resp{typ: '-', str: wire.ClassStale + " inner"}),
		{typ: '%', kids: []resp{{typ: '+', str: "id"}, str(work.String())}}, {typ: '~', kids: []resp{record(work.String(), 1, str("a"))}},
		{typ: '#', n: 1}, {typ: ',', str: "1.5"}, {typ: '(', str: "99999999999999999999"}, {typ: '=', str: "txt:abc"},
		// 2.4.0's shapes: fail, output, counters, events, add_many.
		arr(str("retried"), num(1780000000000)), arr(str(""), num(1780000000000), num(2), str("result")),
		arr(arr(num(0), num(1), num(2), num(3), num(4)), arr(num(1779999960000), num(0), num(0), num(0), num(0))),
		arr(arr(str("1780000000000-0"), str("completed"), str(work.String()), num(1), str(""), str(""), num(0), str(""))),
		arr(arr(str("1780000000000-1"), str("failed"), str(other.String()), num(2), str("error"), str("boom"), num(0), resp{typ: '_'})),
		arr(arr(num(1), num(0)), arr(num(0), num(1780000000000))),
		// 2.6.0's shapes: upsert_scheduler, a scheduler's record (and the
		// empty one of a missing scheduler), fire_schedulers' outcomes.
		arr(num(1), num(1), num(1780000000000)),
		arr(arr(str("nightly"), str("0 3 * * *"), num(0), num(0), str("Europe/Berlin"), str(string(wire.MissedRunOnce)), num(0), num(60000),
			str("{scheduler}@{slot}"), num(0), num(1780016400000), num(1779930000000), str(work.String()), num(3), num(1780000000000))),
		arr(arr(str(""), str(""), num(0), num(0), str(""), str(""), num(0), num(0), str(""), num(0), num(0), num(0), str(""), num(0), num(1780000000000)),
			arr(str("every"), str(""), num(1000), num(1779999990000), str(""), str("later-minor-word"), num(100), num(0), str("\x00\xff"), num(1), num(0), num(0), resp{typ: '_'}, num(0), num(1780000000000))),
		arr(arr(str(string(wire.FiringFired))), arr(str(string(wire.FiringStale))), arr(str(string(wire.FiringGone)))),
	}
	for _, b := range bad {
		vals = append(vals, record(b, 1, str("p")), arr(record(b, 1, str("p"))))
	}
	out := []string{"$-1\r\n", "*-1\r\n"}
	for _, v := range vals {
		out = append(out, v.text())
	}
	return out
}

// namesScript reports whether a decoder's error says which script failed:
// "emq: <script>: ...", or for a record of a repeated reply "record <i>:
// emq: <script>: ..." (the record decoder names the script itself).
func namesScript(err error, s *wire.Script) bool {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "record "); ok {
		_, msg, _ = strings.Cut(rest, ": ")
	}
	return strings.HasPrefix(msg, "emq: "+s.Name+": ")
}

// FuzzDecodeReply feeds every script's decoder an arbitrary RESP3 reply.
// None may panic. An error reply decodes to its refusal (see checkRefusal);
// any other error says which script failed ("emq: <script>: ..."); a
// decoded value is exactly what the reply holds: an int reply its integer,
// records their id (well formed), token, payload and deadline, the fence
// its two strings; and claim's nil is "nothing pending", not an error.
func FuzzDecodeReply(f *testing.F) {
	for _, s := range replySeeds(f) {
		f.Add([]byte(s))
	}
	decs := decoders()
	if len(decs) != len(wire.Scripts()) {
		f.Fatalf("%d decoders under test; the bundle has %d scripts", len(decs), len(wire.Scripts()))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, _, err := parseRESP(data, 0)
		if err != nil {
			return
		}
		for s, dec := range decs {
			d, err := dec(v.result(t))
			if v.isErr() {
				checkRefusal(t, s, v, err)
				continue
			}
			if err != nil {
				if !namesScript(err, s) {
					t.Fatalf("%s: the error for %q does not name the script: %v", s.Name, v.text(), err)
				}
				if s == wire.ScriptClaim && v.typ == '_' {
					t.Fatalf("claim: a nil reply (nothing pending) decoded to an error: %v", err)
				}
				continue
			}
			switch {
			case s == wire.ScriptClaim:
				if v.typ == '_' {
					if d.ok {
						t.Fatal("claim: a nil reply decoded as a job")
					}
					continue
				}
				want, ok := recordOf(v)
				if !ok || !d.ok || strings.Join(d.records[0], "\x00") != strings.Join(want, "\x00") {
					t.Fatalf("claim: %q decoded to %q (ok %v); want %q (decodable %v)", v.text(), d.records, d.ok, want, ok)
				}
			case s == wire.ScriptFence:
				if (v.typ != '*' && v.typ != '~') || len(v.kids) != 2 {
					t.Fatalf("fence: %q decoded to %q", v.text(), d.fence)
				}
				for i, k := range v.kids {
					want, ok := k.stringy()
					if k.typ == '_' {
						want, ok = "", true
					}
					if !ok || d.fence[i] != want {
						t.Fatalf("fence: element %d of %q decoded to %q", i, v.text(), d.fence[i])
					}
				}
			case d.entries != nil:
				if (v.typ != '*' && v.typ != '~') || len(v.kids) != len(d.entries) {
					t.Fatalf("%s: %q decoded to %d records", s.Name, v.text(), len(d.entries))
				}
				for i, k := range v.kids {
					if (k.typ != '*' && k.typ != '~') || len(k.kids) != 1 {
						t.Fatalf("%s: record %d of %q is not one element, yet decoded to %d", s.Name, i, v.text(), d.entries[i])
					}
					if want, ok := k.kids[0].intOf(); !ok || d.entries[i] != want {
						t.Fatalf("%s: record %d of %q decoded to %d; want %d (an integer: %v)", s.Name, i, v.text(), d.entries[i], want, ok)
					}
				}
			case d.fields != nil && d.repeated:
				if (v.typ != '*' && v.typ != '~') || len(v.kids) != len(d.fields) {
					t.Fatalf("%s: %q decoded to %d records", s.Name, v.text(), len(d.fields))
				}
				for i, k := range v.kids {
					want, ok := fieldsOf(k, d.shape)
					if !ok || strings.Join(d.fields[i], "\x00") != strings.Join(want, "\x00") {
						t.Fatalf("%s: record %d of %q decoded to %q; want %q (decodable %v)", s.Name, i, v.text(), d.fields[i], want, ok)
					}
				}
			case d.fields != nil:
				want, ok := fieldsOf(v, d.shape)
				if !ok || strings.Join(d.fields[0], "\x00") != strings.Join(want, "\x00") {
					t.Fatalf("%s: %q decoded to %q; want %q (decodable %v)", s.Name, v.text(), d.fields[0], want, ok)
				}
			case d.attempts != nil:
				if (v.typ != '*' && v.typ != '~') || len(v.kids) != len(d.attempts) {
					t.Fatalf("%s: %q decoded to %d records", s.Name, v.text(), len(d.attempts))
				}
				for i, k := range v.kids {
					want, ok := attemptOf(k)
					if !ok || strings.Join(d.attempts[i], "\x00") != strings.Join(want, "\x00") {
						t.Fatalf("%s: record %d of %q decoded to %q; want %q (decodable %v)", s.Name, i, v.text(), d.attempts[i], want, ok)
					}
				}
			case d.records != nil:
				if (v.typ != '*' && v.typ != '~') || len(v.kids) != len(d.records) {
					t.Fatalf("%s: %q decoded to %d records", s.Name, v.text(), len(d.records))
				}
				for i, k := range v.kids {
					want, ok := recordOf(k)
					if !ok || strings.Join(d.records[i], "\x00") != strings.Join(want, "\x00") {
						t.Fatalf("%s: record %d of %q decoded to %q; want %q (decodable %v)", s.Name, i, v.text(), d.records[i], want, ok)
					}
				}
			default:
				want, ok := v.intOf()
				if !ok || d.ints[0] != want {
					t.Fatalf("%s: %q decoded to %d; want %d (an integer: %v)", s.Name, v.text(), d.ints[0], want, ok)
				}
			}
		}
	})
}

// FuzzDecodeRecords builds well-shaped record replies from arbitrary
// fields: they decode to exactly those fields when the id is well formed,
// and fail with ErrID, naming the script and the record, when it is not.
func FuzzDecodeRecords(f *testing.F) {
	p := reference(f)
	for i, ex := range p.IDs.Examples {
		f.Add(ex.ID, int64(i+1), []byte("payload"), int64(1780000000000), uint8(i))
	}
	_, _, bad := seedIDs(f)
	for i, b := range bad {
		f.Add(b, int64(math.MaxInt64), []byte("\x00\xff\r\n"), int64(math.MinInt64), uint8(i))
	}
	f.Fuzz(func(t *testing.T, id string, token int64, payload []byte, deadline int64, n uint8) {
		n %= 8
		record := resp{typ: '*', kids: []resp{{typ: '$', str: id}, {typ: ':', n: token}, {typ: '$', str: string(payload)}, {typ: ':', n: deadline}}}
		many := resp{typ: '*', kids: []resp{}}
		for i := uint8(0); i < n; i++ {
			many.kids = append(many.kids, record)
		}
		_, idErr := emq.ParseID(id)
		want := []string{id, strconv.FormatInt(token, 10), string(payload), strconv.FormatInt(deadline, 10)}
		check := func(s *wire.Script, d decoded, err error, records int) {
			t.Helper()
			if idErr != nil {
				if records == 0 && s != wire.ScriptClaim {
					if err != nil || len(d.records) != 0 {
						t.Fatalf("%s: no records decoded to %v, %v", s.Name, d.records, err)
					}
					return
				}
				if !errors.Is(err, emq.ErrID) || !namesScript(err, s) {
					t.Fatalf("%s: a record with the id %q decoded to %v; want ErrID naming the script", s.Name, id, err)
				}
				if s != wire.ScriptClaim && !strings.Contains(err.Error(), "record 0") {
					t.Fatalf("%s: the error does not name the record: %v", s.Name, err)
				}
				return
			}
			if err != nil || len(d.records) != records {
				t.Fatalf("%s: %d records decoded to %d, %v", s.Name, records, len(d.records), err)
			}
			for _, r := range d.records {
				if strings.Join(r, "\x00") != strings.Join(want, "\x00") {
					t.Fatalf("%s: decoded %q; want %q", s.Name, r, want)
				}
			}
		}
		decs := decoders()
		d, err := decs[wire.ScriptClaim](record.result(t))
		check(wire.ScriptClaim, d, err, 1)
		for _, s := range []*wire.Script{wire.ScriptClaimMany, wire.ScriptCompleteClaim} {
			d, err := decs[s](many.result(t))
			check(s, d, err, int(n))
		}
	})
}

// Non-reply failures (a timeout, a closed client) pass through every
// decoder wrapped, naming the script.
func TestDecodeNonRedisError(t *testing.T) {
	cause := fmt.Errorf("connection reset")
	for s, dec := range decoders() {
		_, err := dec(rueidis.NewErrorResult(cause))
		if !errors.Is(err, cause) || !strings.HasPrefix(err.Error(), "emq: "+s.Name+": ") {
			t.Errorf("%s: %v; want the cause wrapped, naming the script", s.Name, err)
		}
	}
}
