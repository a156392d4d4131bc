//! Module settings: `rl.<name>` server configs (`CONFIG GET/SET`, redis.conf,
//! `MODULE LOADEX … CONFIG`) that can also be given as module arguments
//! (`--loadmodule librl.so <name> <value> …`, `MODULE LOADEX … ARGS …`).
//!
//! One validation serves every form: [`Setting::check`]. Module arguments are read
//! here (the server does not know them as configs); an unknown name, a name given
//! twice or a value out of range fails the load with a line naming the setting and
//! its range. The other forms reach the same check through the server's bounds and
//! the config's `set` (`impl Numeric for Setting`).

use std::ffi::CStr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use crate::server::config::{self, Numeric};
use crate::server::Context;

/// Highest value `sliding-max-limit` accepts (about 1 GB for one full log).
pub const SLIDING_MAX_LIMIT_CEILING: i64 = 10_000_000;

/// `rl.sliding-max-limit`: the highest RL.SLIDING limit. One sorted-set entry per
/// unit, so it bounds the memory and the work of one key.
pub static SLIDING_MAX_LIMIT: AtomicI64 = AtomicI64::new(rl_core::table::SLIDING_MAX_LIMIT as i64);

/// Highest value `share-max-tenants` accepts.
pub const SHARE_MAX_TENANTS_CEILING: i64 = 1_000_000;

/// `rl.share-max-tenants`: the most tenants an RL.SHARE budget remembers at once.
/// It bounds the fields of one budget's hash.
pub static SHARE_MAX_TENANTS: AtomicI64 =
    AtomicI64::new(rl_core::algorithms::share::DEFAULT_MAX_TENANTS as i64);

/// Highest value `top-size` accepts (two sketches of this many keys).
pub const TOP_SIZE_CEILING: i64 = 100_000;

/// `rl.top-size`: the keys each of RL.TOP's two windows holds. It fixes RL.TOP's
/// memory, whatever the number of keys rejected.
pub static TOP_SIZE: AtomicI64 = AtomicI64::new(rl_core::top::DEFAULT_SIZE as i64);

/// `rl.config-resetstat`: 1 makes `CONFIG RESETSTAT` zero `INFO rl`'s counters too,
/// at the price of a command filter the server runs before every command. Read
/// once, at load.
pub static CONFIG_RESETSTAT: AtomicI64 = AtomicI64::new(0);

/// The settings a call is parsed under.
#[inline]
pub fn settings() -> rl_core::command::Settings {
    rl_core::command::Settings {
        sliding_max: sliding_max_limit(),
        share_max_tenants: share_max_tenants(),
    }
}

pub fn sliding_max_limit() -> u64 {
    u64::try_from(SLIDING_MAX_LIMIT.load(Ordering::Relaxed)).unwrap_or(0)
}

pub fn share_max_tenants() -> u64 {
    u64::try_from(SHARE_MAX_TENANTS.load(Ordering::Relaxed)).unwrap_or(0)
}

pub fn top_size() -> usize {
    usize::try_from(TOP_SIZE.load(Ordering::Relaxed)).unwrap_or(0)
}

pub fn config_resetstat() -> bool {
    CONFIG_RESETSTAT.load(Ordering::Relaxed) == 1
}

/// One integer setting.
pub struct Setting {
    /// The name after `rl.`, as module arguments and configs spell it.
    pub name: &'static CStr,
    pub default: i64,
    pub min: i64,
    pub max: i64,
    pub value: &'static AtomicI64,
    /// Set only as the module loads: `CONFIG SET` refuses it.
    pub at_load_only: bool,
}

/// Every setting the module has.
pub static SETTINGS: [Setting; 4] = [
    Setting {
        name: c"sliding-max-limit",
        default: rl_core::table::SLIDING_MAX_LIMIT as i64,
        min: 1,
        max: SLIDING_MAX_LIMIT_CEILING,
        value: &SLIDING_MAX_LIMIT,
        at_load_only: false,
    },
    Setting {
        name: c"share-max-tenants",
        default: rl_core::algorithms::share::DEFAULT_MAX_TENANTS as i64,
        min: 1,
        max: SHARE_MAX_TENANTS_CEILING,
        value: &SHARE_MAX_TENANTS,
        at_load_only: false,
    },
    Setting {
        name: c"top-size",
        default: rl_core::top::DEFAULT_SIZE as i64,
        min: 1,
        max: TOP_SIZE_CEILING,
        value: &TOP_SIZE,
        at_load_only: false,
    },
    Setting {
        name: c"config-resetstat",
        default: 0,
        min: 0,
        max: 1,
        value: &CONFIG_RESETSTAT,
        at_load_only: true,
    },
];

impl Setting {
    fn name_str(&self) -> &'static str {
        self.name.to_str().unwrap_or("setting")
    }

    /// The one validation every form of setting goes through.
    pub fn check(&self, value: i64) -> Result<i64, String> {
        if (self.min..=self.max).contains(&value) {
            Ok(value)
        } else {
            Err(self.range_error())
        }
    }

    fn range_error(&self) -> String {
        format!(
            "rl.{} must be an integer from {} to {}",
            self.name_str(),
            self.min,
            self.max
        )
    }

    /// Parses a value given as text (a module argument).
    fn parse(&self, text: &[u8]) -> Result<i64, String> {
        std::str::from_utf8(text)
            .ok()
            .filter(|t| !t.starts_with('+'))
            .and_then(|t| t.parse::<i64>().ok())
            .ok_or_else(|| self.range_error())
            .and_then(|v| self.check(v))
    }
}

/// Reads module arguments (`name value` pairs) into the settings' values. Every
/// setting not named keeps its default.
pub fn apply_module_args(args: &[&[u8]]) -> Result<(), String> {
    if !args.len().is_multiple_of(2) {
        return Err(format!(
            "module arguments come in pairs `name value`; known names: {}",
            known_names()
        ));
    }
    let mut given = [false; SETTINGS.len()];
    let mut values = [0i64; SETTINGS.len()];
    for pair in args.chunks_exact(2) {
        let (name, value) = (pair[0], pair[1]);
        let Some(i) = SETTINGS.iter().position(|s| s.name.to_bytes() == name) else {
            return Err(format!(
                "unknown module argument '{}'; known names: {}",
                name.escape_ascii(),
                known_names()
            ));
        };
        if given[i] {
            return Err(format!(
                "module argument {} given more than once",
                SETTINGS[i].name_str()
            ));
        }
        given[i] = true;
        values[i] = SETTINGS[i].parse(value)?;
    }
    // Nothing is applied unless every argument is valid.
    for (setting, (&given, &value)) in SETTINGS.iter().zip(given.iter().zip(&values)) {
        let v = if given { value } else { setting.default };
        setting.value.store(v, Ordering::Relaxed);
    }
    Ok(())
}

/// The last value a config's `set` refused, with why (name, value, range), so a
/// load that fails in `RedisModule_LoadConfigs` can say which setting, value and
/// range: the server applies redis.conf and `MODULE LOADEX … CONFIG` values itself
/// and only reports that one failed.
static REFUSED: Mutex<Option<String>> = Mutex::new(None);

fn refused(line: String) {
    if let Ok(mut last) = REFUSED.lock() {
        *last = Some(line);
    }
}

fn take_refused() -> Option<String> {
    REFUSED.lock().ok().and_then(|mut last| last.take())
}

/// Every setting with its range, for a load error whose value the server refused
/// before the module saw it (not an integer).
fn ranges() -> String {
    let ranges: Vec<String> = SETTINGS.iter().map(Setting::range_error).collect();
    ranges.join("; ")
}

fn known_names() -> String {
    let names: Vec<&str> = SETTINGS.iter().map(Setting::name_str).collect();
    names.join(", ")
}

/// Registers every setting as an `rl.<name>` server config, starting from the
/// value the module arguments gave (or the default), then lets the server apply
/// what redis.conf or `MODULE LOADEX … CONFIG` set (those win over arguments).
pub fn register(ctx: Context) -> Result<(), String> {
    if !config::available() {
        return Err("this server has no module configs (Redis 7.0 or newer is required)".into());
    }
    for s in &SETTINGS {
        // The server's own bounds are the widest it takes, so every integer value
        // reaches `Setting::set` and one check (`Setting::check`) words every
        // refusal, naming the value too.
        if !ctx.register_numeric(s, s.value.load(Ordering::Relaxed), i64::MIN, i64::MAX) {
            return Err(format!("cannot register the config rl.{}", s.name_str()));
        }
    }
    let _ = take_refused();
    if !ctx.load_configs() {
        return Err(match take_refused() {
            Some(line) => line,
            // Not an integer: the server refused it before the module saw it (its
            // own line above names the setting).
            None => format!(
                "a setting given in redis.conf or MODULE LOADEX is not an integer: {}",
                ranges()
            ),
        });
    }
    Ok(())
}

/// What `CONFIG GET`/`SET`, redis.conf and `MODULE LOADEX … CONFIG` read and change.
impl Numeric for Setting {
    fn name(&self) -> &'static CStr {
        self.name
    }

    fn get(&self) -> i64 {
        self.value.load(Ordering::Relaxed)
    }

    fn at_load_only(&self) -> bool {
        self.at_load_only
    }

    fn set(&self, value: i64) -> Result<(), String> {
        match self.check(value) {
            Ok(v) => {
                self.value.store(v, Ordering::Relaxed);
                Ok(())
            }
            Err(message) => {
                refused(format!(
                    "rl.{} {value}, given in redis.conf or MODULE LOADEX, is out of range: {message}",
                    self.name_str()
                ));
                Err(message)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(args: &[&str]) -> Result<i64, String> {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        apply_module_args(&bytes).map(|()| SLIDING_MAX_LIMIT.load(Ordering::Relaxed))
    }

    #[test]
    fn module_arguments_are_validated_like_every_other_form() {
        // One test body: the setting is a process-wide static.
        assert_eq!(apply(&[]), Ok(100_000));
        assert_eq!(apply(&["sliding-max-limit", "5"]), Ok(5));
        assert_eq!(apply(&["sliding-max-limit", "10000000"]), Ok(10_000_000));
        let range = "rl.sliding-max-limit must be an integer from 1 to 10000000";
        for bad in ["0", "-5", "10000001", "abc", "", "+5", "1.5", " 5"] {
            assert_eq!(
                apply(&["sliding-max-limit", bad]),
                Err(range.into()),
                "{bad:?}"
            );
        }
        assert_eq!(
            SLIDING_MAX_LIMIT.load(Ordering::Relaxed),
            10_000_000,
            "unchanged"
        );
        let unknown = apply(&["foo", "bar"]).unwrap_err();
        assert!(
            unknown.contains("'foo'") && unknown.contains("sliding-max-limit"),
            "{unknown}"
        );
        assert!(apply(&["sliding-max-limt", "5"]).is_err(), "misspelled");
        let twice = apply(&["sliding-max-limit", "5", "sliding-max-limit", "6"]).unwrap_err();
        assert!(twice.contains("more than once"), "{twice}");
        assert!(apply(&["sliding-max-limit"]).unwrap_err().contains("pairs"));
        assert_eq!(
            SLIDING_MAX_LIMIT.load(Ordering::Relaxed),
            10_000_000,
            "unchanged"
        );
        assert_eq!(SETTINGS[0].check(0), Err(range.into()));

        // rl.share-max-tenants: 1 ..= 1,000,000, default 10,000; naming one
        // setting resets the other to its default.
        let tenants = || SHARE_MAX_TENANTS.load(Ordering::Relaxed);
        assert_eq!(apply(&["share-max-tenants", "7"]), Ok(100_000));
        assert_eq!(tenants(), 7);
        assert_eq!(apply(&["sliding-max-limit", "9"]), Ok(9));
        assert_eq!(tenants(), 10_000);
        assert_eq!(
            apply(&["share-max-tenants", "1000000", "sliding-max-limit", "3"]),
            Ok(3)
        );
        assert_eq!(tenants(), 1_000_000);
        assert_eq!(settings().share_max_tenants, 1_000_000);
        let range = "rl.share-max-tenants must be an integer from 1 to 1000000";
        for bad in ["0", "-1", "1000001", "x", ""] {
            assert_eq!(
                apply(&["share-max-tenants", bad]),
                Err(range.into()),
                "{bad:?}"
            );
        }
        assert_eq!(tenants(), 1_000_000, "unchanged");
        assert_eq!(SETTINGS[1].check(1_000_001), Err(range.into()));
        assert!(apply(&["foo", "1"])
            .unwrap_err()
            .contains("share-max-tenants"));

        // rl.top-size: 1 ..= 100,000, default 128.
        assert_eq!(apply(&["top-size", "100000"]), Ok(100_000));
        assert_eq!(top_size(), 100_000);
        let range = "rl.top-size must be an integer from 1 to 100000";
        for bad in ["0", "-1", "100001", "x"] {
            assert_eq!(apply(&["top-size", bad]), Err(range.into()), "{bad:?}");
        }
        assert_eq!(top_size(), 100_000, "unchanged");
        assert_eq!(apply(&[]), Ok(100_000));
        assert_eq!(top_size(), 128);

        // rl.config-resetstat: 0 (default) or 1.
        assert_eq!(apply(&["config-resetstat", "1"]), Ok(100_000));
        assert!(config_resetstat());
        let range = "rl.config-resetstat must be an integer from 0 to 1";
        for bad in ["2", "-1", "yes"] {
            assert_eq!(
                apply(&["config-resetstat", bad]),
                Err(range.into()),
                "{bad:?}"
            );
        }
        assert!(config_resetstat(), "unchanged");
        assert_eq!(apply(&[]), Ok(100_000));
        assert!(!config_resetstat());
    }
}
