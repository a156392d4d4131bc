//! Build facts for `INFO rl`: the git commit the module was built from and the
//! target triple, as compile-time environment variables (`RL_GIT_COMMIT`,
//! `RL_TARGET`). A build outside a git checkout (a source tarball) says "unknown",
//! unless `RL_GIT_COMMIT` is set in the environment. Nothing here reads the clock
//! or the build path, so two builds of one commit stay byte-identical.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RL_GIT_COMMIT");
    let commit = std::env::var("RL_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    // Rebuild when HEAD moves: HEAD itself (a checkout) and the branch it names (a
    // commit), in this worktree's git directory and the shared one.
    for dir in [
        git(&["rev-parse", "--git-dir"]),
        git(&["rev-parse", "--git-common-dir"]),
    ]
    .into_iter()
    .flatten()
    {
        let dir = PathBuf::from(dir);
        for file in ["HEAD", "packed-refs"] {
            if dir.join(file).exists() {
                println!("cargo:rerun-if-changed={}", dir.join(file).display());
            }
        }
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            if dir.join(&branch).exists() {
                println!("cargo:rerun-if-changed={}", dir.join(&branch).display());
            }
        }
    }
    println!("cargo:rustc-env=RL_GIT_COMMIT={commit}");
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_string());
    println!("cargo:rustc-env=RL_TARGET={target}");
}
