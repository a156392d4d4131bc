//! vectors/vectors.json: every documented vector, as data.

use rl_core::keyspace::Value;
use serde_json::Value as Json;

/// One call of a vector: when, the command line, and the reply it must get.
pub struct Call {
    pub t: i64,
    pub argv: Vec<Vec<u8>>,
    pub reply: Result<Value, String>,
}

pub struct Vector {
    pub id: String,
    pub calls: Vec<Call>,
}

/// Server time of `t = 0`.
pub fn epoch_ms() -> i64 {
    file()["epoch_ms"].as_i64().expect("epoch_ms")
}

fn file() -> Json {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../vectors/vectors.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A reply as the file writes it: an array of integers (or of arrays), an integer,
/// a string (a bulk string, or an error line when it starts with ERR or WRONGTYPE),
/// or null.
fn reply(j: &Json) -> Result<Value, String> {
    Ok(match j {
        Json::Null => Value::Nil,
        Json::Number(n) => Value::Int(n.as_i64().expect("an integer reply")),
        Json::String(s) if s.starts_with("ERR") || s.starts_with("WRONGTYPE") => {
            return Err(s.clone())
        }
        Json::String(s) if s == "OK" => Value::Status("OK".into()),
        Json::String(s) => Value::Bulk(s.clone().into_bytes()),
        Json::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| reply(i).expect("no error inside an array"))
                .collect(),
        ),
        other => panic!("not a reply: {other}"),
    })
}

/// Every vector in the file.
pub fn all() -> Vec<Vector> {
    file()["vectors"]
        .as_array()
        .expect("vectors")
        .iter()
        .map(|v| Vector {
            id: v["id"].as_str().expect("id").to_string(),
            calls: v["calls"]
                .as_array()
                .expect("calls")
                .iter()
                .map(|c| Call {
                    t: c["t"].as_i64().expect("t"),
                    argv: c["call"]
                        .as_array()
                        .expect("call")
                        .iter()
                        .map(|a| a.as_str().expect("an argument").as_bytes().to_vec())
                        .collect(),
                    reply: reply(&c["reply"]),
                })
                .collect(),
        })
        .collect()
}
