package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Write saves the plan as JSON to path, readable by its owner only (issue 35 item 5): a plan
// shows the cluster's objects and the keyed hashes of secrets, for the operator who applies
// it. It is written to a new file (mode 0600) renamed over path, so that a file path held
// before, readable by others, is replaced rather than filled.
func (p *Plan) Write(path string) error {
	if err := p.Materialize(); err != nil { // a saved plan applies exactly what was shown
		return fmt.Errorf("plan %s: %w", path, err)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("plan %s: %w", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("plan %s: %w", path, err)
	}
	_, err = f.Write(append(b, '\n'))
	err = errors.Join(err, f.Chmod(0o600), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("plan %s: %w", path, err)
	}
	return nil
}

// Read loads a plan saved by Write.
func Read(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("plan %s: not a slipway plan: %w", path, err)
	}
	if p.Version != FormatVersion {
		return nil, fmt.Errorf("plan %s: format version %d, this slipway reads %d", path, p.Version, FormatVersion)
	}
	return &p, nil
}
