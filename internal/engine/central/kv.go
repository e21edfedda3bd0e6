package central

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strings"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// The KV entries: one KV v2 secret each at <kvMount>/slipway/<identity>/<entry>, field value,
// the deployment in its custom metadata (written before the value, so an entry is never
// without its mark).

func (l *Lane) kvPath(key string) string { return spec.CentralKVPath(l.Identity, key) }

func (l *Lane) metaPath(path string) string { return l.Central.KVMount + "/metadata/" + path }
func (l *Lane) dataPath(path string) string { return l.Central.KVMount + "/data/" + path }

// planKV compares each entry: a missing one is made; a generated one is never made again; one
// from a file or variable is compared with its value (read, never shown).
func (l *Lane) planKV(ctx context.Context, p *Planned) error {
	for _, k := range l.Central.KV {
		path := l.kvPath(k.Key)
		meta, err := l.Bao.Read(ctx, l.metaPath(path))
		if err != nil {
			return err
		}
		if meta != nil {
			if owner := ownerOf(meta); owner != l.Identity {
				return &ConflictError{What: "KV entry", Name: l.Central.KVMount + "/" + path, Holder: markText(owner)}
			}
		}
		var want string
		if !k.Generated() {
			if want, err = l.Value(k); err != nil {
				return err
			}
		}
		have, exists, err := l.current(ctx, path, meta)
		if err != nil {
			return err
		}
		switch {
		case !exists:
			p.add(plan.CentralKV, k.Key, l.Central.KVMount+"/"+path, plan.Create, sourceText(k))
		case !k.Generated() && have != want:
			p.add(plan.CentralKV, k.Key, l.Central.KVMount+"/"+path, plan.Update, "the value of "+sourceText(k)+" changed")
		}
	}
	keys, err := l.Bao.List(ctx, l.metaPath("slipway/"+l.Identity))
	if err != nil {
		return err
	}
	for _, key := range keys {
		if strings.HasSuffix(key, "/") || l.Central.Entry(key) != nil {
			continue
		}
		path := l.kvPath(key)
		meta, err := l.Bao.Read(ctx, l.metaPath(path))
		if err != nil {
			return err
		}
		if ownerOf(meta) == l.Identity {
			p.add(plan.CentralKV, "", l.Central.KVMount+"/"+path, plan.Delete, "no longer in the file")
		}
	}
	return nil
}

// current reads the entry's value when it has a live version; exists is false for none (or
// one deleted), when the entry is (re)made.
func (l *Lane) current(ctx context.Context, path string, meta map[string]any) (value string, exists bool, err error) {
	if meta == nil || seconds(meta["current_version"]) <= 0 {
		return "", false, nil
	}
	d, err := l.Bao.Read(ctx, l.dataPath(path))
	if err != nil || d == nil {
		return "", false, err
	}
	data, _ := d["data"].(map[string]any)
	v, ok := data[spec.CentralKVField].(string)
	return v, ok, nil
}

func ownerOf(meta map[string]any) string {
	cm, _ := meta["custom_metadata"].(map[string]any)
	return str(cm[spec.CentralMetaKey])
}

func markText(owner string) string {
	if owner == "" {
		return ""
	}
	return spec.CentralOwner(owner)
}

func sourceText(k spec.CentralKV) string {
	switch {
	case k.File != "":
		return "file " + k.File
	case k.Env != "":
		return "variable " + k.Env
	}
	return fmt.Sprintf("generated, %d characters", k.Length)
}

// applyKV makes or updates an entry: its mark first, then the value; a generated value only
// with check-and-set 0, so that no apply replaces one made before.
func (l *Lane) applyKV(ctx context.Context, c plan.CentralChange) error {
	k := l.Central.Entry(c.Key)
	if k == nil {
		return fmt.Errorf("central: KV entry %s is not in the file", c.Key)
	}
	path := l.kvPath(k.Key)
	if err := l.Bao.Write(ctx, l.metaPath(path), map[string]any{
		"custom_metadata": map[string]any{spec.CentralMetaKey: l.Identity}}); err != nil {
		return err
	}
	var v string
	var err error
	opts := map[string]any{}
	if k.Generated() {
		v, err = l.Random(k.Length, k.Alphabet)
		opts["cas"] = 0
	} else {
		v, err = l.Value(*k)
	}
	if err != nil {
		return err
	}
	err = l.Bao.Write(ctx, l.dataPath(path), map[string]any{"data": map[string]any{spec.CentralKVField: v}, "options": opts})
	if err != nil && k.Generated() && strings.Contains(err.Error(), "check-and-set") {
		return nil // made by a run before this one: kept
	}
	return err
}

// Value reads a KV entry's value from its file or variable; errors name them, never a value.
func Value(k spec.CentralKV) (string, error) {
	if k.Env != "" {
		v, ok := os.LookupEnv(k.Env)
		if !ok {
			return "", fmt.Errorf("central: kv %s: variable %s is not set", k.Key, k.Env)
		}
		return v, nil
	}
	b, err := os.ReadFile(k.File)
	if err != nil {
		return "", fmt.Errorf("central: kv %s: %w", k.Key, err)
	}
	return string(b), nil
}

// Random is a value of length characters drawn uniformly from alphabet.
func Random(length int, alphabet string) (string, error) {
	rs := []rune(alphabet)
	slices.Sort(rs)
	rs = slices.Compact(rs)
	if len(rs) < 2 {
		return "", errors.New("central: an alphabet needs two characters")
	}
	out := make([]rune, length)
	for i := range out {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(rs))))
		if err != nil {
			return "", err
		}
		out[i] = rs[n.Int64()]
	}
	return string(out), nil
}
