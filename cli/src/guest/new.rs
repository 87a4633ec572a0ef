//! `toolhost new NAME --lang rust|python|js`: a tool project that builds as
//! it is: one function, a test, a README with the one build command, the
//! `toolhost-plugin.toml` that `toolhost build` reads, and `.toolhost/`
//! (the WIT package and the SDK, from this binary).

use std::path::Path;

use anyhow::{Result, bail};

use super::assets::{self, put};
use super::build::{COMPONENTIZE_JS, COMPONENTIZE_PY};
use super::project::{FILE, Lang};
use crate::args::NewArgs;
use crate::exit;
use crate::out::outln;

const README: &str = include_str!("../../assets/new/README.md");
const PY_APP: &str = include_str!("../../assets/new/python_app.py");
const PY_TEST: &str = include_str!("../../assets/new/python_test.py");
const JS_APP: &str = include_str!("../../assets/new/js_app.js");
const JS_TOOL: &str = include_str!("../../assets/new/js_tool.js");
const JS_TEST: &str = include_str!("../../assets/new/js_test.js");
const RUST_LIB: &str = include_str!("../../assets/new/rust_lib.rs");

pub fn new(args: NewArgs) -> Result<u8> {
    let name = &args.name;
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !valid {
        bail!(
            "`{name}` is not a project name: use lower-case letters, digits, `-` and `_`, starting with a letter (e.g. `word-count`)"
        );
    }
    let dir = args.dir.clone().unwrap_or_else(|| Path::new(name).to_path_buf());
    if dir.exists() {
        bail!("{} already exists: pick another NAME or remove it", dir.display());
    }
    let snake = name.replace('-', "_");
    let words: Vec<&str> = snake.split('_').filter(|w| !w.is_empty()).collect();
    let pascal: String = words.iter().map(|w| capitalise(w)).collect();
    let camel = format!("{}{}", words[0], words[1..].iter().map(|w| capitalise(w)).collect::<String>());
    let output = format!("{snake}.wasm");
    let (fn_name, tool_name, lang_name, prereq, test) = match args.lang {
        Lang::Python => (
            snake.clone(),
            snake.clone(),
            "Python",
            format!(
                "It needs componentize-py {COMPONENTIZE_PY}: `pip install componentize-py=={COMPONENTIZE_PY}` (in a venv)."
            ),
            "python3 -m unittest",
        ),
        Lang::Js => (
            camel.clone(),
            camel.clone(),
            "JavaScript",
            format!("It needs Node.js 20+ and componentize-js {COMPONENTIZE_JS}: run `npm install` here once."),
            "node --test",
        ),
        Lang::Rust => (
            snake.clone(),
            pascal.clone(),
            "Rust",
            "It needs Rust and the wasm32-wasip2 target: `rustup target add wasm32-wasip2`.".to_string(),
            "cargo test",
        ),
    };
    let fill = |text: &str| {
        text.replace("{{tool}}", &fn_name)
            .replace("{{Tool}}", &tool_name)
            .replace("{{name}}", name)
            .replace("{{lang_name}}", lang_name)
            .replace("{{prereq}}", &prereq)
            .replace("{{test}}", test)
            .replace("{{output}}", &output)
    };
    std::fs::create_dir_all(&dir)?;
    let lang = match args.lang {
        Lang::Python => {
            put(&dir.join("app.py"), &fill(PY_APP))?;
            put(&dir.join("test_app.py"), &fill(PY_TEST))?;
            "python"
        }
        Lang::Js => {
            put(&dir.join("app.js"), &fill(JS_APP))?;
            put(&dir.join("tool.js"), &fill(JS_TOOL))?;
            put(&dir.join("tool.test.js"), &fill(JS_TEST))?;
            let package = serde_json::json!({
                "name": name,
                "version": "0.1.0",
                "private": true,
                "type": "module",
                "scripts": {"build": "toolhost build", "test": "node --test"},
                "devDependencies": {"@bytecodealliance/componentize-js": COMPONENTIZE_JS},
            });
            put(&dir.join("package.json"), &format!("{}\n", serde_json::to_string_pretty(&package)?))?;
            "js"
        }
        Lang::Rust => {
            put(&dir.join("src/lib.rs"), &fill(RUST_LIB))?;
            put(
                &dir.join("Cargo.toml"),
                &format!(
                    "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n\
                     [dependencies]\ntoolhost-sdk = {{ path = \".toolhost/rust/sdk\" }}\nserde_json = \"1\"\n\n\
                     [profile.release]\nopt-level = \"s\"\nlto = true\nstrip = true\n\n\
                     # A workspace of its own, even inside another one.\n[workspace]\n"
                ),
            )?;
            "rust"
        }
    };
    let source = match args.lang {
        Lang::Python => "source = \"app.py\"\n",
        Lang::Js => "source = \"app.js\"\n",
        Lang::Rust => "",
    };
    put(
        &dir.join(FILE),
        &format!(
            "# What `toolhost build` builds here.\nlang = \"{lang}\"\nkind = \"tool\"\n{source}output = \"{output}\"\n"
        ),
    )?;
    put(&dir.join("README.md"), &fill(README))?;
    put(&dir.join(".gitignore"), "/target/\n/node_modules/\n/.toolhost/\n/*.wasm\n__pycache__/\n")?;
    assets::write(&dir, args.lang)?;
    outln!("{}", dir.display());
    outln!("build it: cd {} && toolhost build", dir.display());
    Ok(exit::OK)
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}
