package heap

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestPreferHugePages: where the kernel grants huge pages only when asked, the heap allocated
// after PreferHugePages lies in memory that asked for them (VmFlags hg) and is backed by some;
// elsewhere it asks nothing.
func TestPreferHugePages(t *testing.T) {
	mode, _ := os.ReadFile(thpModeFile)
	madvise := bytes.Contains(mode, []byte("[madvise]"))
	if got := PreferHugePages(64 << 20); got != madvise {
		t.Fatalf("PreferHugePages = %v with the kernel's mode %q", got, strings.TrimSpace(string(mode)))
	}
	if !madvise {
		t.Logf("kernel mode %q: nothing to ask, nothing asked", strings.TrimSpace(string(mode)))
		return
	}
	b := make([]byte, 32<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	flags, huge := mappingOf(t, addr)
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("the heap's mapping at %#x has VmFlags %q, without hg", addr, flags)
	}
	if huge == 0 {
		t.Errorf("the heap's mapping at %#x holds no huge page after 32 MiB were touched", addr)
	}
}

// mappingOf reads /proc/self/smaps for the mapping holding addr: its VmFlags and its
// AnonHugePages in kB.
func mappingOf(t *testing.T, addr uint64) (flags string, hugeKB int) {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			lo, hi, _ := strings.Cut(f[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && a <= addr && addr < b
			continue
		}
		if !in {
			continue
		}
		switch {
		case strings.HasPrefix(l, "AnonHugePages:") && len(f) >= 2:
			hugeKB, _ = strconv.Atoi(f[1])
		case strings.HasPrefix(l, "VmFlags:"):
			return strings.TrimSpace(strings.TrimPrefix(l, "VmFlags:")), hugeKB
		}
	}
	t.Fatalf("no mapping of /proc/self/smaps holds %#x", addr)
	return "", 0
}
