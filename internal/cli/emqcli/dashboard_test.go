package emqcli_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/internal/cli/emqcli"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// startDashboard runs emq dashboard with args in-process and returns the
// URL it serves and a func that stops it and returns its exit status.
func startDashboard(t *testing.T, args ...string) (string, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	restore := emqcli.ServeDashboardUntil(ctx)
	out, w := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := emqcli.Main(append([]string{"dashboard"}, args...), w, &stderr)
		w.Close()
		done <- code
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("emq dashboard printed no address (%v); exit %d, stderr:\n%s", err, <-done, stderr.String())
	}
	go io.Copy(io.Discard, out)
	_, rest, ok := strings.Cut(line, "serving ")
	if !ok {
		t.Fatalf("emq dashboard printed %q", line)
	}
	url, _, _ := strings.Cut(rest, " ")
	return strings.TrimSuffix(url, "/"), func() int {
		cancel()
		defer restore()
		select {
		case code := <-done:
			return code
		case <-time.After(30 * time.Second):
			t.Fatal("emq dashboard did not stop")
			return -1
		}
	}
}

func TestDashboardCommand(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("orders")
	id, _ := c.Mint(emq.WorkKind)
	if _, err := q.Push(ctx, id, []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}

	url, stop := startDashboard(t, "-addr", srv.Addr(), "-listen", "127.0.0.1:0")
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `data-queue="orders"`) || !strings.Contains(string(body), "read-only") {
		t.Errorf("GET / = %d\n%s", resp.StatusCode, body)
	}
	resp, err = http.Get(url + "/queue/orders/job/" + id.String() + "/revive")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("an action of the read-only dashboard = %d, want 403", resp.StatusCode)
	}
	if code := stop(); code != emqcli.ExitOK {
		t.Errorf("exit %d", code)
	}

	// Basic auth, the password from the environment.
	t.Setenv(emqcli.DashboardPasswordEnv, "s3cret")
	url, stop = startDashboard(t, "-addr", srv.Addr(), "-listen", "127.0.0.1:0", "-auth-user", "ops", "-actions")
	for pw, want := range map[string]int{"": http.StatusUnauthorized, "wrong": http.StatusUnauthorized, "s3cret": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, url+"/queue/orders", nil)
		if pw != "" {
			req.SetBasicAuth("ops", pw)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("password %q = %d, want %d", pw, resp.StatusCode, want)
		}
	}
	stop()
}

// Bad flags exit 2 before connecting or listening.
func TestDashboardCommandRefuses(t *testing.T) {
	for name, args := range map[string][]string{
		"bad queue":               {"-queues", "orders,Bad{q}"},
		"actions beyond loopback": {"-actions", "-listen", "0.0.0.0:0"},
		"auth without password":   {"-auth-user", "ops"},
		"both masks":              {"-mask", "-mask-fields", "card"},
		"bad listen":              {"-listen", "nope"},
		"arguments":               {"extra"},
	} {
		t.Setenv(emqcli.DashboardPasswordEnv, "")
		var stdout, stderr bytes.Buffer
		// 127.0.0.1:1 is never served: a command that tried to connect would fail there, not here.
		code := emqcli.Main(append([]string{"dashboard", "-addr", "127.0.0.1:1"}, args...), &stdout, &stderr)
		if code != emqcli.ExitUsage || stderr.Len() == 0 || strings.Contains(stderr.String(), "connecting") {
			t.Errorf("%s: exit %d, stderr %q", name, code, stderr.String())
		}
	}
}
