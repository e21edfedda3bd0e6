//go:build unix

package state

import (
	"errors"
	"syscall"
)

func pidLiveness(pid int) Liveness {
	err := syscall.Kill(pid, 0)
	switch {
	case err == nil, errors.Is(err, syscall.EPERM):
		return LivenessAlive
	case errors.Is(err, syscall.ESRCH):
		return LivenessDead
	}
	return LivenessUnknown
}
