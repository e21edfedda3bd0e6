package main

import (
	"os"
	"strconv"
	"testing"
)

func TestCPUText(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]float64
		want string
	}{
		{"unknown", nil, "—"},
		{"largest first", map[string]float64{"registry": 0.35, "kube-apiserver": 0.21}, "registry 0.35, kube-apiserver 0.21"},
		{"the rest summed", map[string]float64{"a": 4, "b": 3, "c": 2, "d": 0.5, "e": 0.25}, "a 4.00, b 3.00, c 2.00, others 0.75"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cpuText(tc.in); got != tc.want {
				t.Errorf("cpuText = %q, want %q", got, tc.want)
			}
		})
	}
}

// The bench's own process has spent some CPU by now, read from /proc as a cluster process's is.
func TestProcessCPU(t *testing.T) {
	cpu, ok := processCPU(strconv.Itoa(os.Getpid()))
	if !ok || cpu < 0 {
		t.Fatalf("processCPU(self) = %v, %v", cpu, ok)
	}
	if _, ok := processCPU("0"); ok {
		t.Errorf("processCPU(0) ok, want not")
	}
	if got := cpuSince(map[string]float64{"a": 1, "gone": 2}, map[string]float64{"a": 1.5, "new": 3}); len(got) != 1 || got["a"] != 0.5 {
		t.Errorf("cpuSince = %v, want a: 0.5 only", got)
	}
}
