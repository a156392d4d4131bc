// The integration tests, the bench and a runnable example of the Go client,
// against real servers through redigo. A module of its own so that the client
// module keeps no dependencies. redigo comes from Debian's
// golang-github-gomodule-redigo-dev (this machine has no module proxy);
// clients/go/test.sh installs it.
module github.com/rl-rate/rl/clients/go/internal/itest

go 1.18

require (
	github.com/gomodule/redigo v1.8.3
	github.com/rl-rate/rl/clients/go v0.2.0
)

replace github.com/rl-rate/rl/clients/go => ../..

replace github.com/gomodule/redigo => /usr/share/gocode/src/github.com/gomodule/redigo
