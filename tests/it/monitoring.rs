//! Monitoring with the real Prometheus exporter (docs/monitoring.md):
//! prometheus-redis-exporter scrapes INFO ALL, which leaves out a module's own
//! section, so RL ships monitoring/redis_exporter.lua for its `-script` option. The
//! test runs the exporter the way the docs do, scrapes /metrics over HTTP and reads
//! back the counters of the calls it made.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::*;

/// The exporter's binary: RL_REDIS_EXPORTER, or Debian's name, or upstream's.
fn exporter() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("RL_REDIS_EXPORTER") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["prometheus-redis-exporter", "redis_exporter"].map(|n| dir.join(n)))
        .find(|p| p.is_file())
}

/// A running exporter, stopped when dropped.
struct Exporter {
    child: Child,
    port: u16,
}

impl Exporter {
    fn start(binary: &Path, redis_port: u16) -> Exporter {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("monitoring/redis_exporter.lua");
        let port = free_port();
        let child = Command::new(binary)
            .arg("-redis.addr")
            .arg(format!("redis://127.0.0.1:{redis_port}"))
            .arg("-script")
            .arg(&script)
            .arg("-web.listen-address")
            .arg(format!("127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the exporter starts");
        Exporter { child, port }
    }

    /// One scrape of /metrics: its body, or None while the exporter is not listening.
    fn scrape(&self) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .ok()?;
        let mut response = String::new();
        s.read_to_string(&mut response).ok()?;
        let (head, body) = response.split_once("\r\n\r\n")?;
        head.starts_with("HTTP/1.0 200").then(|| body.to_string())
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of one sample (`name{labels} value`) in a scrape.
fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn the_exporter_with_rls_script_serves_the_counters_of_the_calls_made() {
    if module_only("INFO rl is the module's") {
        return;
    }
    let Some(binary) = exporter() else {
        eprintln!(
            "skipped: no prometheus-redis-exporter (apt-get install prometheus-redis-exporter, \
             or set RL_REDIS_EXPORTER; make test installs it where apt is available)"
        );
        return;
    };
    let s = Server::start();
    let mut c = s.conn();
    let allowed: Vec<i64> = (0..3)
        .map(|_| rl(&mut c, &["RL.GCRA", "api", "2", "1", "1m"]).allowed)
        .collect();
    assert_eq!(allowed, [1, 1, 0]);
    assert!(try_rl(&mut c, &["RL.FIXED", "api", "0", "1m"]).is_err());
    // Rejected twice: a key of any bytes, escaped into a valid label; and one cut
    // to its first 64 bytes.
    let odd = "rl:{u1}:\u{fc} x\n";
    let long = "k".repeat(100);
    for key in [odd, odd, long.as_str()] {
        assert_eq!(
            rl(&mut c, &["RL.FIXED", key, "1", "1m", "COST", "2"]).allowed,
            0
        );
    }

    let e = Exporter::start(&binary, s.port);
    let body = wait_for(
        PATIENCE,
        "the exporter's /metrics with RL's counters",
        || {
            e.scrape()
                .filter(|b| b.contains("redis_script_values{key=\"rl_gcra_allowed\"}"))
        },
    );
    let value = |key: &str| sample(&body, &format!("redis_script_values{{key=\"{key}\"}}"));
    assert_eq!(value("rl_gcra_allowed"), Some(2.0), "{body}");
    assert_eq!(value("rl_gcra_rejected"), Some(1.0));
    assert_eq!(value("rl_fixed_errors"), Some(1.0));
    assert_eq!(value("rl_fixed_allowed"), Some(0.0));
    // The second call left 0 of 2: near the limit; the first (1 of 2) was not.
    assert_eq!(value("rl_gcra_near_limit"), Some(1.0));
    assert_eq!(value("rl_fixed_near_limit"), Some(0.0));
    // RL.TOP's first keys, most rejected first.
    assert_eq!(
        value("rl_top_rejected:rl:{u1}:%C3%BC%20x%0A"),
        Some(2.0),
        "{body}"
    );
    assert_eq!(value("rl_top_rejected:api"), Some(1.0));
    let cut = format!("rl_top_rejected:{}...", "k".repeat(64));
    assert_eq!(value(&cut), Some(1.0));
    // Build fields are not samples.
    assert_eq!(value("rl_git_commit"), None);
    // The exporter's own view of the server, for the docs' alerts.
    assert_eq!(sample(&body, "redis_up"), Some(1.0));
}
