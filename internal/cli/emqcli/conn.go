package emqcli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
)

// PasswordEnv is read for the password when -password is empty, so that it
// need not appear in the process list.
const PasswordEnv = "EMQ_REDIS_PASSWORD"

// conn is how emq's commands reach a server: the connection flags they
// share, defined on a flag set by flags and turned into a client option by
// option.
type conn struct {
	Addr          string
	URL           string
	DB            int
	User          string
	Password      string
	TLS           bool
	TLSCA         string
	TLSServerName string
	Timeout       time.Duration

	fs *flag.FlagSet
}

// connSynopsis is the connection flags in a command's synopsis.
const connSynopsis = "[-addr HOST:PORT | -url redis[s]://[USER:PASS@]HOST:PORT[/DB]] [-db N] [-user NAME] [-password PASS] [-tls [-tls-ca FILE] [-tls-server-name NAME]] [-timeout D]"

// flags defines -addr, -user, -password, -tls, -tls-ca, -tls-server-name
// and -timeout on fs; parsing fs fills c.
func (c *conn) flags(fs *flag.FlagSet) {
	c.fs = fs
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:6379", "the server, host:port (a cluster is found from any of its nodes)")
	fs.StringVar(&c.URL, "url", "", "the server as a URL instead of -addr: redis://[user:password@]host:port[/db], rediss:// for TLS")
	fs.IntVar(&c.DB, "db", 0, "the logical database (default 0, or the URL's)")
	fs.StringVar(&c.User, "user", "", "the ACL user name (default: the default user)")
	fs.StringVar(&c.Password, "password", "", "the password (default: $"+PasswordEnv+")")
	fs.BoolVar(&c.TLS, "tls", false, "connect with TLS (implied by -tls-ca and -tls-server-name)")
	fs.StringVar(&c.TLSCA, "tls-ca", "", "a PEM file of the CA certificates to trust (default: the system's)")
	fs.StringVar(&c.TLSServerName, "tls-server-name", "", "the name to verify the server's certificate against (default: the host of -addr)")
	fs.DurationVar(&c.Timeout, "timeout", 30*time.Second, "give up after this long")
}

// option checks the parsed flags and returns the client option they
// describe: the password from PasswordEnv when -password is empty, TLS when
// -tls, -tls-ca or -tls-server-name was given, client-side caching and
// CLIENT SETINFO off. Its errors name the flag at fault.
func (c *conn) option() (rueidis.ClientOption, error) {
	if c.Timeout <= 0 {
		return rueidis.ClientOption{}, fmt.Errorf("-timeout %v: give a positive duration", c.Timeout)
	}
	set := map[string]bool{}
	if c.fs != nil {
		c.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	}
	if c.DB < 0 {
		return rueidis.ClientOption{}, fmt.Errorf("-db %d: a logical database is a number from 0", c.DB)
	}
	opt := rueidis.ClientOption{InitAddress: []string{c.Addr}, SelectDB: c.DB}
	tlsOn := c.TLS || c.TLSCA != "" || c.TLSServerName != "" || set["tls-ca"] || set["tls-server-name"]
	if c.URL != "" {
		if set["addr"] {
			return rueidis.ClientOption{}, fmt.Errorf("-addr and -url: give the server once")
		}
		u, err := rueidis.ParseURL(c.URL)
		if err != nil {
			return rueidis.ClientOption{}, fmt.Errorf("-url: %v", err)
		}
		if set["db"] && u.SelectDB != 0 && u.SelectDB != c.DB {
			return rueidis.ClientOption{}, fmt.Errorf("-db %d and -url's database %d: give the database once", c.DB, u.SelectDB)
		}
		if set["user"] && u.Username != "" || set["password"] && u.Password != "" {
			return rueidis.ClientOption{}, fmt.Errorf("-url carries credentials: give them there or with -user and -password, not both")
		}
		if tlsOn && u.TLSConfig == nil {
			return rueidis.ClientOption{}, fmt.Errorf("-url %s is not rediss:// but TLS flags are given: use rediss:// for TLS", c.Target())
		}
		opt = rueidis.ClientOption{InitAddress: u.InitAddress, SelectDB: u.SelectDB, Username: u.Username, Password: u.Password, TLSConfig: u.TLSConfig}
		if set["db"] {
			opt.SelectDB = c.DB
		}
		tlsOn = tlsOn || u.TLSConfig != nil
	}
	if len(opt.InitAddress) == 0 {
		return rueidis.ClientOption{}, fmt.Errorf("-url %s names no server", c.Target())
	}
	host, _, err := net.SplitHostPort(opt.InitAddress[0])
	if err != nil {
		return rueidis.ClientOption{}, fmt.Errorf("-addr %q: %v", c.Addr, err)
	}
	if opt.Username == "" {
		opt.Username = c.User
	}
	if opt.Password == "" {
		opt.Password = c.Password
	}
	opt.DisableCache = true
	opt.ClientSetInfo = rueidis.DisableClientSetInfo
	opt.Dialer = net.Dialer{Timeout: min(c.Timeout, 10*time.Second)}
	if opt.Password == "" {
		opt.Password = os.Getenv(PasswordEnv)
	}
	if tlsOn {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
		if c.TLSServerName != "" {
			cfg.ServerName = c.TLSServerName
		}
		if c.TLSCA != "" {
			pem, err := os.ReadFile(c.TLSCA)
			if err != nil {
				return rueidis.ClientOption{}, fmt.Errorf("-tls-ca: %v", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return rueidis.ClientOption{}, fmt.Errorf("-tls-ca %s: no PEM certificate in it", c.TLSCA)
			}
		}
		opt.TLSConfig = cfg
	}
	return opt, nil
}

// observe opens an observing client (emq.Observe: it never fences, and
// writes only a keyspace of the SDK's major); the error names the address.
func (c *conn) observe(ctx context.Context, opt rueidis.ClientOption) (*emq.Client, error) {
	cl, err := emq.Observe(ctx, emq.Options{Redis: opt})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", c.Target(), err)
	}
	return cl, nil
}

// Target names the server for messages: -addr, or -url without its
// password.
func (c *conn) Target() string {
	if c.URL == "" {
		return c.Addr
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return "the URL given"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
