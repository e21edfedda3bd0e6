package devcluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// stockStages are the stage files of the kwok module that the dev cluster runs with: nodes
// become Ready and keep a Lease (without the heartbeat the node controller marks them NotReady
// after 40 s), pods become Ready and go away when deleted, released volumes go. Claims get
// their volumes from provisionStage instead of the stock pvc-provision and pv-bind.
var stockStages = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"pod/fast/pod-ready.yaml",
	"pod/fast/pod-complete.yaml",
	"pod/fast/pod-delete.yaml",
	"volume/fast/pv-delete.yaml",
	"volume/fast/pvc-delete.yaml",
}

// DevPodVar is the container variable whose value picks a simulated outcome (SPEC §10).
const DevPodVar = "SLIPWAY_DEV_POD"

// Simulated outcomes of SPEC §10.
const (
	OutcomeNeverReady = "never-ready"
	OutcomeCrashLoop  = "crashloop"
	OutcomePullError  = "pull-error"
)

// envSelector selects on the main container's SLIPWAY_DEV_POD value. kwok 0.8.0 cannot compile
// a CEL selector over env (it fails to resolve v1.EnvVar and panics); its jq-style key works.
const envSelector = `.spec.containers.[0].env.[] | select( .name == "` + DevPodVar + `" ) | .value`

// ensureStages copies the stock stages out of the kwok module into the cache, once.
func ensureStages(ctx context.Context, cache string) (string, error) {
	dir := filepath.Join(cache, "stages")
	if _, err := os.Stat(filepath.Join(dir, "done")); err == nil {
		return dir, nil
	}
	modDir, err := moduleDir(ctx, filepath.Join(cache, "src", "kwok"), "sigs.k8s.io/kwok")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, s := range stockStages {
		b, err := os.ReadFile(filepath.Join(modDir, "kustomize", "stage", s))
		if err != nil {
			return "", fmt.Errorf("dev cluster: kwok stage: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(s, "/", "_")), b, 0o644); err != nil {
			return "", err
		}
	}
	return dir, os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
}

// kwokConfig returns kwok's --config: every stock stage (pod-ready narrowed to pods without a
// simulated outcome), the provisioner, and one stage per outcome.
func kwokConfig(stagesDir, volumesDir string) ([]byte, error) {
	var docs [][]byte
	for _, s := range stockStages {
		b, err := os.ReadFile(filepath.Join(stagesDir, strings.ReplaceAll(s, "/", "_")))
		if err != nil {
			return nil, err
		}
		if s == "pod/fast/pod-ready.yaml" {
			if b, err = excludeOutcomes(b); err != nil {
				return nil, fmt.Errorf("dev cluster: kwok stage %s: %w", s, err)
			}
		}
		docs = append(docs, bytes.TrimSpace(b))
	}
	docs = append(docs, bytes.TrimSpace([]byte(provisionStage(volumesDir))))
	for _, s := range outcomeStages {
		docs = append(docs, bytes.TrimSpace([]byte(s.yaml())))
	}
	return append(bytes.Join(docs, []byte("\n---\n")), '\n'), nil
}

// excludeOutcomes adds `SLIPWAY_DEV_POD NotIn (outcomes)` to the pod-ready stage; NotIn also
// matches a pod without the variable, so every ordinary pod still becomes Ready.
func excludeOutcomes(stage []byte) ([]byte, error) {
	var m map[string]any
	if err := yaml.Unmarshal(stage, &m); err != nil {
		return nil, err
	}
	spec, _ := m["spec"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)
	if sel == nil {
		return nil, fmt.Errorf("no spec.selector")
	}
	exprs, _ := sel["matchExpressions"].([]any)
	sel["matchExpressions"] = append(exprs, map[string]any{
		"key":      envSelector,
		"operator": "NotIn",
		"values":   []any{OutcomeNeverReady, OutcomeCrashLoop, OutcomePullError},
	})
	return yaml.Marshal(m)
}
