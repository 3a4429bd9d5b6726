//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package emq

import (
	"errors"
	"net"
	"syscall"
)

// peerClosed reports whether the server has closed conn (or reset it):
// what a read would return is the connection's end, not data. It peeks
// without blocking and consumes nothing. A connection it cannot look
// into (not a socket, nor wrapping one with a NetConn method as *tls.Conn
// does) is taken to be open.
func peerClosed(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	for i := 0; !ok && i < 4; i++ {
		// TLS, or a dialer's wrapper: the connection underneath.
		t, wraps := conn.(interface{ NetConn() net.Conn })
		if !wraps {
			return false
		}
		conn = t.NetConn()
		sc, ok = conn.(syscall.Conn)
	}
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	var buf [1]byte
	// Control, not Read: a background reader parked in Read holds the
	// socket's read lock; the peek never blocks, so it needs none.
	_ = rc.Control(func(fd uintptr) {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil:
			closed = n == 0
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
		default:
			closed = true // ECONNRESET, ENOTCONN, ...
		}
	})
	return closed
}
