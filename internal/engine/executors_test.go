package engine

import (
	"testing"

	"slipway.dev/slipway/internal/plan"
)

// Every kind of step a node runs has its executor (a push runs before the nodes, apart).
func TestEveryStepKindHasAnExecutor(t *testing.T) {
	kinds := []plan.StepKind{
		plan.StepApplyObjects, plan.StepStopRole, plan.StepApplyDeployment, plan.StepAwaitRollout,
		plan.StepAwaitReady, plan.StepStartRole, plan.StepRemoveCopy, plan.StepPrune,
		plan.StepRemoveNode, plan.StepRetireDNS, plan.StepPublishDNS, plan.StepAwaitAddress,
		plan.StepAwaitAccepted, plan.StepAwaitResolved, plan.StepCentral,
	}
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			if executors[k] == nil && New(Options{}).steps[k] == nil {
				t.Errorf("no executor of step %s", k)
			}
		})
	}
	if _, ok := executors[plan.StepPush]; ok || New(Options{}).steps[plan.StepPush] != nil {
		t.Errorf("push has a node executor; pushes run before the nodes")
	}
}
