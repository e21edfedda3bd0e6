package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"compress/gzip"
	"io"
)

func TestProfilesFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{
		envCPUProfile: filepath.Join(dir, "cpu.pprof"),
		envMemProfile: filepath.Join(dir, "heap.pprof"),
		envTrace:      filepath.Join(dir, "run.trace"),
	}
	stop, err := startProfiles(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	sink := make([][]byte, 0, 64)
	for range 64 {
		sink = append(sink, make([]byte, 64<<10))
	}
	_ = sink
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// An execution trace opens with its header, "go 1.N trace".
	if data, err := os.ReadFile(env[envTrace]); err != nil || !strings.HasPrefix(string(data), "go 1.") {
		t.Errorf("%s is no execution trace (%d bytes, %v)", env[envTrace], len(data), err)
	}
	// A pprof profile is a gzipped protocol buffer naming its sample types as strings.
	for _, tc := range []struct{ name, path, sampleType string }{
		{"cpu", env[envCPUProfile], "nanoseconds"},
		{"heap", env[envMemProfile], "inuse_space"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Open(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatalf("%s is not a gzipped profile: %v", tc.path, err)
			}
			data, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), tc.sampleType) {
				t.Errorf("%s (%d bytes) names no %s samples", tc.path, len(data), tc.sampleType)
			}
		})
	}
}

func TestNoProfilesWithoutEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	stop, err := startProfiles(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written without the environment: %v", entries)
	}
}

// The peak profile is written while the run holds its most memory, not only at its end.
func TestPeakProfileWrittenWhileHeapGrows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "peak.pprof")
	stop := watchPeak(path, 10*time.Millisecond)
	held := make([][]byte, 0, 32)
	for range 32 {
		held = append(held, make([]byte, 1<<20))
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no peak profile at %s while 32 MiB were held", path)
		}
		time.Sleep(10 * time.Millisecond) // polling for the file, with a deadline
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(held)
}
