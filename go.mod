module github.com/echomq/echomq

go 1.25.0

require (
	github.com/dave/jennifer v1.7.1
	github.com/google/go-cmp v0.7.0
	github.com/hexops/gotextdiff v1.0.3
	github.com/redis/rueidis v1.0.79
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/bluekeyes/go-gitdiff v0.9.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
)

require golang.org/x/text v0.41.0 // indirect

require (
	github.com/echomq/echomq/dashboard v0.0.0-00010101000000-000000000000
	github.com/echomq/echomq/sdk/go v0.0.0-00010101000000-000000000000
	golang.org/x/sys v0.47.0 // indirect
)

replace github.com/echomq/echomq/sdk/go => ./sdk/go

replace github.com/echomq/echomq/dashboard => ./dashboard
