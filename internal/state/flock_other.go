//go:build !unix

package state

// flockDir is a no-op where flock(2) is missing: the state lock still keeps writers apart.
func flockDir(string) (func(), error) { return func() {}, nil }
