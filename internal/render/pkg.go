package render

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The first line of every file WritePackage writes: how a later render tells its own files
// from the operator's (issue 35).
const (
	kustomizationHeader = "# Written by slipway render; `kubectl apply -k` this directory. Do not edit: render again.\n"
	objectHeader        = "# Written by slipway render. Do not edit: render again.\n"
)

// WritePackage writes objs as a kustomize package into dir (SPEC §9): kustomization.yaml
// listing one file per object in apply order, each file headed by a comment that says slipway
// wrote it. The same objects give byte-identical files.
//
// Only slipway's own files are replaced or removed: a file it wrote (its header), or one the
// previous kustomization.yaml (slipway's) listed, written by a slipway that set no header on
// object files. A file of an earlier render whose object is gone (a route too) is removed; a
// file of the operator's in the way of one to write is refused before anything is written;
// every other file is left alone.
func WritePackage(dir string, objs []Object) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("package %s: %w", dir, err)
	}
	docs, err := marshalAll(objs)
	if err != nil {
		return fmt.Errorf("package %s: %w", dir, err)
	}
	own, err := ownFiles(dir)
	if err != nil {
		return fmt.Errorf("package %s: %w", dir, err)
	}
	files := make(map[string]bool, len(objs)+1)
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = FileName(o)
		if files[names[i]] {
			return fmt.Errorf("package %s: two objects would be written to %s", dir, names[i])
		}
		files[names[i]] = true
	}
	files["kustomization.yaml"] = true
	if err := refuseForeign(dir, files, own); err != nil {
		return err
	}
	var k bytes.Buffer
	k.WriteString(kustomizationHeader)
	// fifo keeps slipway's apply order (policies before Deployments, FR-010) instead of
	// kustomize's own order by kind.
	k.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nsortOptions:\n  order: fifo\nresources:\n")
	for i, name := range names {
		if err := writeIfChanged(filepath.Join(dir, name), append([]byte(objectHeader), docs[i]...)); err != nil {
			return fmt.Errorf("package %s: %w", dir, err)
		}
		k.WriteString("- " + name + "\n")
	}
	if err := writeIfChanged(filepath.Join(dir, "kustomization.yaml"), k.Bytes()); err != nil {
		return fmt.Errorf("package %s: %w", dir, err)
	}
	for _, name := range slices.Sorted(maps.Keys(own)) {
		if files[name] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("package %s: %w", dir, err)
		}
	}
	return nil
}

// ownFiles are the files of dir that slipway wrote: those with its header, and those the
// previous kustomization.yaml listed when slipway wrote it (object files of a render before
// headers).
func ownFiles(dir string) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	own := map[string]bool{}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		first, err := firstLine(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		switch {
		case first == objectHeader:
			own[e.Name()] = true
		case first == kustomizationHeader && e.Name() == "kustomization.yaml":
			own[e.Name()] = true
			listed, err := listedResources(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			for _, n := range listed {
				if fi, err := os.Lstat(filepath.Join(dir, n)); err == nil && fi.Mode().IsRegular() {
					own[n] = true
				}
			}
		}
	}
	return own, nil
}

// refuseForeign fails when a file to write exists and is not slipway's: it is the operator's.
func refuseForeign(dir string, files, own map[string]bool) error {
	var theirs []string
	for _, n := range slices.Sorted(maps.Keys(files)) {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil && !own[n] {
			theirs = append(theirs, n)
		}
	}
	if len(theirs) == 0 {
		return nil
	}
	verb := "was"
	if len(theirs) > 1 {
		verb = "were"
	}
	return fmt.Errorf("package %s: %s %s not written by slipway render (no header of its own): render will not replace it; move it away or render into another directory", dir, strings.Join(theirs, ", "), verb)
}

// firstLine is the first line of a file with its newline, "" for an empty one.
func firstLine(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return "", nil
	}
	return line, nil
}

// listedResources are the file names of `resources:` in a kustomization.yaml slipway wrote:
// `- name` lines, each a plain file name of the directory.
func listedResources(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case line == "resources:":
			in = true
		case in && strings.HasPrefix(line, "- "):
			n := strings.TrimPrefix(line, "- ")
			if n == filepath.Base(n) && n != "." && n != ".." && strings.HasSuffix(n, ".yaml") && n != "kustomization.yaml" {
				out = append(out, n)
			}
		default:
			in = false
		}
	}
	return out, nil
}
