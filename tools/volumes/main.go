// Command volumes is the dev environment's volume reaper: the dev StorageClass's volumes are
// hostPath directories under one directory, which the real node's kubelet creates when a pod
// mounts its claim, and the StorageClass's reclaim policy is Delete. When a PersistentVolume of
// that class is deleted (its claim was), the reaper removes its directory, so a deleted claim's
// data is gone from disk as it would be on a cluster with a real provisioner.
//
// It watches the PersistentVolumes through kubectl (the dev cluster's own, so this program
// needs nothing but the standard library), and at start and after each broken watch it sweeps
// the directory for entries no volume names (deleted while it was not watching).
//
// Usage: volumes -kubectl PATH -kubeconfig PATH -dir DIR -class NAME
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

type pv struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		StorageClassName string `json:"storageClassName"`
		HostPath         *struct {
			Path string `json:"path"`
		} `json:"hostPath"`
	} `json:"spec"`
}

type reaper struct {
	kubectl, kubeconfig, dir, class string
}

func main() {
	var r reaper
	flag.StringVar(&r.kubectl, "kubectl", "kubectl", "kubectl to watch with")
	flag.StringVar(&r.kubeconfig, "kubeconfig", "", "kubeconfig of the dev cluster")
	flag.StringVar(&r.dir, "dir", "", "directory of the StorageClass's volumes")
	flag.StringVar(&r.class, "class", "", "StorageClass whose volumes are reaped")
	flag.Parse()
	if r.dir == "" || r.class == "" {
		log.Fatal("volumes: -dir and -class are required")
	}
	log.SetFlags(log.LstdFlags | log.LUTC)
	for {
		if err := r.sweep(); err != nil {
			log.Printf("sweep: %v", err)
		}
		if err := r.watch(); err != nil {
			log.Printf("watch: %v", err)
		}
		time.Sleep(time.Second)
	}
}

// path is the directory of v when it is one of the reaped volumes.
func (r reaper) path(v pv) (string, bool) {
	if v.Spec.StorageClassName != r.class || v.Spec.HostPath == nil {
		return "", false
	}
	p := filepath.Clean(v.Spec.HostPath.Path)
	return p, filepath.Dir(p) == filepath.Clean(r.dir)
}

func (r reaper) kubectlCmd(args ...string) *exec.Cmd {
	return exec.Command(r.kubectl, append([]string{"--kubeconfig", r.kubeconfig}, args...)...)
}

// watch removes the directory of each reaped volume deleted, until the watch ends.
func (r reaper) watch() error {
	cmd := r.kubectlCmd("get", "pv", "--watch-only", "--output-watch-events", "-o", "json")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	dec := json.NewDecoder(bufio.NewReader(out))
	for {
		var ev struct {
			Type   string `json:"type"`
			Object pv     `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if err == io.EOF {
				return fmt.Errorf("watch ended")
			}
			return err
		}
		if p, ok := r.path(ev.Object); ok && ev.Type == "DELETED" {
			r.remove(p, "volume "+ev.Object.Metadata.Name+" deleted")
		}
	}
}

// sweep removes the entries of the directory that no volume names, once a minute old (a
// volume's directory appears after its volume, when a pod first mounts it).
func (r reaper) sweep() error {
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	out, err := r.kubectlCmd("get", "pv", "-o", "json").Output()
	if err != nil {
		return err
	}
	var list struct {
		Items []pv `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, v := range list.Items {
		if p, ok := r.path(v); ok {
			keep[p] = true
		}
	}
	for _, en := range entries {
		p := filepath.Join(r.dir, en.Name())
		info, err := en.Info()
		if keep[p] || err != nil || time.Since(info.ModTime()) < time.Minute || !strings.HasPrefix(en.Name(), "pvc-") {
			continue
		}
		r.remove(p, "no volume names it")
	}
	return nil
}

func (r reaper) remove(p, why string) {
	if err := os.RemoveAll(p); err != nil {
		log.Printf("remove %s (%s): %v", p, why, err)
		return
	}
	log.Printf("removed %s (%s)", p, why)
}
