//! The files a plugin project needs besides its own sources, embedded at
//! compile time: the WIT package, the Python and JavaScript SDKs, the
//! JavaScript build script and the Rust SDK crates.

use std::path::Path;

use anyhow::{Context as _, Result};
use toolhost::engine::WIT_PACKAGE;

use super::project::Lang;

/// The folder, under the project, that `toolhost` owns (rewritten by every build).
pub const DIR: &str = ".toolhost";

/// The version of the WIT package, the folder name under `.toolhost/wit/`.
pub const WIT_VERSION: &str = "v0.1.0";

const PYTHON_SDK: &[(&str, &str)] = &[
    ("__init__.py", include_str!("../../../sdk/python/toolhost_sdk/__init__.py")),
    ("_wit.py", include_str!("../../../sdk/python/toolhost_sdk/_wit.py")),
    ("backend.py", include_str!("../../../sdk/python/toolhost_sdk/backend.py")),
    ("chunks.py", include_str!("../../../sdk/python/toolhost_sdk/chunks.py")),
    ("errors.py", include_str!("../../../sdk/python/toolhost_sdk/errors.py")),
    ("log.py", include_str!("../../../sdk/python/toolhost_sdk/log.py")),
    ("middleware.py", include_str!("../../../sdk/python/toolhost_sdk/middleware.py")),
    ("output.py", include_str!("../../../sdk/python/toolhost_sdk/output.py")),
    ("schema.py", include_str!("../../../sdk/python/toolhost_sdk/schema.py")),
    ("state.py", include_str!("../../../sdk/python/toolhost_sdk/state.py")),
    ("tool.py", include_str!("../../../sdk/python/toolhost_sdk/tool.py")),
];

const JS_SDK: &[(&str, &str)] = &[
    ("toolhost-sdk.js", include_str!("../../../sdk/js/toolhost-sdk.js")),
    ("jsdoc.js", include_str!("../../../sdk/js/jsdoc.js")),
    ("build.mjs", include_str!("../../assets/build.mjs")),
];

const RUST_SDK: &[(&str, &str)] = &[
    ("sdk/src/__adapter.rs", include_str!("../../../guest-tools/sdk/src/__adapter.rs")),
    ("sdk/src/__function.rs", include_str!("../../../guest-tools/sdk/src/__function.rs")),
    ("sdk/src/bindings.rs", include_str!("../../../guest-tools/sdk/src/bindings.rs")),
    ("sdk/src/lib.rs", include_str!("../../../guest-tools/sdk/src/lib.rs")),
    ("sdk/src/middleware.rs", include_str!("../../../guest-tools/sdk/src/middleware.rs")),
    ("sdk/src/middleware_bindings.rs", include_str!("../../../guest-tools/sdk/src/middleware_bindings.rs")),
    ("sdk/src/spec.rs", include_str!("../../../guest-tools/sdk/src/spec.rs")),
    ("sdk-macros/src/lib.rs", include_str!("../../../guest-tools/sdk-macros/src/lib.rs")),
    // The manifests of guest-tools/ inherit from its workspace; these stand alone.
    (
        "sdk/Cargo.toml",
        r#"[package]
name = "toolhost-sdk"
version = "0.1.0"
edition = "2024"

[dependencies]
toolhost-sdk-macros = { path = "../sdk-macros" }
wit-bindgen = "0.61"
serde = { version = "1", features = ["derive"] }
serde_json = { version = "1", features = ["preserve_order"] }
"#,
    ),
    (
        "sdk-macros/Cargo.toml",
        r#"[package]
name = "toolhost-sdk-macros"
version = "0.1.0"
edition = "2024"

[lib]
proc-macro = true

[dependencies]
proc-macro2 = "1"
quote = "1"
syn = { version = "2", features = ["full"] }
serde_json = "1"
"#,
    ),
];

/// Writes `.toolhost/` under `project`: the WIT package
/// (`.toolhost/wit/v0.1.0/`) and the SDK of `lang` (`.toolhost/python/`,
/// `.toolhost/js/`, `.toolhost/rust/`). Returns the `.toolhost` path.
pub fn write(project: &Path, lang: Lang) -> Result<std::path::PathBuf> {
    let dir = project.join(DIR);
    let wit = dir.join("wit").join(WIT_VERSION);
    for (name, text) in WIT_PACKAGE {
        put(&wit.join(name), text)?;
    }
    let (sub, files) = match lang {
        Lang::Python => ("python/toolhost_sdk", PYTHON_SDK),
        Lang::Js => ("js", JS_SDK),
        Lang::Rust => ("rust", RUST_SDK),
    };
    for (name, text) in files {
        put(&dir.join(sub).join(name), text)?;
    }
    put(&dir.join(".gitignore"), "*\n")?;
    Ok(dir)
}

/// Writes `text` to `path`, creating its folder.
pub fn put(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
