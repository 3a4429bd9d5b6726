module github.com/echomq/echomq/dashboard

go 1.25.0

require (
	github.com/chromedp/chromedp v0.23.1
	github.com/echomq/echomq/sdk/go v0.0.0-00010101000000-000000000000
	github.com/redis/rueidis v1.0.79
)

require (
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

replace github.com/echomq/echomq/sdk/go => ../sdk/go
