module github.com/echomq/echomq/sdk/go

go 1.25.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/redis/rueidis v1.0.79
)

require golang.org/x/sys v0.47.0 // indirect
