package api

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// collectPerItem is collect as it was with a per-item keep: the reference the batch filter must
// reproduce (same items, same cursor).
func collectPerItem[T any](limit int, fetch func(after *cursorDoc, n int) ([]T, error),
	keep func(T) (bool, error), position func(T) cursorDoc, after *cursorDoc) ([]T, *cursorDoc, error) {
	out := []T{}
	for {
		batch, err := fetch(after, batchSize)
		if err != nil {
			return nil, nil, err
		}
		for _, item := range batch {
			pos := position(item)
			ok, err := keep(item)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				if limit > 0 && len(out) == limit {
					last := position(out[len(out)-1])
					return out, &last, nil
				}
				out = append(out, item)
			}
			after = &pos
		}
		if len(batch) < batchSize {
			return out, nil, nil
		}
	}
}

// TestCollectBatchKeepMatchesPerItem pages through random lists (0 to 3 fetch batches, random kept
// items) with random limits and compares every page and cursor with the per-item reference.
func TestCollectBatchKeepMatchesPerItem(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := []int{0, 1, 5, batchSize - 1, batchSize, batchSize + 1, 2*batchSize + 17, 3 * batchSize}[trial%8]
		density := rng.IntN(4) // 0: none kept, 3: all kept
		kept := make([]bool, n)
		for i := range kept {
			kept[i] = density == 3 || (density > 0 && rng.IntN(3) < density)
		}
		fetch := func(after *cursorDoc, size int) ([]int, error) {
			from := 0
			if after != nil {
				from = int(after.Micro) + 1
			}
			var out []int
			for i := from; i < n && len(out) < size; i++ {
				out = append(out, i)
			}
			return out, nil
		}
		position := func(i int) cursorDoc { return cursorDoc{Micro: int64(i)} }
		perItem := func(i int) (bool, error) { return kept[i], nil }
		batches := 0
		batchKeep := func(items []int) ([]bool, error) {
			batches++
			out := make([]bool, len(items))
			for j, i := range items {
				out[j] = kept[i]
			}
			return out, nil
		}
		limit := []int{0, 1, 2, 7, 50, batchSize, batchSize + 3}[rng.IntN(7)]
		var after *cursorDoc
		for page := 0; ; page++ {
			got, gotNext, err := collect(context.Background(), limit, fetch, batchKeep, position, after)
			if err != nil {
				t.Fatal(err)
			}
			want, wantNext, _ := collectPerItem(limit, fetch, perItem, position, after)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotNext, wantNext) {
				t.Fatalf("trial %d (n=%d limit=%d) page %d: got %v next %v, want %v next %v", trial, n, limit, page, got, gotNext, want, wantNext)
			}
			if gotNext == nil {
				break
			}
			after = gotNext
		}
		if n > 0 && batches == 0 {
			t.Fatalf("trial %d: keep never called", trial)
		}
	}
}

func TestCollectBatchKeepErrors(t *testing.T) {
	t.Parallel()
	fetch := func(after *cursorDoc, size int) ([]int, error) { return []int{1, 2, 3}, nil }
	position := func(i int) cursorDoc { return cursorDoc{Micro: int64(i)} }
	boom := errors.New("boom")
	if _, _, err := collect(context.Background(), 0, fetch, func([]int) ([]bool, error) { return nil, boom }, position, nil); !errors.Is(err, boom) {
		t.Fatalf("keep error: %v", err)
	}
	if _, _, err := collect(context.Background(), 0, fetch, func([]int) ([]bool, error) { return []bool{true}, nil }, position, nil); err == nil {
		t.Fatal("a verdict count that does not match the batch must fail the list")
	}
	got, _, err := collect(context.Background(), 0, fetch, keepEach(func(i int) (bool, error) { return i != 2, nil }), position, nil)
	if err != nil || fmt.Sprint(got) != "[1 3]" {
		t.Fatalf("keepEach: %v %v", got, err)
	}
	got, _, err = collect(context.Background(), 0, fetch, keepAll[int], position, nil)
	if err != nil || fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("keepAll: %v %v", got, err)
	}
}
