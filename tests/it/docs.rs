//! The documentation, run: every redis-cli session in README.md and docs/*.md is
//! replayed against a real server and must print what the page prints.
//!
//! A session is a fenced code block with lines `127.0.0.1:6379> CMD` (or
//! `127.0.0.1:6379(TX)> CMD` inside MULTI), each followed by redis-cli's output.
//! One fresh server per file (the module and the Functions library both loaded)
//! runs the file's sessions in order. No two sessions, on one page or on two, name
//! the same key: a reader who pastes README's session, then a recipe's, gets the
//! replies both pages show. Replies are printed as redis-cli prints them in a
//! terminal (RESP2).
//!
//! Conventions (docs/testing.md#the-documentation-test):
//! - `  # text` at the end of an output line is a comment, not compared;
//! - a comment that starts with `varies` (`5) (integer) 41337  # varies: the clock`)
//!   is the one wildcard: the value on that line may differ (its kind and its place
//!   in the reply may not). Keep it for values that follow the clock (epoch-aligned
//!   windows, stored times); show sequences in a MULTI/EXEC instead;
//! - a comment `# or: <line>` gives the one other line a server may print there, for
//!   a reply whose text differs between servers: the line must be one or the other,
//!   exactly (`make compat` replays the pages on every supported server).
//!
//! Redis 7.0 runs a MULTI on the live clock, so a transaction that crosses a
//! millisecond can print other times: a file that does not match is replayed on a
//! new server, up to three times, before it fails.
//!
//! Also: links between the pages (and the code's citations of the reference by
//! anchor) resolve; every table marked `<!-- commands -->` names every command of the module
//! on keys (`COMMAND LIST FILTERBY MODULE rl`, RL.TOP aside), and every table marked `<!-- functions -->`
//! every function of the library (`FUNCTION LIST LIBRARYNAME rl`).

use crate::common::*;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};

const PROMPT: &str = "127.0.0.1:6379> ";
const TX_PROMPT: &str = "127.0.0.1:6379(TX)> ";
const ATTEMPTS: usize = 3;

/// The pages: README.md and every docs/*.md, in a stable order.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    let mut all = vec![root.join("README.md")];
    all.extend(docs);
    all
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// --- sessions in markdown --------------------------------------------------------

/// One command typed at the prompt and the output the page shows for it.
#[derive(Debug)]
struct Step {
    line: usize,
    in_tx_prompt: bool,
    command: String,
    expected: Vec<String>,
}

#[derive(Debug)]
struct Session {
    steps: Vec<Step>,
}

fn prompt_of(line: &str) -> Option<(bool, &str)> {
    if let Some(rest) = line.strip_prefix(PROMPT) {
        return Some((false, rest));
    }
    line.strip_prefix(TX_PROMPT).map(|rest| (true, rest))
}

/// The redis-cli sessions of a page: fenced blocks with at least one prompt line.
fn sessions(markdown: &str) -> Vec<Session> {
    let mut out = Vec::new();
    let mut block: Option<Vec<(usize, &str)>> = None;
    for (i, line) in markdown.lines().enumerate() {
        let n = i + 1;
        if line.trim_start().starts_with("```") {
            match block.take() {
                None => block = Some(Vec::new()),
                Some(lines) => {
                    if let Some(s) = session_of(&lines) {
                        out.push(s);
                    }
                }
            }
        } else if let Some(lines) = block.as_mut() {
            lines.push((n, line));
        }
    }
    out
}

fn session_of(lines: &[(usize, &str)]) -> Option<Session> {
    if !lines.iter().any(|(_, l)| prompt_of(l).is_some()) {
        return None;
    }
    let mut steps: Vec<Step> = Vec::new();
    for &(n, l) in lines {
        match prompt_of(l) {
            Some((tx, command)) => steps.push(Step {
                line: n,
                in_tx_prompt: tx,
                command: command.to_string(),
                expected: Vec::new(),
            }),
            None => match steps.last_mut() {
                Some(step) => step.expected.push(l.to_string()),
                None => panic!("line {n}: output before the first prompt of the session"),
            },
        }
    }
    for s in &mut steps {
        while s.expected.last().is_some_and(|l| l.trim().is_empty()) {
            s.expected.pop();
        }
    }
    Some(Session { steps })
}

/// Splits a command line as redis-cli does (sdssplitargs): spaces separate
/// arguments; "…" takes escapes (\n \r \t \b \a \\ \" \xHH); '…' takes \'.
fn split_args(line: &str) -> Result<Vec<Vec<u8>>, String> {
    let b = line.as_bytes();
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == b.len() {
            return Ok(args);
        }
        let mut arg = Vec::new();
        match b[i] {
            b'"' => {
                i += 1;
                loop {
                    match b.get(i) {
                        None => return Err(format!("unbalanced quotes in {line}")),
                        Some(b'"') => break,
                        Some(b'\\') if b.get(i + 1) == Some(&b'x') && i + 3 < b.len() => {
                            let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap_or("");
                            let v = u8::from_str_radix(hex, 16)
                                .map_err(|_| format!("bad \\x escape in {line}"))?;
                            arg.push(v);
                            i += 4;
                            continue;
                        }
                        Some(b'\\') if i + 1 < b.len() => {
                            arg.push(match b[i + 1] {
                                b'n' => b'\n',
                                b'r' => b'\r',
                                b't' => b'\t',
                                b'b' => 8,
                                b'a' => 7,
                                c => c,
                            });
                            i += 2;
                            continue;
                        }
                        Some(&c) => arg.push(c),
                    }
                    i += 1;
                }
                i += 1;
            }
            b'\'' => {
                i += 1;
                loop {
                    match b.get(i) {
                        None => return Err(format!("unbalanced quotes in {line}")),
                        Some(b'\'') => break,
                        Some(b'\\') if b.get(i + 1) == Some(&b'\'') => {
                            arg.push(b'\'');
                            i += 2;
                            continue;
                        }
                        Some(&c) => arg.push(c),
                    }
                    i += 1;
                }
                i += 1;
            }
            _ => {
                while i < b.len() && !b[i].is_ascii_whitespace() {
                    arg.push(b[i]);
                    i += 1;
                }
            }
        }
        if i < b.len() && !b[i].is_ascii_whitespace() {
            return Err(format!(
                "a closing quote must be followed by a space in {line}"
            ));
        }
        args.push(arg);
    }
}

// --- a RESP2 client that keeps every reply as the server sent it ------------------

enum Resp {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Resp>>),
}

struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Client {
    fn new(server: &Server) -> Client {
        let stream = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
        stream
            .set_read_timeout(Some(REPLY_TIMEOUT))
            .expect("timeout");
        Client {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
        }
    }

    fn call(&mut self, args: &[Vec<u8>]) -> Resp {
        let mut req = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            req.extend(format!("${}\r\n", a.len()).bytes());
            req.extend(a);
            req.extend(b"\r\n");
        }
        self.writer.write_all(&req).expect("send");
        self.reply()
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.reader.read_line(&mut l).expect("reply line");
        assert!(l.ends_with("\r\n"), "truncated reply {l:?}");
        l.truncate(l.len() - 2);
        l
    }

    fn reply(&mut self) -> Resp {
        let l = self.line();
        let (kind, rest) = l.split_at(1);
        let number = || rest.parse::<i64>().expect("a RESP length");
        match kind {
            "+" => Resp::Status(rest.to_string()),
            "-" => Resp::Error(rest.to_string()),
            ":" => Resp::Int(number()),
            "$" if number() < 0 => Resp::Bulk(None),
            "$" => {
                let mut data = vec![0; number() as usize + 2];
                std::io::Read::read_exact(&mut self.reader, &mut data).expect("bulk");
                data.truncate(data.len() - 2);
                Resp::Bulk(Some(data))
            }
            "*" if number() < 0 => Resp::Array(None),
            "*" => Resp::Array(Some((0..number()).map(|_| self.reply()).collect())),
            _ => panic!("not a RESP2 reply: {l:?}"),
        }
    }
}

/// A bulk string as redis-cli quotes it (sdscatrepr).
fn quoted(s: &[u8]) -> String {
    let mut out = String::from("\"");
    for &c in s {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            c if c.is_ascii_graphic() || c == b' ' => out.push(c as char),
            c => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
    out
}

/// A reply as redis-cli prints it in a terminal (cliFormatReplyTTY).
fn tty(r: &Resp, prefix: &str) -> String {
    match r {
        Resp::Status(s) => format!("{s}\n"),
        Resp::Error(e) => format!("(error) {e}\n"),
        Resp::Int(i) => format!("(integer) {i}\n"),
        Resp::Bulk(None) | Resp::Array(None) => "(nil)\n".to_string(),
        Resp::Bulk(Some(b)) => format!("{}\n", quoted(b)),
        Resp::Array(Some(items)) if items.is_empty() => "(empty array)\n".to_string(),
        Resp::Array(Some(items)) => {
            let width = items.len().to_string().len();
            let inner = format!("{prefix}{}", " ".repeat(width + 2));
            let mut out = String::new();
            for (i, item) in items.iter().enumerate() {
                let lead = if i == 0 { "" } else { prefix };
                out.push_str(&format!("{lead}{:>width$}) ", i + 1));
                out.push_str(&tty(item, &inner));
            }
            out
        }
    }
}

// --- comparing -------------------------------------------------------------------

/// An expected line without its comment, and what the comment allows.
struct Expected<'a> {
    line: &'a str,
    /// `# varies…`: any value of the same kind at the same place.
    varies: bool,
    /// `# or: <line>`: this line instead, exactly (a reply that differs by server).
    or: Option<&'a str>,
}

fn expectation(line: &str) -> Expected<'_> {
    let Some(at) = line.find("  # ") else {
        return Expected {
            line: line.trim_end(),
            varies: false,
            or: None,
        };
    };
    let comment = line[at + 4..].trim_start();
    Expected {
        line: line[..at].trim_end(),
        varies: comment.starts_with("varies"),
        or: comment.strip_prefix("or: ").map(str::trim),
    }
}

/// A line cut before its value: the indices (`1) 2) `) and the value's kind.
fn shape(line: &str) -> String {
    let mut rest = line;
    let mut lead = String::new();
    loop {
        let t = rest.trim_start();
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && t[digits..].starts_with(") ") {
            lead.push_str(&rest[..rest.len() - t.len() + digits + 2]);
            rest = &t[digits + 2..];
        } else {
            break;
        }
    }
    let kind = if rest.starts_with("(integer) ") {
        "(integer)"
    } else if rest.starts_with('"') {
        "\"string\""
    } else {
        rest
    };
    format!("{lead}{kind}")
}

fn matches(expected: &[String], actual: &str) -> bool {
    let actual: Vec<&str> = actual.lines().collect();
    actual.len() == expected.len()
        && expected.iter().zip(&actual).all(|(e, a)| {
            let e = expectation(e);
            if e.varies {
                shape(e.line) == shape(a)
            } else {
                e.line == *a || e.or == Some(*a)
            }
        })
}

// --- running ---------------------------------------------------------------------

fn start() -> Server {
    let server = Server::start();
    let mut c = server.conn();
    load_library(&mut c);
    server
}

/// Runs a page's sessions; the first mismatch, described.
fn run_page(path: &Path, sessions: &[Session]) -> Result<(), String> {
    let server = start();
    let mut c = Client::new(&server);
    for s in sessions {
        let mut in_tx = false;
        for step in &s.steps {
            let where_ = format!("{}:{}", path.display(), step.line);
            if step.in_tx_prompt != in_tx {
                return Err(format!(
                    "{where_}: the prompt should be {:?} here",
                    if in_tx { TX_PROMPT } else { PROMPT }
                ));
            }
            let args = split_args(&step.command).map_err(|e| format!("{where_}: {e}"))?;
            let reply = c.call(&args);
            let verb = args
                .first()
                .map(|a| String::from_utf8_lossy(a).to_uppercase())
                .unwrap_or_default();
            let ok = matches!(reply, Resp::Status(_));
            if verb == "MULTI" && ok {
                in_tx = true;
            } else if verb == "EXEC" || verb == "DISCARD" {
                in_tx = false;
            }
            let printed = tty(&reply, "");
            if !matches(&step.expected, &printed) {
                return Err(format!(
                    "{where_}: {}\n--- the page shows:\n{}\n--- the server answered:\n{}",
                    step.command,
                    step.expected.join("\n"),
                    printed.trim_end()
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn every_redis_cli_session_in_the_docs_prints_what_the_page_shows() {
    if module_only("the pages show the module's commands; their FCALL sessions run in the module pass, with the library loaded beside it") {
        return;
    }
    let mut failures = Vec::new();
    let mut ran = 0;
    for path in pages() {
        let sessions = sessions(&read(&path));
        if sessions.is_empty() {
            continue;
        }
        let mut last = Ok(());
        for _ in 0..ATTEMPTS {
            last = run_page(&path, &sessions);
            if last.is_ok() {
                break;
            }
        }
        ran += sessions.len();
        if let Err(e) = last {
            failures.push(e);
        }
    }
    assert!(ran > 0, "no redis-cli session found in the docs");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The keys a command names, as the server finds them (`COMMAND GETKEYS`, which
/// knows RL.ALL's and FCALL's `numkeys`); none for a command without keys (MULTI,
/// CONFIG) or with the wrong number of arguments (an error that touches no key).
fn keys_of(c: &mut Client, command: &[Vec<u8>]) -> Vec<String> {
    let mut ask = args(&["COMMAND", "GETKEYS"]);
    ask.extend(command.iter().cloned());
    strings_of(c.call(&ask))
}

#[test]
fn no_two_sessions_in_the_docs_share_a_key() {
    if module_only("the keys of the module's commands come from the module's key specs") {
        return;
    }
    // A reader pastes sessions in any order, from any page (README, then a recipe):
    // a session that reused another's key would print other replies than its page.
    let server = start();
    let mut c = Client::new(&server);
    let mut owner: std::collections::HashMap<String, String> = Default::default();
    let mut shared = Vec::new();
    let mut found = 0;
    for path in pages() {
        for s in sessions(&read(&path)) {
            let Some(first) = s.steps.first() else {
                continue;
            };
            let session = format!("{}:{}", path.display(), first.line);
            for step in &s.steps {
                let Ok(command) = split_args(&step.command) else {
                    continue;
                };
                for key in keys_of(&mut c, &command) {
                    found += 1;
                    match owner.get(&key) {
                        Some(other) if *other != session => shared.push(format!(
                            "key {key:?}: the session at {session} (line {}) and the one at {other}",
                            step.line
                        )),
                        Some(_) => {}
                        None => {
                            owner.insert(key, session.clone());
                        }
                    }
                }
            }
        }
    }
    assert!(found > 20, "only {found} keys found in the docs' sessions");
    assert!(shared.is_empty(), "{}", shared.join("\n"));
}

/// The tables (or fenced blocks, such as an ACL recipe) that follow a marker line
/// (`<!-- commands -->`), as text.
fn marked_tables(markdown: &str, marker: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.trim() != marker {
            continue;
        }
        let mut rest = lines[i + 1..]
            .iter()
            .skip_while(|l| l.trim().is_empty())
            .peekable();
        let fenced = rest
            .peek()
            .is_some_and(|l| l.trim_start().starts_with("```"));
        let table: Vec<&str> = if fenced {
            rest.skip(1)
                .take_while(|l| !l.trim_start().starts_with("```"))
                .copied()
                .collect()
        } else {
            rest.take_while(|l| l.trim_start().starts_with('|'))
                .copied()
                .collect()
        };
        assert!(
            !table.is_empty(),
            "line {}: {marker} is not followed by a table or a block",
            i + 1
        );
        out.push((i + 1, table.join("\n")));
    }
    out
}

/// Whether `name` appears in `text` as a whole name (RL.SLIDING is not found in
/// RL.SLIDINGCOUNTER), case-insensitively.
fn names(text: &str, name: &str) -> bool {
    let (text, name) = (text.to_lowercase(), name.to_lowercase());
    let part = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-';
    text.match_indices(&name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(part) && !after.is_some_and(part)
    })
}

fn strings_of(r: Resp) -> Vec<String> {
    match r {
        Resp::Array(Some(items)) => items
            .into_iter()
            .filter_map(|i| match i {
                Resp::Bulk(Some(b)) => Some(String::from_utf8_lossy(&b).into_owned()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn args(items: &[&str]) -> Vec<Vec<u8>> {
    items.iter().map(|a| a.as_bytes().to_vec()).collect()
}

/// The library's function names, from FUNCTION LIST.
fn functions(c: &mut Client) -> Vec<String> {
    let Resp::Array(Some(libs)) = c.call(&args(&["FUNCTION", "LIST", "LIBRARYNAME", "rl"])) else {
        panic!("FUNCTION LIST failed");
    };
    let mut out = Vec::new();
    for lib in libs {
        let Resp::Array(Some(fields)) = lib else {
            continue;
        };
        let mut it = fields.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            if matches!(&k, Resp::Bulk(Some(b)) if b == b"functions") {
                let Resp::Array(Some(fns)) = v else { continue };
                for f in fns {
                    let Resp::Array(Some(ff)) = f else { continue };
                    let mut fi = ff.into_iter();
                    while let (Some(fk), Some(fv)) = (fi.next(), fi.next()) {
                        if let (Resp::Bulk(Some(fk)), Resp::Bulk(Some(fv))) = (fk, fv) {
                            if fk == b"name" {
                                out.push(String::from_utf8_lossy(&fv).into_owned());
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_table_of_commands_names_every_command() {
    if module_only("the module's command list comes from the module") {
        return;
    }
    let server = start();
    let mut c = Client::new(&server);
    // The commands on keys: RL.TOP (node-wide state) has its own sections.
    let commands: Vec<String> =
        strings_of(c.call(&args(&["COMMAND", "LIST", "FILTERBY", "MODULE", "rl"])))
            .into_iter()
            .filter(|n| !is_node_command(n))
            .collect();
    assert!(
        commands.len() >= 7,
        "COMMAND LIST FILTERBY MODULE rl: {commands:?}"
    );
    let library = functions(&mut c);
    assert!(library.len() >= 6, "the library's functions: {library:?}");
    let mut tables = 0;
    let mut missing = Vec::new();
    for path in pages() {
        let text = read(&path);
        for (marker, expected) in [
            ("<!-- commands -->", &commands),
            ("<!-- functions -->", &library),
        ] {
            for (line, table) in marked_tables(&text, marker) {
                tables += 1;
                for name in expected.iter() {
                    if !names(&table, name) {
                        missing.push(format!("{}:{line}: the table lacks {name}", path.display()));
                    }
                }
            }
        }
    }
    assert!(
        tables >= 3,
        "only {tables} marked tables of commands in the docs"
    );
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_runner_prints_replies_as_redis_cli_does() {
    let nested = Resp::Array(Some(vec![
        Resp::Array(Some(vec![Resp::Int(1), Resp::Int(-1)])),
        Resp::Bulk(Some(b"a \"b\"\n\x01".to_vec())),
        Resp::Error("ERR x".into()),
        Resp::Bulk(None),
        Resp::Array(Some(vec![])),
    ]));
    assert_eq!(
        tty(&nested, ""),
        "1) 1) (integer) 1\n   2) (integer) -1\n2) \"a \\\"b\\\"\\n\\x01\"\n3) (error) ERR x\n4) (nil)\n5) (empty array)\n"
    );
    let ten = Resp::Array(Some((1..=10).map(Resp::Int).collect()));
    assert!(tty(&ten, "").starts_with(" 1) (integer) 1\n 2) "));
    assert!(tty(&ten, "").ends_with("10) (integer) 10\n"));
    assert_eq!(
        split_args(r#"SET "a b" 'c\'d' "\x41\n" e"#).unwrap(),
        vec![
            b"SET".to_vec(),
            b"a b".to_vec(),
            b"c'd".to_vec(),
            b"A\n".to_vec(),
            b"e".to_vec()
        ]
    );
    let want = |l: &str| vec![l.to_string()];
    assert!(matches(
        &want("5) (integer) 41337  # varies: the clock"),
        "5) (integer) 12\n"
    ));
    assert!(!matches(
        &want("5) (integer) 41337  # varies: the clock"),
        "5) \"12\"\n"
    ));
    assert!(!matches(
        &want("5) (integer) 41337  # ms to the window's end"),
        "5) (integer) 12\n"
    ));
    assert!(matches(
        &want("5) (integer) 41337  # ms to the window's end"),
        "5) (integer) 41337\n"
    ));
    let either = "\"This user has no permissions\"  # or: \"User u has no permissions\"";
    assert!(matches(&want(either), "\"This user has no permissions\"\n"));
    assert!(matches(&want(either), "\"User u has no permissions\"\n"));
    assert!(!matches(&want(either), "\"User v has no permissions\"\n"));
    assert!(!matches(&want(either), "(error) ERR no permissions\n"));
    assert!(names("| RL.SLIDINGCOUNTER | x |", "RL.SLIDINGCOUNTER"));
    assert!(!names("| RL.SLIDINGCOUNTER | x |", "RL.SLIDING"));
    assert!(names("`FCALL rl_fixed 1 key`", "rl_fixed"));
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped but `-`
/// and `_`, spaces to `-` (`## RL.ACQUIRE and RL.RELEASE` → `rlacquire-and-rlrelease`).
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings (outside code blocks).
fn anchors(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for l in markdown.lines() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && l.starts_with('#') {
            out.push(anchor(l.trim_start_matches('#')));
        }
    }
    out
}

/// `(target)` of every markdown link `[text](target)` in `text`.
fn link_targets(text: &str) -> Vec<String> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            rest.find(')').map(|end| rest[..end].to_string())
        })
        .collect()
}

/// Whether `path#fragment` (relative to `from`'s directory) names a file and, if a
/// fragment is given and the file is markdown, one of its headings.
fn resolves(from: &Path, target: &str) -> Result<(), String> {
    let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
    let path = if file.is_empty() {
        from.to_path_buf()
    } else {
        from.parent().unwrap_or(Path::new(".")).join(file)
    };
    if !path.exists() {
        return Err(format!("{target}: no file {}", path.display()));
    }
    let markdown = path.extension().is_some_and(|x| x == "md");
    if !fragment.is_empty() && markdown && !anchors(&read(&path)).iter().any(|a| a == fragment) {
        return Err(format!(
            "{target}: no heading #{fragment} in {}",
            path.display()
        ));
    }
    Ok(())
}

#[test]
fn links_between_the_pages_and_from_the_code_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    for page in pages() {
        for target in link_targets(&read(&page)) {
            let local = !target.contains("://") && !target.starts_with("mailto:");
            if let Err(e) = if local {
                resolves(&page, &target)
            } else {
                Ok(())
            } {
                broken.push(format!("{}: {e}", page.display()));
            }
        }
    }
    // Code comments and tests cite the reference by anchor (docs/commands.md, then
    // `#` and the heading's anchor).
    let mut sources = Vec::new();
    for dir in ["src", "tests", "functions", "scripts"] {
        let mut todo = vec![root.join(dir)];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    todo.push(p);
                } else if p
                    .extension()
                    .is_some_and(|x| ["rs", "lua", "py", "sh"].iter().any(|k| x == *k))
                {
                    sources.push(p);
                }
            }
        }
    }
    let cited = "docs/commands.md#";
    for source in sources {
        let text = std::fs::read_to_string(&source).unwrap_or_default();
        for (at, _) in text.match_indices(cited) {
            let fragment: String = text[at + cited.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            if let Err(e) = resolves(&root.join("README.md"), &format!("{cited}{fragment}")) {
                broken.push(format!("{}: {e}", source.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
