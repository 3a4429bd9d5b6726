package emq_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// connectWith connects with opt and checks the client reaches srv: a push
// lands in the keyspace of the database wantDB.
func connectWith(t *testing.T, opt emq.Options, wantDB string) *emq.Client {
	t.Helper()
	opt.Redis.DisableCache = true
	c, err := emq.Connect(ctxT(t), opt)
	if err != nil {
		t.Fatalf("Connect(%+v): %v", opt, err)
	}
	t.Cleanup(c.Close)
	info, err := do(t, c, "CLIENT", "INFO").ToString()
	if err != nil {
		t.Fatalf("CLIENT INFO: %v", err)
	}
	if !strings.Contains(info, " db="+wantDB+" ") {
		t.Errorf("the client's connection is not on db %s: %s", wantDB, info)
	}
	q := queue(t, c, "orders")
	if ok, err := q.Push(ctxT(t), mint(t, c, emq.WorkKind), []byte("x")); err != nil || !ok {
		t.Fatalf("Push = %v, %v", ok, err)
	}
	return c
}

// TestConnectAddress connects by Addr, Addrs and URL, with no rueidis
// option at all.
func TestConnectAddress(t *testing.T) {
	srv := redistest.Start(t)
	connectWith(t, emq.Options{Addr: srv.Addr()}, "0")
	connectWith(t, emq.Options{Addrs: []string{srv.Addr()}}, "0")
	connectWith(t, emq.Options{URL: "redis://" + srv.Addr()}, "0")
	connectWith(t, emq.Options{URL: "redis://" + srv.Addr() + "/3"}, "3")
	if n, err := srv.Do("DBSIZE"); err != nil || n == "0" {
		t.Errorf("db 0 holds nothing after the pushes: %q, %v", n, err)
	}
}

// TestConnectURLCredentials connects with the user and password of a URL
// to a server that requires them, and is refused with wrong ones.
func TestConnectURLCredentials(t *testing.T) {
	srv := redistest.Start(t)
	if _, err := srv.Do("ACL", "SETUSER", "app", "on", ">s3cret", "~*", "&*", "+@all"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("ACL", "SETUSER", "default", "off"); err != nil {
		t.Fatal(err)
	}
	connectWith(t, emq.Options{URL: "redis://app:s3cret@" + srv.Addr() + "/0"}, "0")
	if _, err := emq.Connect(ctxT(t), emq.Options{URL: "redis://app:wrong@" + srv.Addr() + "/0"}); err == nil {
		t.Error("Connect with a wrong password succeeded")
	}
}

// TestConnectRediss connects over TLS with a rediss:// URL, trusting the
// test's CA through Redis.TLSConfig; without it the server's certificate
// is not trusted.
func TestConnectRediss(t *testing.T) {
	x := redistest.NewTLS(t)
	redistest.Start(t, x.Option())
	connectWith(t, emq.Options{URL: "rediss://" + x.Addr(), Redis: rueidis.ClientOption{TLSConfig: x.Config()}}, "0")
	if _, err := emq.Connect(ctxT(t), emq.Options{URL: "rediss://" + x.Addr()}); err == nil {
		t.Error("rediss:// trusted a certificate of a CA nobody configured")
	}
}

// TestConnectOptionErrors checks that an address given none or several
// times, a bad URL, and a URL and Redis setting the same thing are refused
// with ErrArgument before anything is dialed.
func TestConnectOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  emq.Options
		want string
	}{
		{"none", emq.Options{}, "no server address"},
		{"Addr and Addrs", emq.Options{Addr: "127.0.0.1:1", Addrs: []string{"127.0.0.1:2"}}, "given 2 times (Addr, Addrs)"},
		{"Addr and URL", emq.Options{Addr: "127.0.0.1:1", URL: "redis://127.0.0.1:2"}, "given 2 times (Addr, URL)"},
		{"Addr and InitAddress", emq.Options{Addr: "127.0.0.1:1", Redis: rueidis.ClientOption{InitAddress: []string{"127.0.0.1:2"}}}, "given 2 times (Addr, Redis.InitAddress)"},
		{"not a redis URL", emq.Options{URL: "http://127.0.0.1:1"}, "Options.URL"},
		{"bad database", emq.Options{URL: "redis://127.0.0.1:1/x"}, "Options.URL"},
		{"user twice", emq.Options{URL: "redis://u:p@127.0.0.1:1", Redis: rueidis.ClientOption{Username: "v"}}, "Options.URL sets Username, and so does Options.Redis.Username"},
		{"TLS without rediss", emq.Options{URL: "redis://127.0.0.1:1", Redis: rueidis.ClientOption{TLSConfig: redistest.NewTLS(t).Config()}}, "use rediss://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := emq.Connect(ctxT(t), tc.opt)
			if err == nil {
				c.Close()
				t.Fatal("Connect succeeded")
			}
			if !errors.Is(err, emq.ErrArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrArgument saying %q", err, tc.want)
			}
		})
	}
}

// TestObserveAddress opens an observing client by Addr and by URL, and
// refuses a missing address as Connect does.
func TestObserveAddress(t *testing.T) {
	srv := redistest.Start(t)
	for _, opt := range []emq.Options{{Addr: srv.Addr()}, {URL: "redis://" + srv.Addr() + "/2"}} {
		c, err := emq.Observe(ctxT(t), opt)
		if err != nil {
			t.Fatalf("Observe(%+v): %v", opt, err)
		}
		if !c.Observing() {
			t.Errorf("Observe(%+v) returned a client that does not observe", opt)
		}
		c.Close()
	}
	if _, err := emq.Observe(ctxT(t), emq.Options{}); !errors.Is(err, emq.ErrArgument) {
		t.Errorf("Observe without an address: err = %v, want ErrArgument", err)
	}
}
