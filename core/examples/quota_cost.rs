//! Instructions per RL.QUOTA parse and period lookup, against RL.FIXED's parse:
//! `valgrind --tool=callgrind target/release/examples/quota_cost <which> <n>`.
use rl_core::command::{Settings, Spec};
use rl_core::commands::{Fixed, Quota};
fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let n: i64 = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let quota: Vec<&[u8]> = vec![b"1000000000000", b"month", b"TZ", b"America/New_York"];
    let fixed: Vec<&[u8]> = vec![b"1000000000000", b"1m"];
    let mut x = 0i64;
    for i in 0..n {
        x ^= match which.as_str() {
            "quota" => {
                let (q, _) = Quota::parse(std::hint::black_box(&quota), Settings::DEFAULT).unwrap();
                q.calendar.period(1_800_000_000_000 + i).end
            }
            "fixed" => {
                let (q, _) = Fixed::parse(std::hint::black_box(&fixed), Settings::DEFAULT).unwrap();
                q.limit.get() as i64
            }
            _ => i,
        };
    }
    println!("{x}");
}
