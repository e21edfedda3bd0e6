module slipway.dev/slipway/tools/pause

go 1.26.0
