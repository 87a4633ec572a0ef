//! Skills (AgentScope's skills and `SkillViewer`, spec §11.7): folders with
//! a `SKILL.md` whose YAML front matter gives a `name` and a `description`
//! and whose body is the instructions, found in the directories of
//! `[skills] dirs`. The `Skill` tool lists them in its description and
//! returns one skill's instructions, the names of the files beside it, or
//! one of those files.
//!
//! A skill is untrusted text. Everything is read through a `cap-std`
//! directory handle opened at start-up: a skill folder (or a `SKILL.md`)
//! that is a link out of its skill directory is reported and skipped, and a
//! file name with `..`, an absolute path or a link out of the skill's
//! folder reads nothing. Every file is opened without waiting and read
//! only when it is a regular file (a FIFO planted in a skill folder is
//! refused, not waited on, at start-up and in a `Skill` call alike), and
//! sizes are bounded before reading; a malformed folder is reported, never
//! fatal. The configured skill folders are toolhost's own files: no tool
//! may touch them ([`crate::protected`]).
//!
//! What the model reads keeps its shape whatever a skill says: the listing
//! is one line per skill with the description quoted
//! ([`crate::escape::quoted`]: a line break or a `"` in it is an escape, so
//! it cannot add a line such as `- admin: …`), and a skill's answer names
//! it in `<skill name="…" dir="…">` with both values as attributes
//! ([`crate::escape::attribute`]: a folder named with `"` or `>` cannot
//! close the attribute or the tag), its files one name a line, escaped.

use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptionsExt as _};

use crate::escape::{attribute, quoted};
use crate::own_file::{self, Bound};

/// The tool's name.
pub const SKILL: &str = "Skill";
/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// The largest `SKILL.md` read, in bytes.
pub const MAX_SKILL_FILE_BYTES: u64 = 256 << 10;
/// The largest file beside it that `Skill` returns, in bytes.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// The longest skill description, in bytes (the tool's description lists
/// every skill's).
pub const MAX_SKILL_DESCRIPTION_BYTES: usize = 1024;
/// The most files listed for one skill.
pub const MAX_LISTED_FILES: usize = 200;
/// How deep the files of a skill are listed.
const MAX_DEPTH: usize = 4;
/// How much of the tool's description the skill list may take, in bytes
/// (under [`super::tool::MAX_DESCRIPTION_BYTES`]).
const MAX_LISTING_BYTES: usize = 48 << 10;

/// One skill.
#[derive(Debug)]
pub struct Skill {
    /// Its name (front matter `name`).
    pub name: String,
    /// When to use it (front matter `description`).
    pub description: String,
    /// The body of its `SKILL.md`.
    pub instructions: String,
    /// Its folder, as configured (for the model to name it).
    pub dir: PathBuf,
    /// The files beside `SKILL.md`, relative to its folder, sorted.
    pub files: Vec<String>,
    /// How many files were left out of `files` (it lists a bounded number).
    pub unlisted: usize,
    /// The folder, opened once: every later read is relative to it.
    root: Dir,
}

/// Every skill found, and what was wrong with the folders that are not.
#[derive(Debug, Default)]
pub struct Skills {
    skills: Vec<Skill>,
    problems: Vec<String>,
}

impl Skills {
    /// Reads the skills in `dirs` (each sub-folder with a `SKILL.md`), in
    /// order; a later skill with a taken name is reported and skipped.
    pub fn scan(dirs: &[PathBuf]) -> Self {
        let mut out = Self::default();
        for dir in dirs {
            let base = match Dir::open_ambient_dir(dir, ambient_authority()) {
                Ok(base) => base,
                Err(e) => {
                    out.problems
                        .push(format!("skill directory {}: {e}; fix or remove it in [skills] dirs", dir.display()));
                    continue;
                }
            };
            let mut names: Vec<String> = Vec::new();
            match base.entries() {
                Ok(entries) => {
                    for entry in entries.flatten() {
                        match entry.file_name().into_string() {
                            Ok(name) if !name.starts_with('.') => names.push(name),
                            Ok(_) => {}
                            Err(raw) => out.problems.push(format!(
                                "skill folder {}: its name is not UTF-8; rename it",
                                dir.join(raw).display()
                            )),
                        }
                    }
                }
                Err(e) => out.problems.push(format!("skill directory {}: cannot list it: {e}", dir.display())),
            }
            names.sort();
            for name in names {
                let path = dir.join(&name);
                // A plain file beside the skill folders is not a skill.
                if base.symlink_metadata(&name).is_ok_and(|m| m.is_file()) {
                    continue;
                }
                match read_skill(&base, &name, &path) {
                    Ok(skill) if out.skills.iter().any(|s| s.name == skill.name) => out.problems.push(format!(
                        "skill folder {}: the skill name '{}' is taken by an earlier skill; rename one of them",
                        path.display(),
                        skill.name
                    )),
                    Ok(skill) => out.skills.push(skill),
                    Err(problem) => out.problems.push(format!("skill folder {}: {problem}", path.display())),
                }
            }
        }
        out
    }

    /// Whether no skill was found (then `Skill` is not registered).
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The skills, in the order found.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// What was wrong with each folder that is not a skill.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// The `Skill` tool's description: what it does and every skill, one
    /// line each (`- NAME: "DESCRIPTION"`).
    pub fn description(&self) -> String {
        let mut text = String::from(
            "Read a skill: instructions for a kind of task, with files beside them. Call it with a skill's name \
             before doing a task its description fits, and follow what it returns; give `file` as well to read \
             one of the files the skill lists. Skills are not tools.\n\nAvailable skills:\n",
        );
        for (i, skill) in self.skills.iter().enumerate() {
            // The name passed the name rule; the description is quoted.
            let line = format!("- {}: {}\n", skill.name, quoted(&skill.description));
            if text.len() + line.len() > MAX_LISTING_BYTES {
                text.push_str(&format!("(and {} more skills, not listed)\n", self.skills.len() - i));
                break;
            }
            text.push_str(&line);
        }
        text
    }

    /// The `Skill` tool's input schema.
    pub fn schema() -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "skill": {"type": "string", "description": "The name of the skill to read."},
                "file": {
                    "type": "string",
                    "description": "A file the skill lists, relative to its folder; without it, the skill's instructions."
                }
            },
            "required": ["skill"]
        })
    }

    /// One call of `Skill`: the instructions and files of `input.skill`, or
    /// the file `input.file` of it.
    pub fn view(&self, input: &serde_json::Value) -> Result<String, String> {
        let name = input.get("skill").and_then(|s| s.as_str()).unwrap_or_default();
        let Some(skill) = self.skills.iter().find(|s| s.name == name) else {
            let known: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
            return Err(format!(
                "SkillNotFoundError: Skill '{name}' not found. The available skills are: {}",
                known.join(", ")
            ));
        };
        match input.get("file").and_then(|f| f.as_str()) {
            Some(file) => skill.read_file(file),
            None => Ok(skill.render()),
        }
    }
}

impl Skill {
    /// The instructions and the files beside them, for the model.
    fn render(&self) -> String {
        let (name, dir) = (attribute(&self.name), attribute(&self.dir.display().to_string()));
        let mut text = format!("<skill name=\"{name}\" dir=\"{dir}\">\n");
        text.push_str(self.instructions.trim());
        text.push_str("\n</skill>\n");
        if !self.files.is_empty() {
            text.push_str(&format!(
                "\nFiles beside {SKILL_FILE} (read one with {{\"skill\": \"{}\", \"file\": PATH}}):\n",
                self.name
            ));
            for file in &self.files {
                // A file name may hold a line break too.
                text.push_str(&format!("- {}\n", crate::escape::line(file)));
            }
            if self.unlisted > 0 {
                text.push_str(&format!("(and {} more files, not listed)\n", self.unlisted));
            }
        }
        text
    }

    /// One file of the skill's folder: a relative path without `..`,
    /// read through the folder's handle (so a link out of it reads
    /// nothing), at most [`MAX_FILE_BYTES`], UTF-8.
    fn read_file(&self, file: &str) -> Result<String, String> {
        let path = Path::new(file);
        if file.is_empty() || !path.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(format!(
                "Error: '{file}' is not a file of skill '{}'; give a path relative to its folder, without `..`, as the skill lists it",
                self.name
            ));
        }
        let refuse = |e: std::io::Error| format!("Error: cannot read '{file}' of skill '{}': {e}", self.name);
        let opened = open_nonblocking(&self.root, path).map_err(refuse)?;
        let bound = Bound { max: MAX_FILE_BYTES, name: "what Skill returns of one file" };
        let bytes = own_file::read_opened(opened, &self.dir.join(path), bound).map_err(refuse)?.bytes;
        String::from_utf8(bytes).map_err(|_| format!("Error: '{file}' of skill '{}' is not UTF-8 text", self.name))
    }
}

/// Reads the skill folder `name` of `base` (shown as `path`).
fn read_skill(base: &Dir, name: &str, path: &Path) -> Result<Skill, String> {
    let root = base.open_dir(name).map_err(|e| {
        format!("cannot open it ({e}); a skill is a folder inside the skill directory, not a link out of it")
    })?;
    let text = read_bounded(&root, path, SKILL_FILE, MAX_SKILL_FILE_BYTES)?;
    let (front, body) = split_front_matter(&text)?;
    let (name, description) = parse_front_matter(front)?;
    let (files, unlisted) = list_files(&root);
    Ok(Skill { name, description, instructions: body.to_string(), dir: path.to_path_buf(), files, unlisted, root })
}

/// Reads `file` of the skill folder `root` (shown as `dir`): a regular
/// file inside it of at most `limit` bytes.
fn read_bounded(root: &Dir, dir: &Path, file: &str, limit: u64) -> Result<String, String> {
    let opened = open_nonblocking(root, Path::new(file)).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("no {file} in it; a skill folder holds a {file}"),
        _ => format!("cannot read its {file} ({e}); it must be a file inside the folder, not a link out of it"),
    })?;
    let bound = Bound { max: limit, name: "what a skill's SKILL.md may hold; shorten it" };
    let bytes = own_file::read_opened(opened, &dir.join(file), bound).map_err(|e| e.to_string())?.bytes;
    String::from_utf8(bytes).map_err(|_| format!("its {file} is not UTF-8 text"))
}

/// Opens `path` under `root` as toolhost opens its own files
/// ([`own_file::open`]: without waiting, so a FIFO planted in place of a
/// skill file is refused by [`own_file::read_opened`], not waited on).
fn open_nonblocking(root: &Dir, path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    Ok(root.open_with(path, &options)?.into_std())
}

/// The front matter (between the opening `---` line and the next) and the
/// body after it.
fn split_front_matter(text: &str) -> Result<(&str, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let no_front = || {
        format!(
            "its {SKILL_FILE} does not start with YAML front matter (a `---` line, `name: ...`, `description: ...`, `---`)"
        )
    };
    let rest = text.strip_prefix("---").ok_or_else(no_front)?;
    let rest = rest.strip_prefix("\r\n").or_else(|| rest.strip_prefix('\n')).ok_or_else(no_front)?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err(format!("its {SKILL_FILE} front matter has no closing `---` line"))
}

/// `name` and `description` of the front matter.
fn parse_front_matter(front: &str) -> Result<(String, String), String> {
    let value: serde_norway::Value =
        serde_norway::from_str(front).map_err(|e| format!("its {SKILL_FILE} front matter is not YAML: {e}"))?;
    let field = |key: &str| -> Result<String, String> {
        match value.get(key) {
            Some(serde_norway::Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            Some(_) => Err(format!("its {SKILL_FILE} front matter `{key}` must be a non-empty string")),
            None => Err(format!("its {SKILL_FILE} front matter has no `{key}`")),
        }
    };
    let name = field("name")?;
    super::name::check_name("skill", &name).map_err(|e| format!("its {SKILL_FILE}: {e}"))?;
    let description = field("description")?;
    super::tool::check_text_size("description", &description, MAX_SKILL_DESCRIPTION_BYTES)
        .map_err(|e| format!("its {SKILL_FILE}: {e}"))?;
    Ok((name, description))
}

/// The files of a skill folder beside its `SKILL.md` (links are neither
/// followed nor listed), at most [`MAX_LISTED_FILES`], and how many more.
fn list_files(root: &Dir) -> (Vec<String>, usize) {
    let mut files = Vec::new();
    let mut more = 0;
    let mut pending: Vec<(PathBuf, usize)> = vec![(PathBuf::new(), 0)];
    while let Some((rel, depth)) = pending.pop() {
        let dir = if rel.as_os_str().is_empty() { root.try_clone() } else { root.open_dir(&rel) };
        let Ok(entries) = dir.and_then(|d| d.entries()) else { continue };
        for entry in entries.flatten() {
            let Ok(name) = entry.file_name().into_string() else { continue };
            let path = rel.join(&name);
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() && depth + 1 < MAX_DEPTH {
                pending.push((path, depth + 1));
            } else if kind.is_file() && !(depth == 0 && name == SKILL_FILE) {
                if files.len() < MAX_LISTED_FILES {
                    files.push(path.display().to_string());
                } else {
                    more += 1;
                }
            }
        }
    }
    files.sort();
    (files, more)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_is_split_from_the_body() {
        let (front, body) = split_front_matter("---\nname: a\ndescription: b\n---\nDo this.\n").unwrap();
        assert_eq!((front, body), ("name: a\ndescription: b\n", "Do this.\n"));
        assert!(split_front_matter("name: a\n").unwrap_err().contains("does not start"));
        assert!(split_front_matter("---\nname: a\n").unwrap_err().contains("no closing"));
        let (name, description) = parse_front_matter("name: pdf\ndescription: >\n  Fill PDF\n  forms.\n").unwrap();
        assert_eq!((name.as_str(), description.as_str()), ("pdf", "Fill PDF forms."));
        assert!(parse_front_matter("name: a\n").unwrap_err().contains("no `description`"));
        assert!(parse_front_matter("name: [1]\ndescription: d\n").unwrap_err().contains("`name` must be"));
        assert!(parse_front_matter("name: ../x\ndescription: d\n").unwrap_err().contains("skill name"));
    }
}
