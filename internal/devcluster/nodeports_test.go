package devcluster

import (
	"strconv"
	"strings"
	"testing"
)

// Issue 17: a published node takes two node ports (its Service is a LoadBalancer with
// externalTrafficPolicy Local); the scale bench's largest group has 2,000 nodes, the default
// range (30000-32767) held 1,384.
func TestNodePortRangeHoldsTheScaleBench(t *testing.T) {
	lo, hi, ok := strings.Cut(NodePortRange, "-")
	if !ok {
		t.Fatalf("NodePortRange %q is not low-high", NodePortRange)
	}
	l, err1 := strconv.Atoi(lo)
	h, err2 := strconv.Atoi(hi)
	if err1 != nil || err2 != nil || l < 1024 || h > 65535 {
		t.Fatalf("NodePortRange %q: not a range of ports", NodePortRange)
	}
	if n := h - l + 1; n < 2*2000 {
		t.Errorf("NodePortRange %q holds %d ports, want at least 4,000 (2,000 published nodes)", NodePortRange, n)
	}
}
