// Command lean serves CNCF Distribution's registry API from a configuration file, as
// `registry serve` does, for the dev cluster (built as registry-lean-<hash>). It leaves out
// what a cluster sharing two cores with the tool it serves cannot afford: distribution's
// NewRegistry traces every request with OpenTelemetry and encodes each span as JSON for a
// debug logger whatever the log level, and writes an access log line per request. With them,
// 1,000 HEADs of a manifest cost the registry 473–580 ms of CPU; without, 366–396 ms (issue
// 17). The handlers, storage and configuration are distribution's own; only the filesystem
// storage driver is linked, which is all the dev cluster configures.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	"github.com/sirupsen/logrus"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: registry-lean serve CONFIG")
		os.Exit(2)
	}
	if err := serve(os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}

func serve(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	config, err := configuration.Parse(f)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("configuration %s: %w", path, err)
	}
	lvl, err := logrus.ParseLevel(string(config.Log.Level))
	if err != nil {
		return fmt.Errorf("configuration %s: log.level: %w", path, err)
	}
	logrus.SetLevel(lvl)
	app := handlers.NewApp(context.Background(), config)
	return (&http.Server{Addr: config.HTTP.Addr, Handler: app}).ListenAndServe()
}
