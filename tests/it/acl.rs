//! ACL users and RL commands, on every server.
//!
//! Contract: the key is declared (read-write), so ACL key patterns apply to it; a
//! module command on 7.0 belongs to no ACL category, so users get RL commands by
//! name (`+rl.fixed`), by `+@all`, or, on servers that let modules set categories
//! (7.2+), through them. Errors are asserted by code word (`NOPERM`); the texts
//! differ across versions. What a server supports is probed (COMMAND INFO), never
//! read from a version string.

use crate::common::*;

use std::collections::HashMap;

const PASSWORD: &str = "pw";

/// ACL rules: the key pattern and every RL command by name.
fn rl_rules(key_pattern: &str) -> Vec<String> {
    let mut rules = vec![key_pattern.to_string()];
    rules.extend(
        COMMANDS
            .iter()
            .map(|c| format!("+{}", c.name.to_lowercase())),
    );
    rules
}

/// Each command's arguments on its own key `<prefix><command>`, with `cost`, at a
/// limit (capacity) of 3 per hour.
fn calls(prefix: &str, cost: Option<u64>) -> Vec<Vec<String>> {
    COMMANDS
        .iter()
        .map(|c| c.args(&format!("{prefix}{}", c.name), &c.per(3, "1h"), cost))
        .collect()
}

fn as_bytes(args: &[String]) -> Vec<&[u8]> {
    args.iter().map(|a| a.as_bytes()).collect()
}

/// Creates `user` with the password and the given rules.
fn set_user(admin: &mut Connection, user: &str, rules: &[impl AsRef<str>]) {
    let rules: Vec<&str> = rules.iter().map(AsRef::as_ref).collect();
    let _: () = cmd("ACL")
        .arg("SETUSER")
        .arg(user)
        .arg("on")
        .arg(format!(">{PASSWORD}"))
        .arg(&rules)
        .query(admin)
        .unwrap_or_else(|e| panic!("ACL SETUSER {user} {rules:?}: {e}"));
}

/// A connection authenticated as `user`.
fn login(s: &Server, user: &str) -> Connection {
    let mut c = s.conn();
    let _: () = cmd("AUTH")
        .arg(user)
        .arg(PASSWORD)
        .query(&mut c)
        .expect("AUTH");
    c
}

/// The newest ACL LOG entry as (reason, object, username).
fn last_denial(admin: &mut Connection) -> (String, String, String) {
    let entries: Vec<HashMap<String, redis::Value>> =
        cmd("ACL").arg("LOG").arg(1).query(admin).expect("ACL LOG");
    let entry = entries.first().expect("an ACL LOG entry");
    let text = |field: &str| -> String {
        let value = entry
            .get(field)
            .unwrap_or_else(|| panic!("no {field} in {entry:?}"));
        redis::from_redis_value(value).expect("a string")
    };
    (text("reason"), text("object"), text("username"))
}

/// Asserts that `user` is refused `args` with NOPERM for the `reason` (`key` or
/// `command`) naming `object`, and that nothing was written.
fn assert_denied(s: &Server, user: &str, args: &[String], reason: &str, object: &str) {
    let mut admin = s.conn();
    let err = error_of(&mut login(s, user), &as_bytes(args));
    assert!(err.starts_with("NOPERM "), "{user} {args:?}: {err}");
    let (why, what, who) = last_denial(&mut admin);
    assert_eq!(
        (why.as_str(), what.to_lowercase(), who.as_str()),
        (reason, object.to_lowercase(), user),
        "ACL LOG for {user} {args:?}"
    );
    assert!(!exists(&mut admin, &args[1]), "{args:?} created its key");
}

/// Asserts that `user` may run every RL command on `<prefix><command>` keys.
fn assert_allowed(s: &Server, user: &str, prefix: &str) {
    let mut c = login(s, user);
    for args in calls(prefix, None) {
        let r = command(&args[0]).run(&mut c, &args);
        assert_eq!((r.allowed, r.remaining), (1, 2), "{user} {args:?}");
        assert!(exists(&mut s.conn(), &args[1]), "{args:?} wrote its key");
    }
}

/// The ACL categories the server gives `command` (COMMAND INFO), lowercase; empty
/// where modules cannot set categories (Redis 7.0).
fn categories_of(c: &mut Connection, command: &str) -> Vec<String> {
    let info: Vec<Value> = cmd("COMMAND")
        .arg("INFO")
        .arg(command)
        .query(c)
        .expect("COMMAND INFO");
    let Some(Value::Array(entry)) = info.first() else {
        panic!("COMMAND INFO {command}: {info:?}");
    };
    let categories: Vec<String> = redis::from_redis_value(&entry[6])
        .unwrap_or_else(|e| panic!("COMMAND INFO {command} categories {:?}: {e}", entry[6]));
    categories.iter().map(|c| c.to_lowercase()).collect()
}

#[test]
fn a_user_with_the_rl_commands_and_an_rl_key_pattern_can_limit_rl_keys() {
    if module_only("ACL rules here name the module's commands and categories (the library is called with FCALL)") {
        return;
    }
    let s = Server::start();
    set_user(&mut s.conn(), "limiter", &rl_rules("~rl:*"));
    assert_allowed(&s, "limiter", "rl:");
}

#[test]
fn a_user_with_an_rl_key_pattern_gets_noperm_on_other_keys_and_writes_nothing() {
    if module_only("ACL rules here name the module's commands and categories (the library is called with FCALL)") {
        return;
    }
    let s = Server::start();
    set_user(&mut s.conn(), "limiter", &rl_rules("~rl:*"));
    for cost in [None, Some(0), Some(1)] {
        for args in calls("secret:", cost) {
            assert_denied(&s, "limiter", &args, "key", &args[1]);
        }
    }
    let keys: Vec<String> = cmd("KEYS").arg("*").query(&mut s.conn()).expect("KEYS");
    assert!(keys.is_empty(), "{keys:?}");
}

#[test]
fn a_user_without_the_rl_commands_gets_noperm_for_the_command() {
    if module_only("ACL rules here name the module's commands and categories (the library is called with FCALL)") {
        return;
    }
    let s = Server::start();
    let mut admin = s.conn();
    set_user(&mut admin, "reader", &["~*", "+@read"]);
    for args in calls("rl:", None) {
        assert_denied(&s, "reader", &args, "command", &args[0]);
    }
    // `+@all` includes module commands; one can be taken away by name.
    for taken in COMMANDS {
        let user = format!("no-{}", taken.short);
        let minus = format!("-{}", taken.name.to_lowercase());
        set_user(&mut admin, &user, &["~*", "+@all", &minus]);
        let mut c = login(&s, &user);
        for args in calls(&format!("{user}:"), None) {
            if taken.is(&args[0]) {
                assert_denied(&s, &user, &args, "command", &args[0]);
            } else {
                let r = command(&args[0]).run(&mut c, &args);
                assert_eq!(r.allowed, 1, "{user} {args:?}");
            }
        }
    }
}

#[test]
fn write_category_includes_rl_commands_only_where_modules_can_set_categories() {
    if module_only("ACL rules here name the module's commands and categories (the library is called with FCALL)") {
        return;
    }
    let s = Server::start();
    let mut admin = s.conn();
    set_user(&mut admin, "writer", &["~*", "+@write", "+@read"]);
    let in_write: Vec<&str> = COMMANDS
        .iter()
        .map(|c| c.name)
        .filter(|name| categories_of(&mut admin, name).contains(&"@write".to_string()))
        .collect();
    // Whether ACL CAT lists module commands, and in which case, differs between
    // servers (7.2, 7.4 and Valkey 8.0 list none; 8.0 and Valkey 8.1+ list
    // `RL.FIXED`): when it lists them it lists all of them, in any case.
    let write: Vec<String> = cmd("ACL")
        .arg("CAT")
        .arg("write")
        .query(&mut admin)
        .expect("ACL CAT write");
    let mut listed: Vec<String> = write
        .iter()
        .map(|c| c.to_lowercase())
        .filter(|c| c.starts_with("rl.") || COMMANDS.iter().any(|x| x.is(c)))
        .collect();
    listed.sort();
    if in_write.is_empty() {
        // Redis 7.0: module commands have no category, `+@write` does not grant them.
        assert!(listed.is_empty(), "{listed:?}");
        for args in calls("rl:", None) {
            assert_denied(&s, "writer", &args, "command", &args[0]);
        }
    } else {
        assert_eq!(in_write.len(), COMMANDS.len(), "in @write: {in_write:?}");
        // The table's commands, and those outside it (RL.ALL, the leases).
        let mut all: Vec<String> = COMMANDS.iter().map(|c| c.name.to_lowercase()).collect();
        all.extend(OUTSIDE_TABLE.iter().map(|c| c.to_lowercase()));
        all.sort();
        assert!(
            listed.is_empty() || listed == all,
            "ACL CAT write lists {listed:?}"
        );
        assert_allowed(&s, "writer", "rl:");
    }
}

#[test]
fn rl_keys_need_both_read_and_write_key_permissions() {
    if module_only("ACL rules here name the module's commands and categories (the library is called with FCALL)") {
        return;
    }
    let s = Server::start();
    let mut admin = s.conn();
    for (user, pattern) in [("read-only", "%R~rl:*"), ("write-only", "%W~rl:*")] {
        set_user(&mut admin, user, &rl_rules(pattern));
        for args in calls("rl:", None) {
            assert_denied(&s, user, &args, "key", &args[1]);
        }
    }
    set_user(&mut admin, "read-write", &rl_rules("%RW~rl:*"));
    assert_allowed(&s, "read-write", "rl:");
}

#[test]
fn rl_all_is_held_to_the_key_pattern_on_every_key() {
    if module_only("ACL rules here name the module's commands (the library is called with FCALL)") {
        return;
    }
    let s = Server::start();
    let mut admin = s.conn();
    set_user(&mut admin, "app", &["~rl:*", "+rl.all"]);
    let line = |a: &str, b: &str| -> Vec<String> {
        strings(&[
            "RL.ALL", "2", a, b, "FIXED", "3", "1h", "GCRA", "3", "1", "1h",
        ])
    };
    let mut c = login(&s, "app");
    let replies: Vec<Vec<i64>> = command_of(&line("rl:a", "rl:b"))
        .query(&mut c)
        .expect("RL.ALL");
    assert_eq!(replies[0][0], 1, "{replies:?}");
    assert!(exists(&mut admin, "rl:a") && exists(&mut admin, "rl:b"));
    // The second key is outside the pattern: refused, and the first untouched.
    let before = snapshot(&mut admin, b"rl:a");
    for (a, b, denied) in [
        ("rl:a", "other:b", "other:b"),
        ("other:a", "rl:b", "other:a"),
    ] {
        let err = error_of(&mut c, &as_bytes(&line(a, b)));
        assert!(err.starts_with("NOPERM "), "{err}");
        let (why, what, who) = last_denial(&mut admin);
        assert_eq!(
            (why.as_str(), what.as_str(), who.as_str()),
            ("key", denied, "app")
        );
    }
    assert_eq!(snapshot(&mut admin, b"rl:a"), before);
    assert!(!exists(&mut admin, "other:a") && !exists(&mut admin, "other:b"));
}

#[test]
fn leases_are_held_to_the_key_pattern() {
    if module_only("ACL rules here name the module's commands (the library is called with FCALL)") {
        return;
    }
    let s = Server::start();
    let mut admin = s.conn();
    set_user(&mut admin, "app", &["~rl:*", "+rl.acquire", "+rl.release"]);
    let mut c = login(&s, "app");
    let r = rl(&mut c, &["RL.ACQUIRE", "rl:jobs", "2", "1h", "job-1"]);
    assert_eq!((r.allowed, r.remaining), (1, 1));
    for args in [
        strings(&["RL.ACQUIRE", "secret:jobs", "2", "1h", "job-1"]),
        strings(&["RL.RELEASE", "secret:jobs", "job-1"]),
    ] {
        assert_denied(&s, "app", &args, "key", &args[1]);
    }
    let released: i64 = command_of(&["RL.RELEASE", "rl:jobs", "job-1"])
        .query(&mut c)
        .expect("RL.RELEASE");
    assert_eq!(released, 1);
    // Where modules set categories (7.2+): the categories every RL command has
    // (@write; @ratelimit where COMMAND INFO lists a module's own category, which
    // 7.2 does not), RL.RELEASE also @fast (it is O(log N) and must be cheap at
    // maxmemory), RL.ACQUIRE not.
    let acquire = categories_of(&mut admin, "RL.ACQUIRE");
    let release = categories_of(&mut admin, "RL.RELEASE");
    let fixed = categories_of(&mut admin, "RL.FIXED");
    if !fixed.is_empty() {
        let has = |cats: &[String], c: &str| cats.iter().any(|x| x == c);
        assert!(has(&fixed, "@write"), "{fixed:?}");
        for c in ["@write", "@ratelimit"]
            .into_iter()
            .filter(|c| has(&fixed, c))
        {
            assert!(
                has(&acquire, c) && has(&release, c),
                "{c}: {acquire:?} {release:?}"
            );
        }
        assert!(
            has(&release, "@fast") && !has(&acquire, "@fast"),
            "{acquire:?} {release:?}"
        );
    } else {
        assert!(acquire.is_empty() && release.is_empty());
    }
    // Both need read and write permission on the key, like every RL command.
    set_user(
        &mut admin,
        "reader",
        &["%R~rl:*", "+rl.acquire", "+rl.release"],
    );
    let args = strings(&["RL.RELEASE", "rl:jobs", "job-1"]);
    assert_denied(&s, "reader", &args, "key", &args[1]);
}
