//go:build !unix

package state

func pidLiveness(int) Liveness { return LivenessUnknown }
