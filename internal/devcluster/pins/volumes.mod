module slipway.dev/slipway/tools/volumes

go 1.26.0
