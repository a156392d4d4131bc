//! The backend under test (env `RL_BACKEND`): the module, or the Functions library
//! `functions/rl.lua`, and the one place that turns the module's command lines into
//! the library's `FCALL`s.

use std::path::PathBuf;

use redis::{cmd, Connection};

/// What serves the RL commands in the servers the tests start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The module (`--loadmodule`), RL.* commands.
    Module,
    /// The Functions library (`FUNCTION LOAD`), `FCALL rl_*`.
    Library,
}

/// The backend under test: `RL_BACKEND=library`, else the module.
pub fn backend() -> Backend {
    match std::env::var("RL_BACKEND").as_deref() {
        Ok("library") => Backend::Library,
        Ok("module") | Ok("") | Err(_) => Backend::Module,
        Ok(other) => panic!("RL_BACKEND={other}: expected module or library"),
    }
}

pub fn is_library() -> bool {
    backend() == Backend::Library
}

/// True (and says why) when the test is about a module-only feature and the
/// backend is the library: the caller returns, the test counts as skipped.
pub fn module_only(why: &str) -> bool {
    if is_library() {
        eprintln!("skipped with the library backend: {why}");
        return true;
    }
    false
}

/// Functions the command table names that the library may not have yet: RL.SHARE's
/// `rl_share`, ported to Lua separately. While the library under test lacks one
/// (its source never names it), the library backend leaves out that command's rows
/// and tests, and says so once; as soon as the library has it, they run.
pub const PENDING: &[&str] = &[];

/// Whether the library's source (`RL_LIBRARY`, or functions/rl.lua) lacks
/// `function`, one of [`PENDING`] (it never names it); false for any other.
pub fn library_source_lacks(function: &str) -> bool {
    PENDING.contains(&function) && !library_source().contains(&format!("\"{function}\""))
}

/// Whether the library under test lacks `function`, one of [`PENDING`]: false for
/// any other function, and always false for the module.
pub fn library_lacks(function: &str) -> bool {
    static LACKING: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    if !is_library() {
        return false;
    }
    let lacking = LACKING.get_or_init(|| {
        let lacking: Vec<&'static str> = PENDING
            .iter()
            .copied()
            .filter(|f| library_source_lacks(f))
            .collect();
        if !lacking.is_empty() {
            eprintln!(
                "{} does not have {} yet: the library backend leaves out their tests",
                library_path().display(),
                lacking.join(", ")
            );
        }
        lacking
    });
    lacking.contains(&function)
}

/// True (and says why) when the backend is a library without `function` (one of
/// [`PENDING`]): the caller returns, the test counts as skipped.
pub fn library_lacking(function: &str) -> bool {
    if library_lacks(function) {
        eprintln!("skipped with the library backend: it has no {function} yet");
        return true;
    }
    false
}

/// The Functions library: `RL_LIBRARY`, or the repository's functions/rl.lua.
pub fn library_path() -> PathBuf {
    std::env::var_os("RL_LIBRARY")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/functions/rl.lua")))
}

/// The library's source, for FUNCTION LOAD.
pub fn library_source() -> String {
    let path = library_path();
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Loads the library into a server (FUNCTION LOAD REPLACE).
pub fn load_library(c: &mut Connection) {
    let name: String = cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(library_source())
        .query(c)
        .expect("FUNCTION LOAD of the library");
    assert_eq!(name, "rl");
}

/// The library function for an RL command name (any case): `RL.FIXED` → `rl_fixed`,
/// as the command table names it (None for a command the library lacks).
pub fn function_of(name: &[u8]) -> Option<String> {
    rl_core::commands::find(name)
        .and_then(|c| c.function)
        .map(str::to_string)
}

/// A command line as the backend takes it: unchanged for the module; for the
/// library an RL command becomes `FCALL rl_<name> 1 key args…` (RL.ALL:
/// `FCALL rl_all numkeys keys… args…`). Any other command is unchanged.
pub fn translate(args: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    if !is_library() || args.is_empty() {
        return args;
    }
    let Some(function) = function_of(&args[0]) else {
        return args;
    };
    let mut out = vec![b"FCALL".to_vec(), function.clone().into_bytes()];
    if function == "rl_all" {
        // numkeys is already where FCALL wants it.
        out.extend(args.into_iter().skip(1));
    } else {
        out.push(b"1".to_vec());
        out.extend(args.into_iter().skip(1));
    }
    out
}

/// A command built elsewhere (`cmd("RL.FIXED").arg(…)`) as the backend takes it.
pub fn on_backend(c: &redis::Cmd) -> redis::Cmd {
    let args: Vec<Vec<u8>> = c
        .args_iter()
        .map(|a| match a {
            redis::Arg::Simple(b) => b.to_vec(),
            redis::Arg::Cursor => b"0".to_vec(),
        })
        .collect();
    let mut out = redis::Cmd::new();
    for a in translate(args) {
        out.arg(a);
    }
    out
}

/// The name an arity error names for `command`: for the module, the command as RL
/// registers it (`RL.FIXED`, whatever the call's case: every supported server names
/// a module command so), for the library its function (`rl_fixed`).
pub fn arity_name(command: &str) -> String {
    match function_of(command.as_bytes()) {
        Some(f) if is_library() => f,
        _ => command.to_uppercase(),
    }
}

/// `ERR wrong number of arguments for '…' command` for `command` on this backend.
pub fn arity_error(command: &str) -> String {
    format!(
        "ERR wrong number of arguments for '{}' command",
        arity_name(command)
    )
}
