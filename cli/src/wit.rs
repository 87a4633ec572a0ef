//! `toolhost wit`: the WIT package built into this binary.

use std::io::Write as _;

use anyhow::{Context as _, Result};
use toolhost::engine::WIT_PACKAGE;

use super::args::WitArgs;
use super::exit;
use crate::out::outln;

pub fn wit(args: WitArgs) -> Result<u8> {
    match &args.out {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            for (name, text) in WIT_PACKAGE {
                let path = dir.join(name);
                std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
                outln!("{}", path.display());
            }
        }
        None => {
            let mut stdout = crate::out::stdout();
            for (name, text) in WIT_PACKAGE {
                writeln!(stdout, "// ==> {name} <==")?;
                stdout.write_all(text.as_bytes())?;
            }
        }
    }
    Ok(exit::OK)
}
