//! rl-client's tests, one binary: against the servers of RL_TEST_MODULE_URL and
//! RL_TEST_LIBRARY_URL (scripts/clients.sh rust starts them), and the coverage of
//! commands.json. Without the URLs the server tests pass after a note on stderr.

mod async_calls;
mod batch;
mod common;
mod coverage;
mod errors;
mod headers;
mod shadow;
mod survive;
mod sync_calls;
