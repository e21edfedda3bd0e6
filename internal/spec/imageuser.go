package spec

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
)

// RootUserProblem says why an image config's User would run a service as root, or cannot be
// shown not to, where its container is locked to runAsNonRoot (FR-004d); "" when it runs as
// another user. The kubelet's own rule: no user is root, and a user given by name is refused
// because the kubelet cannot tell its number; so only a number other than 0 (with any group)
// runs.
func RootUserProblem(user string) string {
	name, _, _ := strings.Cut(user, ":")
	switch uid, err := strconv.ParseUint(name, 10, 32); {
	case user == "":
		return "it has no user, so it runs as root"
	case err != nil && name == "root":
		return fmt.Sprintf("its user %q is root", user)
	case err != nil:
		return fmt.Sprintf("its user %q is a name: the kubelet cannot check that a name is not root and refuses the container; give the user's number", user)
	case uid == 0:
		return fmt.Sprintf("its user %q is root", user)
	}
	return ""
}

// validUser reports whether s is an image config's User: `user`, `uid`, `user:group` or
// `uid:gid`, without spaces or control characters.
func validUser(s string) bool {
	u, g, hasGroup := strings.Cut(s, ":")
	ok := func(p string) bool {
		return p != "" && !strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f || r == ':' })
	}
	return ok(u) && (!hasGroup || ok(g))
}

// serviceImageUser checks at load that a service image does not run as root, when the file
// shows it: the user the file gives, else the config of a rootfs image (slipway writes it: no
// user unless the file gives one) or of an archive (read from it). A base image's config is
// known only once it is pulled: plan checks it (engine). what names the image's source.
func serviceImageUser(img Image) (problem, what string) {
	switch {
	case img.User != "" && !validUser(img.User):
		return "", "" // refused as it is
	case img.User != "":
		return RootUserProblem(img.User), "image.user"
	case img.Rootfs != "":
		return RootUserProblem(""), "the rootfs image"
	case img.Archive != "":
		user, err := archiveUser(img.Archive)
		if err != nil {
			return "", "" // the archive's own error comes at build, where its reader says why
		}
		return RootUserProblem(user), "the archive's config"
	}
	return "", ""
}

// archiveUser reads the User of the image config in a docker-archive (manifest.json) or a tar
// of an OCI image layout (index.json, its linux/amd64 image or else its first, as the build
// takes it). Only headers and the small JSON entries are read: the tar reader seeks over the
// layers.
func archiveUser(file string) (string, error) {
	read := func(name string) ([]byte, error) {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		tr := tar.NewReader(f)
		for {
			h, err := tr.Next()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if path.Clean(h.Name) == name {
				return io.ReadAll(io.LimitReader(tr, 4<<20))
			}
		}
	}
	var cfgName string
	if raw, err := read("manifest.json"); err == nil {
		var m []struct{ Config string }
		if err := json.Unmarshal(raw, &m); err != nil || len(m) == 0 {
			return "", errors.New("manifest.json: no image")
		}
		cfgName = path.Clean(m[0].Config)
	} else {
		type desc struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
			Platform  *struct{ OS, Architecture string }
		}
		var doc struct {
			Manifests []desc `json:"manifests"`
			Config    desc   `json:"config"`
		}
		name := "index.json"
		for depth := 0; depth < 5 && cfgName == ""; depth++ {
			raw, err := read(name)
			if err != nil {
				return "", err
			}
			doc.Manifests, doc.Config = nil, desc{}
			if err := json.Unmarshal(raw, &doc); err != nil {
				return "", fmt.Errorf("%s: %w", name, err)
			}
			next := doc.Config.Digest
			if next == "" && len(doc.Manifests) > 0 {
				next = doc.Manifests[0].Digest
				for _, d := range doc.Manifests {
					if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == "amd64" {
						next = d.Digest
						break
					}
				}
			}
			alg, hex, ok := strings.Cut(next, ":")
			if !ok {
				return "", fmt.Errorf("%s: no manifest or config", name)
			}
			if name = path.Join("blobs", alg, hex); doc.Config.Digest != "" {
				cfgName = name
			}
		}
	}
	if cfgName == "" {
		return "", errors.New("no image config")
	}
	raw, err := read(cfgName)
	if err != nil {
		return "", err
	}
	var cfg struct{ Config struct{ User string } }
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return "", fmt.Errorf("%s: %w", cfgName, err)
	}
	return cfg.Config.User, nil
}
