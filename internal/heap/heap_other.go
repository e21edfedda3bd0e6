//go:build !linux

package heap

// PreferHugePages does nothing where the kernel is not Linux.
func PreferHugePages(size int) bool { return false }
