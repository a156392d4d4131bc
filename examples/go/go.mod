module github.com/rl-rate/rl/examples/go

go 1.18

require (
	github.com/gomodule/redigo v1.8.9
	github.com/rl-rate/rl/clients/go v0.2.0
)

// The client from this clone. Outside the clone, drop this line and
// `go get github.com/rl-rate/rl/clients/go`.
replace github.com/rl-rate/rl/clients/go => ../../clients/go
