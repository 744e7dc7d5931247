// Package faultnet provides a loopback TCP relay that tests put between a client and a server to
// make the connection misbehave on command: stall one direction or both (bytes stay in the
// relay, as when a network silently drops packets), then resume.
package faultnet

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Relay forwards every accepted connection to a target address.
type Relay struct {
	ln     net.Listener
	target string

	mu        sync.Mutex
	upStall   chan struct{} // non-nil while client→server is stalled; closed on resume
	downStall chan struct{} // non-nil while server→client is stalled
	conns     []net.Conn
	closed    bool
	wg        sync.WaitGroup
}

// Start listens on 127.0.0.1 and relays to target ("host:port"). It stops when the test ends.
func Start(t testing.TB, target string) *Relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{ln: ln, target: target}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(r.Close)
	return r
}

// Addr is the relay's "host:port".
func (r *Relay) Addr() string { return r.ln.Addr().String() }

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		client, err := r.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", r.target)
		if err != nil {
			client.Close()
			continue
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			client.Close()
			server.Close()
			return
		}
		r.conns = append(r.conns, client, server)
		r.mu.Unlock()
		r.wg.Add(2)
		go r.pipe(server, client, true)
		go r.pipe(client, server, false)
	}
}

// pipe copies src to dst, holding each chunk while its direction is stalled.
func (r *Relay) pipe(dst, src net.Conn, up bool) {
	defer r.wg.Done()
	defer dst.Close()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.waitIfStalled(up)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

func (r *Relay) waitIfStalled(up bool) {
	r.mu.Lock()
	ch := r.downStall
	if up {
		ch = r.upStall
	}
	r.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// Stall holds the bytes of both directions until Resume.
func (r *Relay) Stall() { r.stall(true, true) }

// StallDownstream holds server→client bytes only: requests still arrive and execute, answers wait.
func (r *Relay) StallDownstream() { r.stall(false, true) }

func (r *Relay) stall(up, down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if up && r.upStall == nil {
		r.upStall = make(chan struct{})
	}
	if down && r.downStall == nil {
		r.downStall = make(chan struct{})
	}
}

// Resume releases every held byte and lets traffic flow again.
func (r *Relay) Resume() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ch := range []*chan struct{}{&r.upStall, &r.downStall} {
		if *ch != nil {
			close(*ch)
			*ch = nil
		}
	}
}

// Close stops the relay and closes every relayed connection.
func (r *Relay) Close() {
	r.Resume()
	r.mu.Lock()
	r.closed = true
	conns := r.conns
	r.conns = nil
	r.mu.Unlock()
	r.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	r.wg.Wait()
}
