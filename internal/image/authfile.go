package image

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/docker/cli/cli/config/configfile"
)

// readAuthFile reads the docker config file at path; nil (no error) when the file is missing
// and setting is "" (the default path, not one the operator named). setting names the flag
// or variable that set path, for the messages. No message quotes the file: it holds
// credentials.
func readAuthFile(path, setting string) (*configfile.ConfigFile, error) {
	subject := "registry auth file " + path
	if setting != "" {
		subject += " (" + setting + ")"
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && setting == "":
		return nil, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s does not exist", subject)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", subject, err)
	case fi.IsDir():
		return nil, fmt.Errorf("%s is a directory, not a docker config file", subject)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", subject, err)
	}
	if err := checkAuths(data); err != nil {
		return nil, fmt.Errorf("%s: %w", subject, err)
	}
	cf := configfile.New(path)
	if err := cf.LoadFromReader(bytes.NewReader(data)); err != nil {
		// The parser's message may quote the file; a credential must not reach the output.
		return nil, fmt.Errorf("%s: not a docker config file", subject)
	}
	return cf, nil
}

// checkAuths says what is wrong with the file's JSON or with an `auth` value (base64 of
// user:password) by position and registry, never by content.
func checkAuths(data []byte) error {
	var doc struct {
		Auths map[string]struct {
			Auth string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return fmt.Errorf("not a docker config file: invalid JSON at byte %d", se.Offset)
		case errors.As(err, &te):
			return fmt.Errorf("not a docker config file: %s is a JSON %s, not what docker writes there", jsonField(te.Field), te.Value)
		}
		return errors.New("not a docker config file")
	}
	registries := make([]string, 0, len(doc.Auths))
	for r := range doc.Auths {
		registries = append(registries, r)
	}
	slices.Sort(registries)
	for _, r := range registries {
		a := doc.Auths[r].Auth
		if a == "" {
			continue
		}
		dec, err := base64.StdEncoding.DecodeString(a)
		if err != nil {
			return fmt.Errorf("auths[%q].auth is not base64 (of user:password)", r)
		}
		if user, _, ok := strings.Cut(string(dec), ":"); !ok || user == "" {
			return fmt.Errorf("auths[%q].auth does not decode to user:password", r)
		}
	}
	return nil
}

func jsonField(f string) string {
	if f == "" {
		return "the document"
	}
	return f
}
