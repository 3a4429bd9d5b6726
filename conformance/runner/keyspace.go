package runner

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

// server is the runner's own connection: it flushes, plants, reads the
// keyspace and counts commands; the testee never sees it.
type server struct {
	rc      rueidis.Client
	addr    string
	reserve string // the prefix of every reserve key
	tracing bool   // Options.Trace: a marker before every step
	tracer  *tracer
}

// clientAddrs returns the addresses of the runner's own connections to
// the server (CLIENT LIST, less the testee's: none runs yet), so that the
// wire trace leaves out what the runner sent.
func (s *server) clientAddrs(ctx context.Context) (map[string]bool, error) {
	list, err := s.do(ctx, "CLIENT", "LIST").ToString()
	if err != nil {
		return nil, err
	}
	addrs := map[string]bool{}
	for _, line := range strings.Split(list, "\n") {
		for _, f := range strings.Fields(line) {
			if a, ok := strings.CutPrefix(f, "addr="); ok {
				addrs[a] = true
			}
		}
	}
	return addrs, nil
}

// value is one key as read: its type and contents.
type value struct {
	typ   string
	str   string
	hash  map[string]string
	list  []string
	zset  []rueidis.ZScore
	card  int64
	other string
}

func (s *server) do(ctx context.Context, args ...string) rueidis.RedisResult {
	return s.rc.Do(ctx, s.rc.B().Arbitrary(args...).Build())
}

// flush empties the server: every key, and the script cache, so that
// every scenario meets a server that knows no script (an SDK's EVALSHA
// falls back to EVAL as on a fresh or restarted server).
func (s *server) flush(ctx context.Context) error {
	if err := s.do(ctx, "FLUSHALL", "SYNC").Error(); err != nil {
		return err
	}
	return s.do(ctx, "SCRIPT", "FLUSH", "SYNC").Error()
}

// now reads the server's clock in milliseconds.
func (s *server) now(ctx context.Context) (int64, error) {
	t, err := s.do(ctx, "TIME").AsStrSlice()
	if err != nil {
		return 0, err
	}
	if len(t) != 2 {
		return 0, fmt.Errorf("TIME answered %q", t)
	}
	sec, err1 := strconv.ParseInt(t[0], 10, 64)
	us, err2 := strconv.ParseInt(t[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("TIME answered %q", t)
	}
	return sec*1000 + us/1000, nil
}

// keys lists every key.
func (s *server) keys(ctx context.Context) ([]string, error) {
	var all []string
	cursor := uint64(0)
	for {
		e, err := s.rc.Do(ctx, s.rc.B().Scan().Cursor(cursor).Count(1000).Build()).AsScanEntry()
		if err != nil {
			return nil, err
		}
		all = append(all, e.Elements...)
		if e.Cursor == 0 {
			break
		}
		cursor = e.Cursor
	}
	sort.Strings(all)
	return all, nil
}

// read reads one key; ok is false when it does not exist.
func (s *server) read(ctx context.Context, key string) (value, bool, error) {
	typ, err := s.do(ctx, "TYPE", key).ToString()
	if err != nil {
		return value{}, false, err
	}
	v := value{typ: typ}
	switch typ {
	case "none":
		return v, false, nil
	case "string":
		v.str, err = s.do(ctx, "GET", key).ToString()
		v.card = 1
	case "hash":
		v.hash, err = s.do(ctx, "HGETALL", key).AsStrMap()
		v.card = int64(len(v.hash))
	case "list":
		v.list, err = s.do(ctx, "LRANGE", key, "0", "-1").AsStrSlice()
		v.card = int64(len(v.list))
	case "zset":
		v.zset, err = s.rc.Do(ctx, s.rc.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build()).AsZScores()
		v.card = int64(len(v.zset))
	default:
		v.other = typ
	}
	return v, true, err
}

// plant writes a key from its expected-value spec ({string}, {hash},
// {list}, {zset}), replacing whatever was there.
func (s *server) plant(ctx context.Context, key string, spec any) error {
	m, ok := spec.(map[string]any)
	if !ok || len(m) != 1 {
		return fmt.Errorf("plant %s: want one of {string: s}, {hash: {...}}, {list: [...]}, {zset: [...]}, got %s", key, show(spec))
	}
	if err := s.do(ctx, "DEL", key).Error(); err != nil {
		return err
	}
	for typ, body := range m {
		switch typ {
		case "string":
			return s.do(ctx, "SET", key, fmt.Sprint(body)).Error()
		case "hash":
			h, ok := body.(map[string]any)
			if !ok {
				return fmt.Errorf("plant %s: a hash is an object", key)
			}
			args := []string{"HSET", key}
			for _, f := range sortedKeys(h) {
				args = append(args, f, scalar(h[f]))
			}
			return s.do(ctx, args...).Error()
		case "list":
			l, ok := body.([]any)
			if !ok {
				return fmt.Errorf("plant %s: a list is an array", key)
			}
			args := []string{"RPUSH", key}
			for _, e := range l {
				args = append(args, scalar(e))
			}
			return s.do(ctx, args...).Error()
		case "zset":
			l, ok := body.([]any)
			if !ok {
				return fmt.Errorf("plant %s: a zset is an array", key)
			}
			args := []string{"ZADD", key}
			for _, e := range l {
				member, score := e, any(int64(0))
				if pair, ok := e.([]any); ok && len(pair) == 2 {
					member, score = pair[0], pair[1]
				}
				args = append(args, scalar(score), scalar(member))
			}
			return s.do(ctx, args...).Error()
		}
		return fmt.Errorf("plant %s: unknown type %q", key, typ)
	}
	return nil
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkKeyspace compares the keyspace with want: every non-reserve key
// must be listed unless partial (a null value asserts a key's absence);
// count, when not negative, is how many non-reserve keys there must be.
func (s *server) checkKeyspace(ctx context.Context, want map[string]any, partial bool, count int) []string {
	keys, err := s.keys(ctx)
	if err != nil {
		return []string{fmt.Sprintf("reading the keyspace: %v", err)}
	}
	var problems []string
	var queueKeys []string
	for _, k := range keys {
		if !strings.HasPrefix(k, s.reserve) {
			queueKeys = append(queueKeys, k)
		}
	}
	if count >= 0 && len(queueKeys) != count {
		problems = append(problems, fmt.Sprintf("keyspace: expected %d keys outside the reserve, found %d", count, len(queueKeys)))
	}
	if !partial {
		for _, k := range queueKeys {
			if _, listed := want[k]; !listed {
				v, _, _ := s.read(ctx, k)
				problems = append(problems, fmt.Sprintf("keyspace: unexpected key %s (%s)", k, v.describe()))
			}
		}
	}
	problems = append(problems, s.checkKeys(ctx, want, "keyspace")...)
	return problems
}

// checkKeys compares every listed key with its spec.
func (s *server) checkKeys(ctx context.Context, want map[string]any, what string) []string {
	var problems []string
	for _, k := range sortedKeys(want) {
		v, ok, err := s.read(ctx, k)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: reading %s: %v", what, k, err))
			continue
		}
		spec := want[k]
		if spec == nil {
			if ok {
				problems = append(problems, fmt.Sprintf("%s: %s: expected no key, found %s", what, k, v.describe()))
			}
			continue
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %s: expected %s, the key does not exist", what, k, show(spec)))
			continue
		}
		if err := v.matches(spec); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %s: %v", what, k, err))
		}
	}
	return problems
}

// matches compares a key with its spec: {string: s}, {hash: {f: v}}
// (exact fields), {list: [...]}, {zset: [member | [member, score]]} in
// rank order, {card: n}, optionally with {type: t}.
func (v value) matches(spec any) error {
	m, ok := spec.(map[string]any)
	if !ok {
		return fmt.Errorf("the case's key spec must be an object, got %s", show(spec))
	}
	for _, k := range sortedKeys(m) {
		body := m[k]
		switch k {
		case "type":
			if v.typ != body {
				return fmt.Errorf("expected type %v, found %s", body, v.describe())
			}
		case "card":
			if err := match(body, v.card, "card"); err != nil {
				return fmt.Errorf("%v (found %s)", err, v.describe())
			}
		case "string":
			if v.typ != "string" {
				return fmt.Errorf("expected a string, found %s", v.describe())
			}
			if err := match(body, v.str, "string"); err != nil {
				return err
			}
		case "hash":
			if v.typ != "hash" {
				return fmt.Errorf("expected a hash, found %s", v.describe())
			}
			h, ok := body.(map[string]any)
			if !ok {
				return fmt.Errorf("the case's hash must be an object")
			}
			got := map[string]any{}
			for f, x := range v.hash {
				got[f] = x
			}
			for f := range got {
				if _, ok := h[f]; !ok {
					return fmt.Errorf("unexpected field %q (found %s)", f, v.describe())
				}
			}
			for _, f := range sortedKeys(h) {
				if _, ok := got[f]; !ok {
					return fmt.Errorf("missing field %q (found %s)", f, v.describe())
				}
				if err := match(stringify(h[f]), got[f], "field "+f); err != nil {
					return err
				}
			}
		case "list":
			if v.typ != "list" {
				return fmt.Errorf("expected a list, found %s", v.describe())
			}
			got := make([]any, len(v.list))
			for i, x := range v.list {
				got[i] = x
			}
			if err := match(stringifyAll(body), got, "list"); err != nil {
				return err
			}
		case "zset":
			if v.typ != "zset" {
				return fmt.Errorf("expected a zset, found %s", v.describe())
			}
			l, ok := body.([]any)
			if !ok {
				return fmt.Errorf("the case's zset must be an array")
			}
			if len(l) != len(v.zset) {
				return fmt.Errorf("expected %d members %s, found %s", len(l), show(l), v.describe())
			}
			for i, e := range l {
				member, score := e, any(nil)
				if pair, ok := e.([]any); ok && len(pair) == 2 {
					member, score = pair[0], pair[1]
				}
				if err := match(stringify(member), v.zset[i].Member, fmt.Sprintf("member %d", i)); err != nil {
					return fmt.Errorf("%v (found %s)", err, v.describe())
				}
				if score != nil {
					if err := match(score, v.zset[i].Score, fmt.Sprintf("score of %s", v.zset[i].Member)); err != nil {
						return fmt.Errorf("%v (found %s)", err, v.describe())
					}
				}
			}
		default:
			return fmt.Errorf("unknown key spec %q", k)
		}
	}
	return nil
}

// stringify turns a scalar expectation into the string Redis stores
// (numbers as decimals); matchers and strings stay.
func stringify(v any) any {
	switch x := v.(type) {
	case int, int64, uint64:
		return fmt.Sprint(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return fmt.Sprint(x)
	}
	return v
}

func stringifyAll(v any) any {
	l, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]any, len(l))
	for i, e := range l {
		out[i] = stringify(e)
	}
	return out
}

func (v value) describe() string {
	switch v.typ {
	case "string":
		return fmt.Sprintf("string %q", v.str)
	case "hash":
		return "hash " + show(v.hash)
	case "list":
		return "list " + show(v.list)
	case "zset":
		parts := make([]string, len(v.zset))
		for i, z := range v.zset {
			parts[i] = fmt.Sprintf("%s=%v", z.Member, z.Score)
		}
		return "zset [" + strings.Join(parts, " ") + "]"
	}
	return v.typ
}

// commandStats reads INFO commandstats: calls per command.
func (s *server) commandStats(ctx context.Context) (map[string]int64, error) {
	info, err := s.do(ctx, "INFO", "commandstats").ToString()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if n, ok := strings.CutPrefix(kv, "calls="); ok {
				c, _ := strconv.ParseInt(n, 10, 64)
				out[strings.TrimPrefix(name, "cmdstat_")] = c
			}
		}
	}
	return out, nil
}

// ignoredCommands are what the runner's own checks and client keep-alives
// send; everything else counts as sent by the testee.
var ignoredCommands = map[string]bool{"info": true, "ping": true}

// sentBetween lists the commands whose counts grew from before to after.
func sentBetween(before, after map[string]int64) []string {
	var sent []string
	for name, n := range after {
		if ignoredCommands[name] {
			continue
		}
		if d := n - before[name]; d > 0 {
			sent = append(sent, fmt.Sprintf("%s×%d", name, d))
		}
	}
	sort.Strings(sent)
	return sent
}
