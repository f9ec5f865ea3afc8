module github.com/openprogram/lifecycle

go 1.26.8

require (
	github.com/gowebpki/jcs v1.0.2
	github.com/oklog/ulid/v2 v2.1.2
)
