module github.com/rl-rate/rl/clients/go

go 1.18
