module slipway.dev/slipway/tools/runc-systemd

go 1.26.0
