//! `toolhost-plugin.toml`: what `toolhost build` builds in a folder.
//!
//! ```toml
//! lang = "python"      # rust | python | js
//! kind = "tool"        # tool | middleware: the WIT world
//! source = "app.py"    # the module (python, js); unused for rust (Cargo.toml)
//! output = "greet.wasm"
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde::Deserialize;

/// The file name of a project's descriptor.
pub const FILE: &str = "toolhost-plugin.toml";

/// A guest language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// Rust with `toolhost-sdk`, built by cargo for wasm32-wasip2.
    Rust,
    /// Python with `toolhost_sdk`, built by componentize-py.
    Python,
    /// JavaScript with `toolhost-sdk.js`, built by componentize-js.
    Js,
}

/// Which world the component is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A tool (`tool-component`).
    #[default]
    Tool,
    /// A middleware (`middleware-component`).
    Middleware,
}

impl Kind {
    /// The WIT world's name.
    pub fn world(self) -> &'static str {
        match self {
            Kind::Tool => "tool-component",
            Kind::Middleware => "middleware-component",
        }
    }
}

/// A parsed `toolhost-plugin.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Project {
    /// The language.
    pub lang: Lang,
    /// Tool or middleware.
    #[serde(default)]
    pub kind: Kind,
    /// The entry module (python: `app.py`, js: `app.js`).
    #[serde(default)]
    pub source: Option<String>,
    /// Where the `.wasm` goes, relative to the project folder.
    pub output: String,
    /// The folder holding the descriptor (not in the file).
    #[serde(skip)]
    pub dir: PathBuf,
}

impl Project {
    /// Reads `dir/toolhost-plugin.toml`.
    pub fn load(dir: &Path) -> Result<Self> {
        let file = dir.join(FILE);
        let text = std::fs::read_to_string(&file).with_context(|| {
            format!(
                "no {FILE} in {}: run `toolhost build` in a folder made by `toolhost new NAME --lang rust|python|js` (or pass --dir)",
                dir.display()
            )
        })?;
        let mut project: Project = toml::from_str(&text).with_context(|| format!("reading {}", file.display()))?;
        project.dir = dir.canonicalize().with_context(|| format!("resolving {}", dir.display()))?;
        if project.lang != Lang::Rust && project.source.is_none() {
            bail!("{}: `source` (the entry module, e.g. \"app.py\") is missing", file.display());
        }
        Ok(project)
    }

    /// The absolute path of the built component.
    pub fn output(&self) -> PathBuf {
        self.dir.join(&self.output)
    }
}
