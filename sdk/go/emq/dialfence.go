package emq

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// dialFence fences a standalone server on a connection rueidis has just
// dialed to replace a lost one, before rueidis uses it: rueidis swaps the
// connection inside whatever command comes next, so a fence run before
// that command (ensure) can lose the race and let the command write into
// a keyspace that came back as another's. It speaks RESP2 on the raw
// connection (auth and database first, as rueidis will), runs the fence
// script, and returns the fence's verdict; a refused connection is closed
// and the error reaches the command that dialed it.
func (c *Client) dialFence(conn net.Conn, ro rueidis.ClientOption) error {
	timeout := ro.ConnWriteTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return errorf("%w: fencing a new connection: %w", ErrConnection, err)
	}
	defer conn.SetDeadline(time.Time{})
	br := bufio.NewReader(conn)
	ask := func(args ...string) (respValue, error) {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := io.WriteString(conn, b.String()); err != nil {
			return respValue{}, err
		}
		return readResp(br)
	}
	user, pass := ro.Username, ro.Password
	if ro.AuthCredentialsFn != nil {
		cred, err := ro.AuthCredentialsFn(rueidis.AuthCredentialsContext{Address: conn.RemoteAddr()})
		if err != nil {
			return err
		}
		user, pass = cred.Username, cred.Password
	}
	if pass != "" {
		args := []string{"AUTH", pass}
		if user != "" {
			args = []string{"AUTH", user, pass}
		}
		if v, err := ask(args...); err != nil || v.err != "" {
			return connectionError(errorf("emq: fencing a new connection: auth: %w", join(err, replyError(v.err))))
		}
	}
	if ro.SelectDB != 0 {
		if v, err := ask("SELECT", strconv.Itoa(ro.SelectDB)); err != nil || v.err != "" {
			return connectionError(errorf("emq: fencing a new connection: select: %w", join(err, replyError(v.err))))
		}
	}
	call := wire.FenceCall{VersionKey: wire.KeyVersion, BundleKey: wire.KeyBundle, Version: wire.VersionRecord, Semver: Version, Bundle: wire.BundleDigest}
	keys, args := call.Keys(), call.Args()
	tail := append(append([]string{strconv.Itoa(len(keys))}, keys...), args...)
	v, err := ask(append([]string{"EVALSHA", wire.ScriptFence.SHA1}, tail...)...)
	if err == nil && strings.HasPrefix(v.err, "NOSCRIPT") {
		v, err = ask(append([]string{"EVAL", wire.ScriptFence.Source}, tail...)...)
	}
	switch {
	case err != nil && errors.Is(err, errResp):
		return errorf("emq: fencing a new connection: %w", err)
	case err != nil, loadingReply(v.err):
		// The fence could not run: a transport failure (or a server still
		// loading), never a refusal.
		return errorf("%w: fencing a new connection: %w", ErrConnection, join(err, replyError(v.err)))
	case v.err != "":
		return errorf("%w: fencing a new connection: %s", ErrVersionFence, v.err)
	case len(v.arr) != 2:
		return errorf("%w: fencing a new connection: the fence answered %d elements", ErrVersionFence, len(v.arr))
	}
	found, bundle := v.arr[0].str, v.arr[1].str
	if _, err := CheckVersionRecord(found); err != nil {
		return err
	}
	if bundle != wire.BundleDigest {
		return &BundleError{Version: Version, Found: bundle, Want: wire.BundleDigest}
	}
	c.found.Store(&found)
	return nil
}

// respValue is a RESP2 reply: a simple or bulk string, an integer, an
// error, an array, or nil.
type respValue struct {
	str string
	err string
	arr []respValue
	nil bool
}

var errResp = errors.New("emq: malformed reply")

// replyError is an error reply's text as an error; nil for none.
func replyError(msg string) error {
	if msg == "" {
		return nil
	}
	return errors.New(msg)
}

func readResp(br *bufio.Reader) (respValue, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return respValue{}, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return respValue{}, errResp
	}
	switch line[0] {
	case '+', ':':
		return respValue{str: line[1:]}, nil
	case '-':
		return respValue{err: line[1:]}, nil
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return respValue{}, errResp
		}
		if n < 0 {
			return respValue{nil: true}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return respValue{}, err
		}
		return respValue{str: string(buf[:n])}, nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return respValue{}, errResp
		}
		if n < 0 {
			return respValue{nil: true}, nil
		}
		v := respValue{arr: make([]respValue, n)}
		for i := range v.arr {
			if v.arr[i], err = readResp(br); err != nil {
				return respValue{}, err
			}
		}
		return v, nil
	}
	return respValue{}, errResp
}
