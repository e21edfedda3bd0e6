// Package parallel runs a function over items a bounded number at a time: the one helper the
// engine's steps and the image pushes share (issue 13).
package parallel

import "sync"

// ForEach runs f for every item, at most n at a time (at least one), and returns once every
// call has returned. Items start in order. f decides what a cancelled context means for it:
// ForEach starts every item.
func ForEach[T any](n int, items []T, f func(T)) {
	sem := make(chan struct{}, max(n, 1))
	var wg sync.WaitGroup
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(it)
		})
	}
	wg.Wait()
}

// Indexes returns 0, 1, …, n-1: the items of a ForEach that fills slices by position.
func Indexes(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}
