package spec

import "fmt"

// LabelStateVersion is the image label that declares a node's state version when the group
// file does not (SPEC §6a).
const LabelStateVersion = "dev.slipway.state.version"

// CheckStateVersion reports whether v can be a state version: it travels in a pod's
// environment and a file on the volume, so 1 to 63 letters, digits, '.', '_' and '-'.
func CheckStateVersion(v string) error {
	if v == "" || len(v) > 63 {
		return fmt.Errorf("state version %q must be 1 to 63 characters", v)
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("state version %q: only letters, digits, '.', '_' and '-'", v)
		}
	}
	return nil
}

// InitContainerState is the init container of a versioned node's pod that runs the state
// step (render.StateScript) before the node's own container.
const InitContainerState = "slipway-state"
