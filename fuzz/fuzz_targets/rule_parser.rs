//! Permission rule text (`Tool(content)`), as a user's settings or an
//! "allow and remember" answer write it: parsing never panics, and a rule
//! that parses prints back to text that parses to the same rule.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost_core::permission::{Behavior, Rule, RuleSet};

fuzz_target!(|text: &str| {
    for behavior in [Behavior::Allow, Behavior::Deny, Behavior::Ask] {
        match Rule::parse(text, behavior) {
            Ok(rule) => {
                let again = Rule::parse(&rule.to_string(), behavior).expect("a printed rule parses");
                assert_eq!(again, rule, "a rule printed and parsed again is the same rule");
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let _ = RuleSet::from_strings(&lines, &lines, &lines);
});
