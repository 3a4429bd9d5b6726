//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package emq

import "net"

// peerClosed cannot look into a connection on this platform: it is taken
// to be open, and a command written to a connection the server closed
// fails as sent (ErrConnection).
func peerClosed(net.Conn) bool { return false }
