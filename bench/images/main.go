// Command images measures slipway's image build and push against crane's (SPEC §4, issue 4).
//
// It builds crane v0.22.1 into a cache directory, generates a deterministic rootfs of about
// 200 MB (many small files, a few large ones) and its tar, then, for each round, times
//
//	slipway: build the rootfs into an image and push it (library calls, as `images push` does)
//	crane:   crane append -f rootfs.tar -t REG/…:tag
//
// into fresh repositories of the same registry, side by side, and reports the ratio
// slipway/crane. Finally it pushes the unchanged image again through a counting proxy and
// reports the number of requests. Run it against the dev registry:
//
//	go run ./bench/images -registry "$K8S_REGISTRY"
//
// Without -registry it serves go-containerregistry's in-memory registry in process.
package main

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	mrand "math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/image"
)

const craneModule = "github.com/google/go-containerregistry/cmd/crane@v0.22.1"

func main() {
	home, _ := os.UserHomeDir()
	reg := flag.String("registry", os.Getenv("K8S_REGISTRY"), "registry host:port (default $K8S_REGISTRY; empty: an in-process registry)")
	cache := flag.String("cache", filepath.Join(home, ".cache", "slipway", "bench"), "directory for crane and the generated rootfs")
	sizeMB := flag.Int("size", 200, "rootfs size in MB")
	rounds := flag.Int("rounds", 3, "timed rounds of each tool")
	flag.Parse()
	log.SetFlags(0)

	if *reg == "" {
		s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		defer s.Close()
		*reg = strings.TrimPrefix(s.URL, "http://")
		log.Printf("registry: in-process go-containerregistry pkg/registry at %s", *reg)
	} else {
		log.Printf("registry: %s", *reg)
	}
	crane, err := buildCrane(filepath.Join(*cache, "bin"))
	if err != nil {
		log.Fatal(err)
	}
	rootfs := filepath.Join(*cache, fmt.Sprintf("rootfs-%dMB", *sizeMB))
	files, bytes, err := generate(rootfs, int64(*sizeMB)*1e6)
	if err != nil {
		log.Fatal(err)
	}
	tarPath := rootfs + ".tar"
	if err := writeTar(rootfs, tarPath); err != nil {
		log.Fatal(err)
	}
	log.Printf("rootfs: %s, %d files, %.1f MB; tar %s", rootfs, files, float64(bytes)/1e6, tarPath)

	ctx := context.Background()
	opts := image.Options{Registry: *reg}
	run := randHex()
	var ratios []float64
	var lastRef string
	fmt.Printf("%-6s %12s %12s %8s\n", "round", "slipway_s", "crane_s", "ratio")
	for i := range *rounds {
		ns := fmt.Sprintf("bench-%s-%d", run, i)
		// slipway: a new builder and publisher each round, as a new process would have.
		t0 := time.Now()
		pub, err := image.NewPublisher(opts)
		if err != nil {
			log.Fatal(err)
		}
		res, err := image.Push(ctx, image.NewBuilder(opts), pub, image.Job{
			Name: "node", Repository: image.Repository(*reg, ns, "slipway"), Source: image.Source{Rootfs: rootfs},
		}, nil)
		if err != nil {
			log.Fatal(err)
		}
		slip := time.Since(t0)
		lastRef = res.Tag

		t0 = time.Now()
		cmd := exec.Command(crane, "append", "--insecure", "-f", tarPath, "-t", image.Repository(*reg, ns, "crane")+":latest")
		if out, err := cmd.CombinedOutput(); err != nil {
			log.Fatalf("crane append: %v\n%s", err, out)
		}
		cr := time.Since(t0)
		ratio := slip.Seconds() / cr.Seconds()
		ratios = append(ratios, ratio)
		fmt.Printf("%-6d %12.2f %12.2f %8.2f\n", i+1, slip.Seconds(), cr.Seconds(), ratio)
	}
	slices.Sort(ratios)
	fmt.Printf("median ratio slipway/crane: %.2f (target <= 1.0)\n", ratios[len(ratios)/2])

	// The unchanged re-push, through a proxy that counts what reaches the registry.
	proxy, err := devtest.RegistryProxy(*reg)
	if err != nil {
		log.Fatal(err)
	}
	defer proxy.Close()
	popts := image.Options{Registry: proxy.Host()}
	pub, err := image.NewPublisher(popts)
	if err != nil {
		log.Fatal(err)
	}
	repo := image.Repository(popts.Registry, strings.Split(strings.TrimPrefix(lastRef, *reg+"/"), "/")[0], "slipway")
	t0 := time.Now()
	res, err := image.Push(ctx, image.NewBuilder(popts), pub, image.Job{Name: "node", Repository: repo, Source: image.Source{Rootfs: rootfs}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	seen := proxy.Requests()
	fmt.Printf("unchanged re-push: %d requests %v, pushed=%v, %.2f s (target <= 5 requests)\n", len(seen), seen, res.Pushed, time.Since(t0).Seconds())
}

func randHex() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// buildCrane installs crane at the pinned version into dir once.
func buildCrane(dir string) (string, error) {
	bin := filepath.Join(dir, "crane")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	log.Printf("building %s into %s", craneModule, dir)
	cmd := exec.Command("go", "install", craneModule)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-trimpath")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go install %s: %w", craneModule, err)
	}
	return bin, nil
}

// generate writes a deterministic tree of about total bytes under dir, once: 60% in many
// small files of text-like content (which compresses as configuration and code do), 40% in
// four large files of which half is random (as compressed or binary data is).
func generate(dir string, total int64) (files int, size int64, err error) {
	stamp := filepath.Join(dir, ".complete")
	r := mrand.New(mrand.NewPCG(1, 2))
	words := []string{"systemd", "service", "network", "Unit", "ExecStart=/usr/bin/", "true", "false", "# comment", "\n", "=", "port", "listen", "0.0.0.0", "root", "/var/lib/", "lib", ".so.1", "\t"}
	small := total * 6 / 10
	type file struct {
		path string
		data []byte
	}
	emit := func(f file) error {
		files++
		size += int64(len(f.data))
		if _, err := os.Stat(stamp); err == nil {
			return nil // already generated: content is the same by construction
		}
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return err
		}
		return os.WriteFile(f.path, f.data, 0o644)
	}
	var written int64
	for i := 0; written < small; i++ {
		n := 512 + r.IntN(16<<10)
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
		}
		p := filepath.Join(dir, "usr", fmt.Sprintf("d%02d", i%50), fmt.Sprintf("s%03d", (i/50)%100), fmt.Sprintf("f%06d.conf", i))
		if err := emit(file{p, []byte(b.String())}); err != nil {
			return 0, 0, err
		}
		written += int64(n)
	}
	large := (total - written) / 4
	for i := range 4 {
		data := make([]byte, large)
		for j := int64(0); j < large/2; j += 8 {
			v := r.Uint64()
			for k := int64(0); k < 8 && j+k < large/2; k++ {
				data[j+k] = byte(v >> (8 * k))
			}
		}
		for j := large / 2; j < large; j++ {
			data[j] = byte("0123456789abcdef"[(j/64+int64(i))%16])
		}
		if err := emit(file{filepath.Join(dir, "opt", fmt.Sprintf("blob%d.bin", i)), data}); err != nil {
			return 0, 0, err
		}
	}
	if _, err := os.Stat(stamp); err != nil {
		if err := os.WriteFile(stamp, nil, 0o644); err != nil {
			return 0, 0, err
		}
	}
	return files, size, nil
}

// writeTar writes dir as the tar crane appends, once.
func writeTar(dir, out string) error {
	if _, err := os.Stat(out); err == nil {
		return nil
	}
	f, err := os.Create(out + ".tmp")
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		f.Close()
		return err
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}
