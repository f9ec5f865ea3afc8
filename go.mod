module github.com/openprogram/lifecycle

go 1.26.8

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4
	github.com/gowebpki/jcs v1.0.2
	github.com/oklog/ulid/v2 v2.1.2
	mvdan.cc/sh/v3 v3.14.1
)
