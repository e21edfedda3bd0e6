// Command pause is the pod sandbox of the dev environment's real node: containerd runs it as
// the first process of every pod, holding the pod's namespaces. It waits for SIGINT or SIGTERM
// and reaps the zombies of a pod that shares its PID namespace. The dev environment builds it
// (registry.k8s.io/pause is not reachable from every machine) and pushes it to the dev registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
