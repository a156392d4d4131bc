//! The command list (rl_core::commands::COMMANDS, the table's rows) is the one list
//! of commands: the module registers exactly its rows, the Functions library exactly
//! its functions, and the tests' own rows cover every command.

use crate::common::*;

use rl_core::commands::COMMANDS;

#[test]
fn the_module_registers_exactly_the_table() {
    if module_only("the module's commands") {
        return;
    }
    let s = Server::start();
    let mut c = s.conn();
    let listed: Vec<String> = cmd("COMMAND")
        .arg("LIST")
        .arg("FILTERBY")
        .arg("MODULE")
        .arg("rl")
        .query(&mut c)
        .unwrap();
    // The table's rows, and the commands on node-wide state beside it.
    let mut listed: Vec<String> = listed
        .iter()
        .filter(|n| !is_node_command(n))
        .map(|n| n.to_uppercase())
        .collect();
    listed.sort();
    let mut names: Vec<String> = COMMANDS.iter().map(|c| c.name_str().to_string()).collect();
    names.sort();
    assert_eq!(listed, names);
    // commands.json, which clients read, says the same, with each command's arity.
    let spec = commands_json();
    let mut described: Vec<String> = spec.iter().map(|c| c.0.clone()).collect();
    described.sort();
    assert_eq!(listed, described, "commands.json against COMMAND LIST");
    for (name, arity, _) in spec {
        let info: Vec<redis::Value> = cmd("COMMAND").arg("INFO").arg(&name).query(&mut c).unwrap();
        let entry = array(&info[0]);
        assert_eq!(
            entry[1],
            redis::Value::Int(arity),
            "{name}'s arity in commands.json"
        );
    }
}

/// commands.json's commands: name, arity and library function.
fn commands_json() -> Vec<(String, i64, Option<String>)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/commands.json");
    let text = std::fs::read_to_string(path).expect("commands.json at the repository root");
    let spec: serde_json::Value = serde_json::from_str(&text).expect("commands.json is JSON");
    assert_eq!(
        spec["version"],
        env!("CARGO_PKG_VERSION"),
        "commands.json's version"
    );
    spec["commands"]
        .as_array()
        .expect("a commands array")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().expect("a name").to_string(),
                c["arity"].as_i64().expect("an arity"),
                c["function"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn the_library_has_exactly_the_table_functions() {
    let s = Server::with(Options {
        without_module: true,
        ..Options::default()
    });
    let mut c = s.conn();
    load_library(&mut c);
    let list: redis::Value = cmd("FUNCTION").arg("LIST").query(&mut c).unwrap();
    let mut functions = function_names(&list);
    functions.sort();
    // A library without rl_share yet (RL_LIBRARY) is held to the rest.
    let lacks = |f: &&str| library_source_lacks(f);
    let mut expected: Vec<String> = COMMANDS
        .iter()
        .filter_map(|c| c.function)
        .filter(|f| !lacks(f))
        .chain(["rl_version"])
        .map(str::to_string)
        .collect();
    expected.sort();
    assert_eq!(functions, expected);
    let mut described: Vec<String> = commands_json()
        .into_iter()
        .filter_map(|c| c.2)
        .filter(|f| !library_source_lacks(f))
        .chain(["rl_version".to_string()])
        .collect();
    described.sort();
    assert_eq!(functions, described, "commands.json against FUNCTION LIST");
}

/// The `name` of every function in a FUNCTION LIST reply: libraries as flat
/// (field, value) arrays, `functions` an array of such arrays.
fn function_names(v: &redis::Value) -> Vec<String> {
    let mut out = Vec::new();
    for library in array(v) {
        let functions = field(library, "functions").expect("a library has functions");
        for f in array(functions) {
            let name = field(f, "name")
                .and_then(as_text)
                .expect("a function's name");
            out.push(name);
        }
    }
    out
}

fn array(v: &redis::Value) -> &[redis::Value] {
    match v {
        redis::Value::Array(items) => items,
        other => panic!("not an array: {other:?}"),
    }
}

fn as_text(v: &redis::Value) -> Option<String> {
    match v {
        redis::Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        redis::Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

/// The value after `name` in a flat (field, value) array.
fn field<'v>(v: &'v redis::Value, name: &str) -> Option<&'v redis::Value> {
    array(v)
        .chunks(2)
        .find(|pair| as_text(&pair[0]).as_deref() == Some(name))
        .and_then(|pair| pair.get(1))
}

#[test]
fn the_test_rows_cover_every_command() {
    let rows: Vec<&str> = EVERY_ROW.iter().map(|c| c.name).collect();
    for command in COMMANDS {
        let name = command.name_str();
        assert!(
            rows.contains(&name) || OUTSIDE_TABLE.contains(&name),
            "{name} has no row in tests/it/common/commands.rs and no file of its own"
        );
    }
    for row in EVERY_ROW {
        assert_eq!(
            row.params.iter().map(|p| p.name).collect::<Vec<_>>(),
            row.row()
                .params()
                .iter()
                .map(|a| a.name.to_str().unwrap())
                .collect::<Vec<_>>(),
            "{}: the test row's parameters are the table's",
            row.name
        );
    }
}
