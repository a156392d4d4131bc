# Sourced by test.sh and bench.sh: a Go toolchain (1.18 or later) and redigo
# (for the integration tests, the bench and the example; the client itself
# needs nothing), installed with apt-get when missing and root. Returns 77
# (the caller exits with it) when they cannot be had. No module proxy is used:
# every dependency is on disk.

# The path the integration tests' go.mod (internal/itest) replaces redigo with.
redigo_dir=/usr/share/gocode/src/github.com/gomodule/redigo

go_env_apt() {
  # apt-get install, refreshing the package lists once if the first try fails.
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || return 1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1 && return 0
  apt-get update -q >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1
}

go_env_version_ok() {
  # go1.18 or later: generics, any.
  local v
  v=$(go env GOVERSION 2>/dev/null) || return 1
  v=${v#go}
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%[.a-z]*}
  [ "$major" -gt 1 ] 2>/dev/null || { [ "$major" -eq 1 ] && [ "$minor" -ge 18 ]; } 2>/dev/null
}

go_env_setup() {
  if ! command -v go >/dev/null 2>&1; then
    echo "go: no Go toolchain; installing golang-go with apt-get"
    go_env_apt golang-go || true
  fi
  if ! command -v go >/dev/null 2>&1; then
    echo "go: SKIP: no Go toolchain, and apt-get install golang-go is not possible here (needs root and Debian/Ubuntu)"
    return 77
  fi
  if ! go_env_version_ok; then
    echo "go: SKIP: $(go version) is too old: the Go client needs Go 1.18 or later"
    return 77
  fi
  if [ ! -f "$redigo_dir/go.mod" ]; then
    echo "go: redigo is missing; installing golang-github-gomodule-redigo-dev with apt-get"
    go_env_apt golang-github-gomodule-redigo-dev || true
  fi
  if [ ! -f "$redigo_dir/redis/redis.go" ]; then
    echo "go: SKIP: redigo (Debian's golang-github-gomodule-redigo-dev, at $redigo_dir) is missing and cannot be installed here"
    return 77
  fi
  # Everything is on disk: never ask a module proxy or checksum database.
  export GOPROXY=off GOSUMDB=off GOFLAGS=-mod=mod GOTOOLCHAIN=local GOWORK=off
  return 0
}
