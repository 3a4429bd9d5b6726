//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package emq

import "net"

// peeker cannot look into a connection on this platform: every connection
// is taken to be open, and a command written to one the server closed
// fails as sent (ErrConnection).
type peeker struct{}

func newPeeker(net.Conn) *peeker    { return nil }
func (p *peeker) peerClosed() bool  { return false }
func peerClosed(conn net.Conn) bool { return false }
