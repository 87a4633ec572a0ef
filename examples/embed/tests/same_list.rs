//! An embedder that reads the user's `toolhost.toml` gets what the CLI
//! gets: `embed-list` (this example) and `toolhost list` over one settings
//! file with a plugin, an upstream MCP server, a tool group, a skill and
//! middleware list the same tools, the same groups and the same
//! attachments.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use toolhost_e2e::{Scratch, example, mcp_python, root, text, toolhost_bin};

/// `program ARGS` as a user runs it in the scratch working directory.
fn run(scratch: &Scratch, program: &Path, args: &[&str]) -> Output {
    let out = Command::new(program)
        .current_dir(scratch.work())
        .args(args)
        .env("HOME", scratch.dir.path())
        .env_remove("XDG_STATE_HOME")
        .output()
        .expect("running the program");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{} {args:?}: {stdout}\n{stderr}", program.display());
    out
}

fn names(tools: &Value) -> Vec<&str> {
    tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect()
}

#[test]
fn the_embedder_lists_what_toolhost_list_lists() {
    let Some(python) = mcp_python() else { return };
    let scratch = Scratch::new();
    let skills = scratch.outside("skills");
    std::fs::create_dir_all(skills.join("release-notes")).unwrap();
    std::fs::write(
        skills.join("release-notes/SKILL.md"),
        "---\nname: release-notes\ndescription: Writing release notes from the log\n---\nRead the log.\n",
    )
    .unwrap();
    let settings = format!(
        "cache_dir = {cache:?}\nplugins = [{greet:?}]\n\n[permissions]\nallow = [\"Greet\"]\n\n\
         [groups.people]\ndescription = \"Greeting people\"\ntools = [\"Greet\"]\n\n\
         [skills]\ndirs = [{skills:?}]\n\n[middleware]\nfiles = [{logging:?}]\n\n[middleware.attach]\n\
         \"*\" = [\"logging\"]\n\n[mcp_servers.up]\ncommand = {python:?}\nargs = [{script:?}, \"stdio\"]\n\
         env = {{ UPSTREAM_NOTES = {notes:?} }}\n",
        cache = root().join("target/test-cache").display().to_string(),
        greet = example("greet").display().to_string(),
        skills = skills.display().to_string(),
        logging = example("logging").display().to_string(),
        python = python.display().to_string(),
        script = root().join("tests/mcp/upstream_server.py").display().to_string(),
        notes = scratch.outside("notes.txt").display().to_string(),
    );
    std::fs::write(scratch.work().join("toolhost.toml"), settings).unwrap();

    let cli = run(&scratch, toolhost_bin(), &["list", "--json"]);
    let cli_tools: Value = serde_json::from_slice(&cli.stdout).unwrap();
    let cli_text = text(&run(&scratch, toolhost_bin(), &["list"])).0;
    let embedded = run(&scratch, Path::new(env!("CARGO_BIN_EXE_embed-list")), &[]);
    let embedded: Value = serde_json::from_slice(&embedded.stdout).unwrap();

    // Every kind of tool the file describes is there (Greet's group is
    // off until `reset_tools` turns it on), and nothing differs.
    let listed = names(&embedded["tools"]);
    for tool in ["Bash", "mcp__up__lookup", "mcp__up__note", "Skill", "reset_tools"] {
        assert!(listed.contains(&tool), "{tool} is missing from the embedder's list: {listed:?}");
    }
    assert!(!listed.contains(&"Greet"), "{listed:?}");
    assert_eq!(embedded["tools"], cli_tools, "the embedder's tools differ from `toolhost list --json`");
    // The group and the middleware attachments `toolhost list` shows.
    assert_eq!(embedded["groups"]["people"], serde_json::json!(["Greet"]));
    assert!(cli_text.contains("people") && cli_text.contains("Greeting people"), "{cli_text}");
    let attached = names_of(&embedded["middleware"]["logging"]);
    assert_eq!(attached, listed, "logging is attached to every tool");
    assert!(cli_text.contains(&format!("(on {})", attached.join(", "))), "{cli_text}");

    // A flag given to both, laid over the file the same way.
    let more = ["--allow", "Bash(ls:*)", "--plugin", &example("word-count").display().to_string()];
    let cli = run(&scratch, toolhost_bin(), &[&more[..], &["list", "--json"]].concat());
    let cli: Value = serde_json::from_slice(&cli.stdout).unwrap();
    let embedded = run(&scratch, Path::new(env!("CARGO_BIN_EXE_embed-list")), &more);
    let embedded: Value = serde_json::from_slice(&embedded.stdout).unwrap();
    assert!(names(&cli).contains(&"WordCount"), "{cli}");
    assert_eq!(embedded["tools"], cli);
}

fn names_of(list: &Value) -> Vec<&str> {
    list.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect()
}
