// This module holds no code. It keeps the Go files under golden/cases/*/out
// (what the Go target generates for each golden case, compared byte for
// byte by go test ./gen/cases) out of the root module's ./... .
module github.com/echomq/echomq/golden

go 1.26.8
