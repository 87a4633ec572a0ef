//! `toolhost.toml`: any text either parses into settings whose rules,
//! grants and audit table can be read, or is refused with an error; nothing
//! panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost_core::settings::Settings;

fuzz_target!(|text: &str| {
    let Ok(settings) = Settings::parse(text, std::path::Path::new("/fuzz")) else { return };
    let _ = settings.permissions.rule_set();
    for (name, policy) in &settings.grants {
        let _ = policy.validate(name);
    }
    let _ = settings.working_dirs();
    let _ = settings.protected_paths(None);
});
