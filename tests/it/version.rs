//! One version, Cargo.toml's, everywhere it is shown: MODULE LIST `ver`, the build
//! fields of INFO rl (version, git commit, target triple), and the Functions
//! library's header and `rl_version` (docs/operations.md#which-build-is-loaded).

use crate::common::*;

#[test]
fn module_list_ver_is_the_cargo_version() {
    if module_only("MODULE LIST lists the module") {
        return;
    }
    let s = Server::start();
    assert_eq!(module_version(&mut s.conn()), Some(cargo_version_number()));
    assert_eq!(cargo_version_number(), 200, "0.2.0 is 200");
}

#[test]
fn info_rl_says_version_commit_target_and_tzdb() {
    if module_only("INFO rl is the module's") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(
        info_str(&mut c, "rl", "rl_version"),
        env!("CARGO_PKG_VERSION")
    );
    let commit = info_str(&mut c, "rl", "rl_git_commit");
    assert!(
        commit == "unknown"
            || (commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "rl_git_commit:{commit}"
    );
    let target = info_str(&mut c, "rl", "rl_target");
    assert!(
        target.starts_with(std::env::consts::ARCH) && target.contains("-linux-"),
        "rl_target:{target} on {}",
        std::env::consts::ARCH
    );
    // The build fields come first, before the counters.
    let section: String = cmd("INFO").arg("rl").query(&mut c).unwrap();
    let fields: Vec<&str> = section
        .lines()
        .filter_map(|l| l.split_once(':').map(|(k, _)| k))
        .take(4)
        .collect();
    assert_eq!(
        fields,
        [
            "rl_version",
            "rl_git_commit",
            "rl_target",
            "rl_tzdb_version"
        ]
    );
    // RL.QUOTA's compiled-in tz database, e.g. 2026f.
    let tzdb = info_str(&mut c, "rl", "rl_tzdb_version");
    assert_eq!(tzdb, rl_core::calendar::tzdb_version());
    assert!(
        tzdb.len() == 5 && tzdb.starts_with("20"),
        "rl_tzdb_version:{tzdb}"
    );
}

#[test]
fn the_library_says_the_cargo_version() {
    // With either backend: a server without the module, the library loaded into it.
    let s = Server::with(Options {
        without_module: true,
        ..Options::default()
    });
    let mut c = s.conn();
    load_library(&mut c);
    let version: String = cmd("FCALL").arg("rl_version").arg(0).query(&mut c).unwrap();
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    // Read-only and allowed on a replica: FCALL_RO works.
    let ro: String = cmd("FCALL_RO")
        .arg("rl_version")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(ro, version);
    let header = format!("RL {}: ", env!("CARGO_PKG_VERSION"));
    assert!(
        library_source()
            .lines()
            .take(3)
            .any(|l| l.starts_with(&header)),
        "functions/rl.lua's header comment does not start with {header:?}"
    );
}
