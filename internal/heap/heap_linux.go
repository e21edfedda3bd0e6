package heap

import (
	"bytes"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// thpModeFile says how the kernel hands out transparent huge pages: "[madvise]" when only to
// memory that asks.
const thpModeFile = "/sys/kernel/mm/transparent_hugepage/enabled"

const hugePage = 2 << 20

// PreferHugePages has the next size bytes the heap grows into backed by huge pages, where the
// kernel grants them only when asked; it reports whether it asked. It makes the runtime map
// that much heap at once (one allocation, never touched, so it costs no memory), marks the
// mapping MADV_HUGEPAGE, and frees it: the allocations that follow reuse those pages, and
// the first touch of each 2 MiB is one fault instead of 512. A mapping the runtime makes
// later is not marked: size should hold the process's peak heap. The memory the process uses
// grows by at most the unused part of the 2 MiB pages it touches.
func PreferHugePages(size int) bool {
	mode, err := os.ReadFile(thpModeFile)
	if err != nil || !bytes.Contains(mode, []byte("[madvise]")) {
		return false // "always": the heap has them already; "never", or no such kernel: none to ask
	}
	b := make([]byte, size)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b))) &^ (hugePage - 1)
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, uintptr(size), syscall.MADV_HUGEPAGE)
	runtime.KeepAlive(b)
	runtime.GC() // frees the allocation now, before the heap grows past it
	return errno == 0
}
