package logbuf

import (
	"fmt"
	"sync"
	"testing"
)

func TestBufferCollectsConcurrentLinesAndDecodesEvents(t *testing.T) {
	t.Parallel()
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				fmt.Fprintf(&b, "{\"event\":\"e%d\",\"n\":%d}\n", i%2, j)
			}
		})
	}
	wg.Wait()
	fmt.Fprintln(&b, "not json")
	if n := len(b.Events("")); n != 400 {
		t.Fatalf("%d events, want 400", n)
	}
	if n := len(b.Events("e1")); n != 200 {
		t.Fatalf("%d e1 events, want 200", n)
	}
	if got := b.Bytes(); len(got) != len(b.String()) {
		t.Fatalf("Bytes %d, String %d", len(got), len(b.String()))
	}
}
