package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"slipway.dev/slipway/internal/ui"
	"slipway.dev/slipway/internal/waves"
)

// wavesStatus is `status` of a waves file: per group, in order, its health and the groups it
// blocks while it is not healthy.
func wavesStatus(cmd *cobra.Command, g *Globals, f *waves.File) error {
	r, err := openWaves(cmd, g, f, false, true)
	if err != nil {
		return err
	}
	r.printer.Close()
	var out []ui.WaveHealth
	for _, u := range r.ordered(false) {
		st, err := u.s.engine.Status(cmd.Context(), u.s.target)
		if err != nil {
			return fmt.Errorf("waves file %s: group %s: %w", f.Path, u.w.Name, err)
		}
		h := ui.WaveHealth{WaveGroup: u.group(), Why: waves.Unhealthy(st), Status: st}
		h.Healthy = len(h.Why) == 0
		if !h.Healthy {
			h.Blocks = f.Downstream(u.w.Name)
		}
		out = append(out, h)
	}
	if g.Output == "json" {
		return ui.WavesStatusJSON(r.stdout, f.Path, out)
	}
	ui.WavesStatus(r.stdout, f.Path, out)
	return nil
}
