// Package secretsconf is the configuration of slipway's secrets sidecar (FR-004e) as render
// writes it and the sidecar reads it: where the server is, how to log in, which files to write
// from which keys, and which container a `restart` secret restarts. It holds no secret value, only
// paths and keys, so it travels in the pod template (an environment variable of the sidecar,
// which its startup probe sees too) and a change of it rolls the pods out.
package secretsconf

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Env is the variable of the sidecar container that holds the configuration as JSON.
const Env = "SLIPWAY_SECRETS_CONFIG"

// Paths inside a pod with the sidecar.
const (
	Binary    = "/slipway-secrets"                  // the sidecar's one file in its image
	TokenDir  = "/var/run/secrets/slipway.dev/node" // the projected token, in the sidecar only
	TokenFile = TokenDir + "/token"
)

// File names. The sidecar writes a file through a hidden temporary file in the same directory
// (os.CreateTemp with TempPattern, whose "*" becomes up to 10 digits), then renames it, so
// the longest name it creates is 16 bytes longer than the file's. Every name must fit in
// NAME_MAX (255 bytes on Linux file systems, tmpfs among them), so a file's name may have at
// most MaxFileName bytes: spec refuses a longer one at load.
const (
	nameMax     = 255
	tempDigits  = 10 // the decimal digits of a uint32, what os.CreateTemp puts for "*"
	MaxFileName = nameMax - len(".") - len(tempSuffix) - tempDigits
	tempSuffix  = ".tmp-"
)

// TempPattern is the os.CreateTemp pattern of file name's temporary file.
func TempPattern(name string) string { return "." + name + tempSuffix + "*" }

// Config is what the sidecar does.
type Config struct {
	Address    string `json:"address"`
	CAPEM      string `json:"caPEM,omitempty"`      // the CA of the server, "" for the system's
	CAFetchURL string `json:"caFetchURL,omitempty"` // fetched at start and every 15 minutes
	// CASHA256 pins the CA of CAFetchURL: the lowercase hex SHA-256 of the fetched bytes; a CA
	// with another digest is refused. "" trusts whatever the URL serves.
	CASHA256  string `json:"caSHA256,omitempty"`
	AuthMount string `json:"authMount"`
	Role      string `json:"role"`
	TokenFile string `json:"tokenFile"`
	Dir       string `json:"dir"` // where the files go: the memory volume
	// PollSeconds is how often the secrets are read again.
	PollSeconds int `json:"pollSeconds"`
	// ServiceContainer is the name of the container a changed `restart` secret restarts: the
	// sidecar finds its processes by that container (the kubelet's mounts and the cgroup),
	// never by a command name, so a service started by a script or a wrapper is found and the
	// companion, whatever it runs, is not.
	ServiceContainer string `json:"serviceContainer,omitempty"`
	Files            []File `json:"files"`
}

// EngineDatabase is File.Engine for the static credentials of the database engine.
const EngineDatabase = "database"

// File is one file of the sidecar: a key of a KV v2 secret, or a template over its keys; with
// Engine EngineDatabase, of the static credentials <Mount>/static-creds/<Path> instead
// (username, password).
type File struct {
	Name     string `json:"name"`
	Engine   string `json:"engine,omitempty"` // "" (KV v2) or EngineDatabase
	Mount    string `json:"mount"`
	Path     string `json:"path"`
	Key      string `json:"key,omitempty"`
	Template string `json:"template,omitempty"`
	Encoding string `json:"encoding,omitempty"` // "" or "base64"
	Variable string `json:"variable,omitempty"`
	Restart  bool   `json:"restart,omitempty"`
}

// NeedsRestart reports whether some file stops the service when it changes.
func (c *Config) NeedsRestart() bool {
	for _, f := range c.Files {
		if f.Restart {
			return true
		}
	}
	return false
}

// Encode is the JSON of c, as render puts it in Env.
func (c *Config) Encode() string {
	b, _ := json.Marshal(c) // strings, ints and bools only: Marshal cannot fail
	return string(b)
}

// FromEnv reads the configuration from Env.
func FromEnv() (*Config, error) {
	raw, ok := os.LookupEnv(Env)
	if !ok {
		return nil, fmt.Errorf("configuration: %s is not set", Env)
	}
	return Decode([]byte(raw))
}

// Decode reads a configuration and checks that it can be run.
func Decode(raw []byte) (*Config, error) {
	var c Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	switch {
	case c.Address == "":
		return nil, errors.New("configuration: no address")
	case c.Dir == "":
		return nil, errors.New("configuration: no dir")
	case len(c.Files) == 0:
		return nil, errors.New("configuration: no files")
	case c.NeedsRestart() && c.ServiceContainer == "":
		return nil, errors.New("configuration: a restart file needs serviceContainer, the container it restarts")
	}
	if c.PollSeconds <= 0 {
		c.PollSeconds = 10
	}
	return &c, nil
}
