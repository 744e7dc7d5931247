// Package logbuf is a concurrency-safe buffer for what a test captures from loggers and child
// processes, with the JSON lines it holds decoded on demand.
package logbuf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"sync"
)

// Buffer collects writes from concurrent writers. The zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Bytes is a copy of everything written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Events decodes the lines that are JSON objects whose "event" is name ("" for every object), in
// order; other lines are skipped.
func (b *Buffer) Events(name string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.Bytes()))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && (name == "" || m["event"] == name) {
			out = append(out, m)
		}
	}
	return out
}
