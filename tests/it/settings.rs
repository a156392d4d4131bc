//! Module settings are validated the same way in every form: module arguments
//! (`--loadmodule librl.so NAME VALUE`, `MODULE LOADEX … ARGS`), `rl.NAME` in
//! redis.conf, `MODULE LOADEX … CONFIG` and `CONFIG SET`. A bad one fails the load
//! with a line naming the setting and the accepted range; nothing half-loads.

use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

const RANGE: &str = "rl.sliding-max-limit must be an integer from 1 to 10000000";

/// Starts redis-server with `args` (logging to stdout) and expects it to refuse to
/// start; returns what it logged.
fn refused_start(args: &[String]) -> String {
    let dir = std::env::temp_dir().join(format!(
        "rl-settings-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let log_path = dir.join("start.log");
    let log_file = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(server_binary())
        .current_dir(&dir)
        .args(args)
        .args(["--port", &free_port().to_string(), "--save", "", "--dir"])
        .arg(&dir)
        .stdout(log_file)
        .stderr(Stdio::null())
        .spawn()
        .expect("run redis-server");
    // A server that accepted the setting keeps running: stop it and fail.
    let exited = wait_for_exit(&mut child, Duration::from_secs(10));
    if exited.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        exited.is_some_and(|status| !status.success()),
        "the server started with {args:?}:\n{log}"
    );
    log
}

/// The child's exit status, or None if it is still running after `limit`.
fn wait_for_exit(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

fn load_args(module_args: &[&str]) -> Vec<String> {
    let mut args = vec![
        "--loadmodule".to_string(),
        module_path().display().to_string(),
    ];
    args.extend(module_args.iter().map(|a| a.to_string()));
    args
}

#[test]
fn bad_module_arguments_stop_the_load_with_a_line_naming_the_setting() {
    if module_only("module arguments and settings") {
        return;
    }
    for (module_args, expected) in [
        (&["sliding-max-limit", "0"][..], RANGE),
        (&["sliding-max-limit", "-5"], RANGE),
        (&["sliding-max-limit", "10000001"], RANGE),
        (&["sliding-max-limit", "abc"], RANGE),
        (
            &["foo", "bar"],
            "unknown module argument 'foo'; known names: sliding-max-limit",
        ),
        (
            &["sliding-max-limt", "5"],
            "unknown module argument 'sliding-max-limt'",
        ),
        (
            &["sliding-max-limit", "5", "sliding-max-limit", "6"],
            "module argument sliding-max-limit given more than once",
        ),
        (&["sliding-max-limit"], "module arguments come in pairs"),
    ] {
        let log = refused_start(&load_args(module_args));
        assert!(
            log.contains(&format!("rl: not loaded: {expected}")),
            "{module_args:?}:\n{log}"
        );
    }
}

#[test]
fn an_out_of_range_setting_in_redis_conf_stops_the_start_naming_it() {
    if module_only("module arguments and settings") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("rl-conf-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("redis.conf");
    // RL's own line names the setting, the value (when it is an integer: the server
    // refuses other text before the module sees it) and the range.
    let range = "rl.sliding-max-limit must be an integer from 1 to 10000000";
    for (line, expected) in [
        (
            "rl.sliding-max-limit 0",
            format!("rl: not loaded: rl.sliding-max-limit 0, given in redis.conf or MODULE LOADEX, is out of range: {range}"),
        ),
        (
            "rl.sliding-max-limit 10000001",
            format!("rl: not loaded: rl.sliding-max-limit 10000001, given in redis.conf or MODULE LOADEX, is out of range: {range}"),
        ),
        (
            "rl.sliding-max-limit abc",
            format!("rl: not loaded: a setting given in redis.conf or MODULE LOADEX is not an integer: {range}"),
        ),
        // The server itself refuses unknown `rl.*` names (its log line, which the
        // module cannot word, says a module configuration was not applied).
        ("rl.no-such-setting 5", String::new()),
    ] {
        std::fs::write(
            &conf,
            format!("loadmodule {}\n{line}\n", module_path().display()),
        )
        .unwrap();
        let log = refused_start(&[conf.display().to_string()]);
        assert!(log.contains(&expected), "{line}: no {expected:?} in\n{log}");
    }
    // A valid one is applied (here given on the command line, which the server
    // reads as more redis.conf lines).
    let s = Server::loading_module(&["--rl.sliding-max-limit", "42"]);
    let got: Vec<String> = cmd("CONFIG")
        .arg("GET")
        .arg("rl.sliding-max-limit")
        .query(&mut s.conn())
        .unwrap();
    assert_eq!(got[1], "42");
    let _ = std::fs::remove_dir_all(&dir);
}

fn loadex(c: &mut Connection, args: &[&str]) -> redis::RedisResult<String> {
    let mut command = cmd("MODULE");
    command
        .arg("LOADEX")
        .arg(module_path().display().to_string());
    for a in args {
        command.arg(*a);
    }
    command.query(c)
}

/// Whether the module is loaded: its config exists only then.
fn module_loaded(c: &mut Connection) -> bool {
    let got: Vec<String> = cmd("CONFIG")
        .arg("GET")
        .arg("rl.sliding-max-limit")
        .query(c)
        .unwrap();
    !got.is_empty()
}

#[test]
fn module_loadex_validates_configs_and_arguments_alike() {
    if module_only("module arguments and settings") {
        return;
    }
    let s = Server::with(Options {
        without_module: true,
        args: vec!["--enable-module-command".into(), "local".into()],
        ..Options::default()
    });
    let mut c = s.conn();
    // Each refusal's own line: the setting, the value where the module saw it, the
    // range.
    for (bad, line) in [
        (
            &["CONFIG", "rl.sliding-max-limit", "0"][..],
            format!("rl: not loaded: rl.sliding-max-limit 0, given in redis.conf or MODULE LOADEX, is out of range: {RANGE}"),
        ),
        (
            &["CONFIG", "rl.sliding-max-limit", "-3"],
            format!("rl: not loaded: rl.sliding-max-limit -3, given in redis.conf or MODULE LOADEX, is out of range: {RANGE}"),
        ),
        (
            &["CONFIG", "rl.sliding-max-limit", "abc"],
            format!("rl: not loaded: a setting given in redis.conf or MODULE LOADEX is not an integer: {RANGE}"),
        ),
        (&["CONFIG", "rl.no-such-setting", "5"], String::new()),
        (&["ARGS", "sliding-max-limit", "0"], format!("rl: not loaded: {RANGE}")),
        (
            &["ARGS", "sliding-max-limit", "5", "sliding-max-limit", "6"],
            "rl: not loaded: module argument sliding-max-limit given more than once".to_string(),
        ),
        (&["ARGS", "foo", "bar"], "rl: not loaded: unknown module argument 'foo'".to_string()),
    ] {
        assert!(loadex(&mut c, bad).is_err(), "{bad:?} loaded");
        assert!(!module_loaded(&mut c), "{bad:?} left the module loaded");
        assert!(s.log().contains(&line), "{bad:?}: no {line:?} in\n{}", s.log());
    }

    loadex(&mut c, &["CONFIG", "rl.sliding-max-limit", "7"]).unwrap();
    let got: Vec<String> = cmd("CONFIG")
        .arg("GET")
        .arg("rl.sliding-max-limit")
        .query(&mut c)
        .unwrap();
    assert_eq!(got[1], "7");
    let _: String = cmd("MODULE").arg("UNLOAD").arg("rl").query(&mut c).unwrap();
    loadex(&mut c, &["ARGS", "sliding-max-limit", "9"]).unwrap();
    let got: Vec<String> = cmd("CONFIG")
        .arg("GET")
        .arg("rl.sliding-max-limit")
        .query(&mut c)
        .unwrap();
    assert_eq!(got[1], "9");
}

#[test]
fn config_set_out_of_range_is_an_error_that_keeps_the_value() {
    if module_only("module arguments and settings") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    config_set(&mut c, "rl.sliding-max-limit", 12);
    for bad in ["0", "-5", "10000001", "abc", ""] {
        let e = error_of(
            &mut c,
            &[b"CONFIG", b"SET", b"rl.sliding-max-limit", bad.as_bytes()],
        );
        assert!(
            e.starts_with("ERR") && e.contains("rl.sliding-max-limit"),
            "{bad}: {e}"
        );
    }
    let got: Vec<String> = cmd("CONFIG")
        .arg("GET")
        .arg("rl.sliding-max-limit")
        .query(&mut c)
        .unwrap();
    assert_eq!(got[1], "12");
}

#[test]
fn the_ratelimit_acl_category_survives_module_unload_and_load() {
    if module_only("module arguments and settings") {
        return;
    }
    let s = Server::with(Options {
        args: vec!["--enable-module-command".into(), "local".into()],
        ..Options::default()
    });
    let mut c = s.conn();
    let categories: Vec<String> = cmd("ACL").arg("CAT").query(&mut c).unwrap();
    if !categories.iter().any(|x| x == "ratelimit") {
        // Before 7.4 modules cannot add categories; acl.rs covers that case.
        return;
    }
    let _: String = cmd("MODULE").arg("UNLOAD").arg("rl").query(&mut c).unwrap();
    let _: String = cmd("MODULE")
        .arg("LOAD")
        .arg(module_path().display().to_string())
        .query(&mut c)
        .unwrap();
    assert!(
        !s.log().contains("cannot create the ACL category"),
        "{}",
        s.log()
    );
    let _: String = cmd("ACL")
        .arg("SETUSER")
        .arg("limiter")
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("+@ratelimit")
        .query(&mut c)
        .unwrap();
    let mut user = s.conn();
    let _: String = cmd("AUTH")
        .arg("limiter")
        .arg("pw")
        .query(&mut user)
        .unwrap();
    for args in [
        &["RL.FIXED", "f", "5", "1m"][..],
        &["RL.SLIDING", "s", "5", "1m"],
        &["RL.BUCKET", "b", "5", "1", "1s"],
    ] {
        let reply = try_rl(&mut user, args);
        assert!(reply.is_ok(), "{args:?}: {reply:?}");
    }
}

#[test]
fn rl_share_max_tenants_is_validated_like_every_setting() {
    if module_only("module arguments and settings") {
        return;
    }
    let range = "rl.share-max-tenants must be an integer from 1 to 1000000";
    for module_args in [
        &["share-max-tenants", "0"][..],
        &["share-max-tenants", "1000001"],
        &["share-max-tenants", "x"],
        &["sliding-max-limit", "5", "share-max-tenants", "-1"],
    ] {
        let log = refused_start(&load_args(module_args));
        assert!(
            log.contains(&format!("rl: not loaded: {range}")),
            "{module_args:?}:\n{log}"
        );
    }
    let log = refused_start(&load_args(&[
        "share-max-tenants",
        "5",
        "share-max-tenants",
        "6",
    ]));
    assert!(
        log.contains("module argument share-max-tenants given more than once"),
        "{log}"
    );
    let log = refused_start(&[
        "--loadmodule".to_string(),
        module_path().display().to_string(),
        "--rl.share-max-tenants".to_string(),
        "0".to_string(),
    ]);
    assert!(
        log.contains(&format!(
            "rl: not loaded: rl.share-max-tenants 0, given in redis.conf or MODULE LOADEX, is out of range: {range}"
        )),
        "{log}"
    );
    // Two settings at once, one as an argument and one as a config line (the
    // others, rl.top-size and rl.config-resetstat, at their defaults).
    let s = Server::loading_module(&["share-max-tenants", "7", "--rl.sliding-max-limit", "42"]);
    let got: Vec<String> = cmd("CONFIG")
        .arg("GET")
        .arg("rl.*")
        .query(&mut s.conn())
        .unwrap();
    let mut pairs: Vec<(String, String)> = got
        .chunks_exact(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    pairs.sort();
    assert_eq!(
        pairs,
        [
            ("rl.config-resetstat".to_string(), "0".to_string()),
            ("rl.share-max-tenants".to_string(), "7".to_string()),
            ("rl.sliding-max-limit".to_string(), "42".to_string()),
            ("rl.top-size".to_string(), "128".to_string()),
        ]
    );
}

/// `rl.config-resetstat 1`: CONFIG RESETSTAT zeroes INFO rl's counters, unless the
/// caller's ACL rules refuse it; off (the default), it leaves them. Needs Redis 7.2+
/// or Valkey (the filter must know who sends the command): on 7.0 the module says
/// so in the log and leaves them.
#[test]
fn config_resetstat_zeroes_the_counters_when_asked_to() {
    if module_only("INFO rl is the module's") {
        return;
    }
    let allowed = |c: &mut Connection| info_field(c, "rl", "rl_fixed_allowed");
    let two_calls = |c: &mut Connection| {
        for _ in 0..2 {
            rl(c, &["RL.FIXED", "k", "10", "1h"]);
        }
    };
    let resetstat = |c: &mut Connection| cmd("CONFIG").arg("RESETSTAT").query::<()>(c);

    // Off by default: CONFIG RESETSTAT leaves them.
    let s = Server::start();
    let mut c = s.conn();
    two_calls(&mut c);
    resetstat(&mut c).expect("CONFIG RESETSTAT");
    assert_eq!(allowed(&mut c), 2);
    drop(s);

    let s = Server::loading_module(&["config-resetstat", "1"]);
    let mut c = s.conn();
    let version = info_str(&mut c, "server", "redis_version");
    if s.log().contains("rl.config-resetstat needs Redis 7.2") {
        assert!(version.starts_with("7.0."), "refused on {version}");
        eprintln!("skipped: CONFIG RESETSTAT cannot zero RL's counters on Redis {version}");
        return;
    }
    two_calls(&mut c);
    // Set at load only.
    let set: redis::RedisResult<()> = cmd("CONFIG")
        .arg(&["SET", "rl.config-resetstat", "0"])
        .query(&mut c);
    assert!(set.is_err(), "CONFIG SET of a load-time setting");
    let got: Vec<String> = cmd("CONFIG")
        .arg(&["GET", "rl.config-resetstat"])
        .query(&mut c)
        .expect("CONFIG GET");
    assert_eq!(got, ["rl.config-resetstat", "1"]);

    // A user who may not run it resets nothing.
    let _: () = cmd("ACL")
        .arg(&["SETUSER", "app", "on", ">pw", "+@all", "-config|resetstat"])
        .query(&mut c)
        .expect("ACL SETUSER");
    let mut app = s.conn();
    let _: () = cmd("AUTH")
        .arg(&["app", "pw"])
        .query(&mut app)
        .expect("AUTH");
    let refused = resetstat(&mut app).expect_err("NOPERM");
    assert_eq!(refused.code(), Some("NOPERM"), "{refused}");
    assert_eq!(allowed(&mut c), 2);

    // Any case, as the server takes it; the calls after it count from zero.
    cmd("config")
        .arg("resetStat")
        .query::<()>(&mut c)
        .expect("CONFIG RESETSTAT");
    assert_eq!(allowed(&mut c), 0);
    // The server's own counters too (the test's calls before it were more).
    assert!(info_field(&mut c, "stats", "total_commands_processed") < 10);
    rl(&mut c, &["RL.FIXED", "k", "10", "1h"]);
    assert_eq!(allowed(&mut c), 1);
    // Other two-word commands are left alone.
    let _: String = cmd("CONFIG")
        .arg("RESETSTATS")
        .query(&mut c)
        .unwrap_or_default();
    let _: redis::Value = cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory")
        .query(&mut c)
        .expect("CONFIG GET");
    assert_eq!(allowed(&mut c), 1);
}
