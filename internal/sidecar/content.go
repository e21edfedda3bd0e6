package sidecar

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"text/template"

	"slipway.dev/slipway/internal/secretsconf"
)

// content is the bytes of file f from the data of its secret. Errors name the file and the key,
// never a value.
func content(f secretsconf.File, data map[string]any) ([]byte, error) {
	if f.Template != "" {
		t, err := template.New(f.Name).Option("missingkey=error").Parse(f.Template)
		if err != nil {
			return nil, fmt.Errorf("file %s: template: %w", f.Name, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return nil, templateError(f.Name, err)
		}
		return b.Bytes(), nil
	}
	raw, ok := data[f.Key]
	if !ok {
		return nil, fmt.Errorf("file %s: secret %s/%s has no key %s", f.Name, f.Mount, f.Path, f.Key)
	}
	v, ok := raw.(string)
	if !ok {
		// A KV value written as JSON (a number, a boolean): its text.
		v = fmt.Sprint(raw)
	}
	if f.Variable != "" {
		val, found := variable(v, f.Variable)
		if !found {
			return nil, fmt.Errorf("file %s: key %s of %s/%s has no variable %s", f.Name, f.Key, f.Mount, f.Path, f.Variable)
		}
		v = val
	}
	if f.Encoding == "base64" {
		b, err := decodeBase64(v)
		if err != nil {
			// The error of encoding/base64 gives an offset only, never the data.
			return nil, fmt.Errorf("file %s: key %s of %s/%s is not base64: %w", f.Name, f.Key, f.Mount, f.Path, err)
		}
		return b, nil
	}
	return []byte(v), nil
}

// decodeBase64 reads standard base64, padded or not, ignoring line breaks.
func decodeBase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' {
			return -1
		}
		return r
	}, s)
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}

// variable is the value of NAME in env-file text: `NAME=value` lines, optionally `export NAME=…`,
// the value unquoted from "…" or '…'; comments and blank lines skipped.
func variable(text, name string) (string, bool) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") || strings.TrimSpace(k) != name {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		return v, true
	}
	return "", false
}
