package kube

// OptionalKinds lets the external tests mark a kind as one a cluster may lack.
var OptionalKinds = optionalKinds
