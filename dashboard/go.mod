module github.com/echomq/echomq/dashboard

go 1.25.0

require (
	github.com/echomq/echomq/sdk/go v0.0.0-00010101000000-000000000000
	github.com/redis/rueidis v1.0.79
)

require golang.org/x/sys v0.47.0 // indirect

replace github.com/echomq/echomq/sdk/go => ../sdk/go
