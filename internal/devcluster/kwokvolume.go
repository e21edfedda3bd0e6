package devcluster

import "strings"

// provisionStage makes kwok the StorageClass's external provisioner and nothing more: for a
// claim the PV controller has handed to it (the volume.kubernetes.io/storage-provisioner
// annotation, as a real CSI provisioner waits for), it creates one PersistentVolume pre-bound
// to the claim, and kube-controller-manager's PV controller binds the two, as in a real cluster.
//
// kwok's stock pvc-provision stage did the binding too (a PV, then three patches of the claim
// and one of the PV), from a stage controller that runs one claim at a time, while the PV
// controller bound the same claim: 200 claims took 19.5 s to be Bound after they were created,
// with 835 failed PV creates and 540 conflicting claim status writes, and 20.6 s of the API
// server's CPU; with this stage 4.8 s and 7.3 s (issue 17). A pod whose claim is unbound is
// unschedulable and goes back through the scheduler at every claim event, so the first apply
// of a group had waited on this.
//
// A volume is a hostPath directory under volumesDir (the data directory's volumes/), which the
// real node's kubelet creates when a pod there mounts the claim; the volume reaper
// (tools/volumes) removes it when its volume is deleted, as the Delete reclaim policy says.
// No node affinity: the kwok nodes make no directory, and there is one real node.
func provisionStage(volumesDir string) string {
	return strings.Replace(provisionStageTemplate, "VOLUMES_DIR", volumesDir, 1)
}

const provisionStageTemplate = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: slipway-pvc-provision
spec:
  resourceRef:
    apiGroup: v1
    kind: PersistentVolumeClaim
  selector:
    matchExpressions:
    - cel:
        expression: >-
          self.spec.storageClassName == 'kwok-volume'
    - cel:
        expression: >-
          !has(self.metadata.deletionTimestamp)
    - cel:
        expression: >-
          !has(self.spec.volumeName)
    - cel:
        expression: >-
          has(self.metadata.annotations) && self.metadata.annotations.exists(k, k == 'volume.kubernetes.io/storage-provisioner')
  steps:
  - apply:
      template: |
        apiVersion: v1
        kind: PersistentVolume
        metadata:
          name: pvc-{{ .metadata.uid }}
          annotations:
            pv.kubernetes.io/provisioned-by: kwok.x-k8s.io/volume
        spec:
          accessModes:
          {{ YAML .spec.accessModes 2 }}
          capacity:
          {{ YAML .spec.resources.requests 2 }}
          persistentVolumeReclaimPolicy: {{ default "Delete" .spec.reclaimPolicy | Quote }}
          storageClassName: {{ .spec.storageClassName | Quote }}
          volumeMode: {{ default "Filesystem" .spec.volumeMode | Quote }}
          claimRef:
            apiVersion: {{ .apiVersion | Quote }}
            kind: {{ .kind | Quote }}
            name: {{ .metadata.name | Quote }}
            namespace: {{ .metadata.namespace | Quote }}
            resourceVersion: {{ .metadata.resourceVersion | Quote }}
            uid: {{ .metadata.uid | Quote }}
          hostPath:
            path: VOLUMES_DIR/pvc-{{ .metadata.uid }}
            type: DirectoryOrCreate
`
