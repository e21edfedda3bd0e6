package plan

import (
	"encoding/json"
	"fmt"
	"os"
)

// Write saves the plan as JSON to path.
func (p *Plan) Write(path string) error {
	if err := p.Materialize(); err != nil { // a saved plan applies exactly what was shown
		return fmt.Errorf("plan %s: %w", path, err)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("plan %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
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
