package devcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
)

// A cold dev up builds its tools one after another, each `go build` on both cores, and each
// first downloads its modules (Kubernetes': 165 modules, 595 MB, 75 s at a load average of 25).
// A download waits on the network, not the cores: prefetch fetches the modules of the tools
// still to build, one tool at a time in build order, while the first ones compile, so a
// build finds its modules in the module cache.

// toolsToBuild are the tools a dev up with opts will build, in the order it builds them,
// whose binaries are not all in their caches.
func toolsToBuild(opts Options) []tool {
	var ts []tool
	if !opts.Core {
		for _, t := range tools {
			if t.own && !t.node && !t.spire && !t.secrets && !t.central {
				ts = append(ts, t)
			}
		}
	}
	if opts.Spire {
		ts = append(ts, spireTools...)
	}
	if opts.Secrets {
		ts = append(ts, vaultTool)
	}
	if !opts.NoRealNode {
		ts = append(ts, nodeTools...)
	}
	for _, t := range tools {
		if !t.own {
			ts = append(ts, t)
		}
	}
	var missing []tool
	for _, t := range ts {
		cache, err := toolCacheDir(t)
		if err != nil {
			continue
		}
		for _, b := range t.bins {
			if _, err := os.Stat(filepath.Join(cache, "bin", b)); err != nil {
				missing = append(missing, t)
				break
			}
		}
	}
	return missing
}

// prefetch downloads, in the background, the modules of ts after the first (whose build
// downloads its own at once), until ctx ends; the channel is closed once it has stopped. It
// lists each tool's packages in a module directory of its own (<cache base>/prefetch/<module>),
// never the one a build uses. A failure is left to the build, whose own list reports it.
func prefetch(ctx context.Context, goBin string, ts []tool) <-chan struct{} {
	done := make(chan struct{})
	base, err := cacheBase()
	if len(ts) < 2 || err != nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		for _, t := range ts[1:] {
			dir := filepath.Join(base, "prefetch", t.module)
			if ctx.Err() != nil || writeModule(dir, t) != nil {
				continue
			}
			if t.prepare != nil && t.prepare(ctx, dir) != nil {
				continue
			}
			cmd := exec.CommandContext(ctx, goBin, append([]string{"list", "-deps"}, t.pkgs...)...)
			cmd.Dir, cmd.Env = dir, buildEnv(t)
			_ = cmd.Run()
		}
	}()
	return done
}

// startPrefetch starts prefetch for what a dev up with opts will build; the returned func
// stops it. Without go on PATH it does nothing: the build says what is missing.
func startPrefetch(ctx context.Context, opts Options) (stop func()) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := prefetch(ctx, goBin, toolsToBuild(opts))
	return func() { cancel(); <-done }
}
