//! The description the model reads.

/// Written in the spirit of the reference (§5.1) but true for toolhost:
/// every call is a fresh shell, so nothing (not even the directory)
/// carries over between calls.
pub const DESCRIPTION: &str = "\
Executes a shell command and returns its output.

Each call runs `/bin/sh -c <command>` (`cmd /c` on a Windows backend) as a new process in the working directory. Nothing persists between calls: a `cd`, an `export`, shell variables and functions last only until the end of that one command. No login profile is loaded and standard input is closed, so commands that wait for input (editors, pagers, `git rebase -i`, password prompts) cannot be answered; pass non-interactive flags instead.

Usage:
- Prefer the dedicated tools: Glob (not `find`/`ls`) to find files, Grep (not `grep`/`rg`) to search contents, Read (not `cat`/`head`/`tail`) to read files, Edit (not `sed`/`awk`) to change files, Write (not `echo >`/`cat <<EOF`) to create them. Keep Bash for running programs: builds, tests, git, package managers.
- Use absolute paths, or paths relative to the working directory, instead of `cd`. When a program must run elsewhere, change directory inside the same command: `cd sub && make`.
- Put dependent steps in one command joined with `&&` (or `;` when a failure should not stop the rest). Independent commands can be separate calls.
- Quote paths that contain spaces with double quotes: `cd \"my dir\"`.
- `timeout` is in milliseconds: 120000 (2 minutes) by default, at most 600000 (10 minutes). At the timeout the command and every process it started are killed.
- Standard output and standard error come back together, in the order they were written, streamed while the command runs. Output past 30000 characters is cut and marked `... (output truncated)`; filter or page big outputs (`| head -100`, `| tail -50`, `grep -c`) instead.
- A non-zero exit ends the result with `Command failed with exit code N: <command>`; a timeout ends it with `Command timed out after Nms: <command>`.
- Give a short `description` of what the command does (5-10 words), for the user.
- Commands are checked before they run: read-only commands (`ls`, `git status`, `cat f | grep x`) run directly; other commands may need the user's approval, and some (removals of system directories, changes to shell, git or editor configuration files, commands that cannot be analysed statically such as `$(...)`) need it whatever the permission rules say.

Git:
- Commit, push, or change branches only when the user asks. Never change git config, never skip hooks (`--no-verify`), and never run destructive commands (`push --force`, `reset --hard`, `clean -f`, `branch -D`, `checkout -- .`) unless the user explicitly asked for them.
- Stage specific files rather than `git add -A` or `git add .`, so secrets and build output are not committed by accident.
- Pass commit messages with `-m \"...\"`; interactive flags (`-i`) cannot be used.";
