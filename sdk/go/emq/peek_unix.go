//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package emq

import (
	"errors"
	"net"
	"syscall"
)

// peeker looks into a socket without consuming anything: whether what a
// read would return is the connection's end rather than data. It is made
// once per connection, so that a look allocates nothing; it is not safe for
// concurrent use (rueidis writes a connection from one goroutine at a
// time).
type peeker struct {
	rc     syscall.RawConn
	closed bool
	buf    [1]byte
	look   func(fd uintptr)
}

// newPeeker returns a peeker for conn, or nil for a connection it cannot
// look into: not a socket, nor wrapping one with a NetConn method as
// *tls.Conn does.
func newPeeker(conn net.Conn) *peeker {
	sc, ok := conn.(syscall.Conn)
	for i := 0; !ok && i < 4; i++ {
		// TLS, or a dialer's wrapper: the connection underneath.
		t, wraps := conn.(interface{ NetConn() net.Conn })
		if !wraps {
			return nil
		}
		conn = t.NetConn()
		sc, ok = conn.(syscall.Conn)
	}
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	p := &peeker{rc: rc}
	p.look = func(fd uintptr) {
		n, _, err := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil:
			p.closed = n == 0
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
		default:
			p.closed = true // ECONNRESET, ENOTCONN, ...
		}
	}
	return p
}

// peerClosed reports whether the server has closed (or reset) the
// connection. Control, not Read: a background reader parked in Read holds
// the socket's read lock; the look never blocks, so it needs none.
func (p *peeker) peerClosed() bool {
	if p == nil {
		return false
	}
	p.closed = false
	_ = p.rc.Control(p.look)
	return p.closed
}

// peerClosed reports whether the server has closed conn (a peeker's look,
// made once).
func peerClosed(conn net.Conn) bool { return newPeeker(conn).peerClosed() }
