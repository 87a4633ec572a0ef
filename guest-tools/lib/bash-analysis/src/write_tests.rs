//! Issue 12 (a word naming a dangerous path makes a part a safety ask,
//! whatever the program) and issue 22 items 1–4 (read-only `sed`, the
//! in-place suffix, `-e` with an attached script, harmless assignments),
//! table-driven in every mode.

use super::*;
use crate::tests::{ctx, engine};
use Behavior::{Allow as A, Ask as K, Deny as D};

const MODES: [Mode; 5] = [Mode::Default, Mode::AcceptEdits, Mode::Explore, Mode::Bypass, Mode::DontAsk];

/// What the engine does with a bypass-immune safety ask when `Bash` is
/// allowed outright: the allow rule cannot silence it; dont-ask and
/// explore refuse; bypass skips safety asks by design (spec §13.1,
/// docs/permissions.md).
fn safety_ask_outcome(mode: Mode) -> Behavior {
    match mode {
        Mode::Default | Mode::AcceptEdits => K,
        Mode::Explore | Mode::DontAsk => D,
        Mode::Bypass => A,
    }
}

/// Asserts that `cmd` is a bypass-immune sensitive-path ask from the tool
/// in every mode, and what the engine makes of it with a tool-wide allow.
fn assert_safety_ask(cmd: &str) {
    let c = ctx(Mode::Default);
    assert!(!check_read_only(cmd), "read-only: {cmd}");
    for mode in MODES {
        let v = check_permissions(cmd, &Context { mode, ..c.clone() }, &DangerLists::default());
        assert_eq!((v.behavior, v.bypass_immune), (K, true), "{cmd} in {mode:?}: {v:?}");
        assert_eq!(engine(mode, &[""], &[], &[], cmd, &c), safety_ask_outcome(mode), "{cmd} in {mode:?}");
    }
}

/// Issue 12: (template, dangerous path). `@` stands for the path; the same
/// command with a harmless path (`out/f.txt`) must not be a sensitive-path
/// ask, so the ask comes from the path alone.
const WRITES: &[(&str, &str)] = &[
    // positional destinations
    ("cp key.pub @", "~/.ssh/authorized_keys"),
    ("cp -r conf/ @", "~/.ssh"),
    ("mv x @", "~/.bashrc"),
    ("install -m 600 k @", "~/.ssh/config"),
    ("ln -sf /tmp/x @", "~/.zshrc"),
    ("rsync -a x @", "~/.profile"),
    ("rsync -a x host:@", ".bashrc"),
    ("scp x user@host:@", "~/.ssh/authorized_keys"),
    ("scp host:/etc/x @", ".env"),
    ("cat x | tee -a @", "~/.bash_profile"),
    ("truncate -s 0 @", ".env.local"),
    ("unzip x.zip -d @", ".git/hooks"),
    ("unzip -o x.zip -d @", "~/.ssh"),
    ("tar -C @ -xf x.tar", ".git"),
    ("tar xf x.tar -C @", "~/.ssh"),
    ("tar --directory=@ -xf x.tar", ".vscode"),
    ("git clone https://x/y.git @", ".git/modules/y"),
    ("patch @ fix.diff", ".gitconfig"),
    ("mkfifo @", ".npmrc"),
    ("somecmd @", ".pypirc"),
    ("./build.sh --install @", ".idea/workspace.xml"),
    ("python3 gen.py @", ".envrc"),
    ("node gen.js @", ".env.production"),
    ("make install DESTDIR=@", ".git"),
    ("chattr +i @", ".netrc"),
    ("dos2unix @", ".gitmodules"),
    ("vim -c wq @", ".zprofile"),
    // option values, every spelling
    ("curl -o @ https://x/y", "~/.bashrc"),
    ("curl -sSLo @ https://x/y", "~/.bashrc"),
    ("curl --output @ https://x/y", "~/.ssh/authorized_keys"),
    ("curl --output=@ https://x/y", "$HOME/.profile"),
    ("wget -O @ https://x/y", "~/.bashrc"),
    ("wget -O@ https://x/y", "~/.zshrc"),
    ("wget --output-document=@ https://x/y", ".env"),
    ("wget -P @ https://x/y", "~/.ssh"),
    ("somecmd -o@", "~/.bashrc"),
    ("somecmd -o @", ".env"),
    ("somecmd --output=@", "$HOME/.profile"),
    ("somecmd --output @", ".git/config"),
    ("gcc -o @ main.c", ".git/hooks/pre-commit"),
    ("gcc main.c -o@", ".git/hooks/post-checkout"),
    ("go build -o @ .", ".git/hooks/pre-push"),
    ("cargo build --target-dir=@", ".git"),
    ("cp -t @ a b", "~/.ssh"),
    ("cp --target-directory=@ a b", "~/.ssh"),
    ("mv --target-directory @ a", ".git/hooks"),
    ("sort -o @ f", ".env"),
    ("sort --output=@ f", ".env"),
    ("dd if=key.pub of=@", "~/.ssh/authorized_keys"),
    ("dd if=x of=@ bs=1", "~/.bashrc"),
    ("openssl genrsa -out @", "~/.ssh/id_rsa"),
    ("ssh-keygen -f @ -N ''", "~/.ssh/id_ed25519"),
    ("gpg --output @ --decrypt x.gpg", ".env"),
    ("pandoc x.md -o @", ".git/description"),
    ("jq . x.json --arg f @", ".netrc"),
    ("docker run -v @:/x alpine", "~/.ssh"),
    ("docker cp c:/x @", ".env"),
    ("git config --file=@ user.name x", "~/.gitconfig"),
    ("npm config set x y --userconfig=@", "~/.npmrc"),
    // assignments
    ("F=@ somecmd", "~/.bashrc"),
    ("HISTFILE=@ bash -i", "~/.bashrc"),
    ("OUT=@ make", ".env"),
    // quoting, `..`, `$HOME`, wrappers
    ("cp x \"@\"", "$HOME/.bashrc"),
    ("cp x '@'", ".env"),
    ("cp x @", "sub/../.env"),
    ("cp x @", "../project/.git/config"),
    ("sudo cp x @", "/root/.ssh/authorized_keys"),
    ("env A=1 cp x @", "~/.bashrc"),
    ("nohup somecmd --log=@", "~/.profile"),
    ("xargs -a list cp -t @", "~/.ssh"),
    ("ls && cp x @", "~/.bashrc"),
    // brace expansion
    ("cp x @", "~/.bash{rc,}"),
    ("rm @", "{a,~/.bashrc}"),
    ("tee @ < x", "~/.{bashrc,x}"),
    ("cp x @", "~/.bash{r..r}c"),
    ("make; cp x @", ".env"),
];

#[test]
fn issue_12_any_word_naming_a_dangerous_path_is_a_safety_ask() {
    let mut programs = std::collections::HashSet::new();
    for (template, path) in WRITES {
        let cmd = template.replace('@', path);
        assert_safety_ask(&cmd);
        let control = template.replace('@', "out/f.txt");
        let v = check_permissions(&control, &ctx(Mode::Default), &DangerLists::default());
        assert!(!v.message.contains("sensitive paths"), "control {control}: {v:?}");
        let prog = template.split_whitespace().find(|w| !w.contains('=')).unwrap_or(template);
        programs.insert(prog.to_string());
    }
    assert!(WRITES.len() >= 60 && programs.len() >= 25, "{} rows, {} programs", WRITES.len(), programs.len());
}

#[test]
fn issue_12_settings_lists_and_non_paths() {
    // `[tools.Bash] dangerous_files` decides what is dangerous.
    let lists = DangerLists { files: vec!["secrets.txt".into()], directories: vec![] };
    let v = check_permissions("curl -o secrets.txt https://x", &ctx(Mode::Default), &lists);
    assert_eq!((v.behavior, v.bypass_immune), (K, true), "{v:?}");
    let v = check_permissions("curl -o ~/.bashrc https://x", &ctx(Mode::Default), &lists);
    assert!(!v.bypass_immune, "{v:?}");
    // Words that cannot be paths: sed scripts, regexes, URLs, numbers, messages.
    for cmd in [
        "sed -i 's/.git/x/' notes.md",
        "sed -i -e 's/\\.env$/.env.example/' list.txt",
        "grep -r '/.env/' src > hits.txt",
        "rg '.ssh/config' docs > out.txt",
        "awk '/.git/ {print}' log.txt > out.txt",
        "curl https://example.com/.env -o out.txt",
        "wget https://example.com/.ssh/config",
        "git commit -m 'ignore .env files'",
        "npm version 1.2.3",
        "head -c 100 f > out.txt",
    ] {
        let v = check_permissions(cmd, &ctx(Mode::Default), &DangerLists::default());
        assert!(!v.message.contains("sensitive paths"), "{cmd}: {v:?}");
    }
    // A read-only invocation whose output goes to a file: its words are
    // reads, its redirection target is judged.
    for cmd in ["wc -l .env > out.txt", "head .git/config >> log.txt", "ls ~/.ssh &> all.txt"] {
        let v = check_permissions(cmd, &ctx(Mode::Default), &DangerLists::default());
        assert!(!v.message.contains("sensitive paths"), "{cmd}: {v:?}");
    }
    assert!(check("cat x > ~/.bashrc").bypass_immune);
    // Harmless names from the reference's list stay harmless.
    assert_read_only("NODE_ENV=prod cat package.json");
    assert_read_only("PYTHONUNBUFFERED=1 ls");
    // Reads by read-only programs keep their behaviour.
    for cmd in ["cat ~/.bashrc", "ls ~/.ssh", "grep x .env", "head .git/config", "sed -n 1p ~/.bashrc"] {
        assert_eq!(engine(Mode::Explore, &[], &[], &[], cmd, &ctx(Mode::Default)), A, "{cmd}");
    }
}

/// Asserts that `cmd` is read-only, allowed in every mode with no rule.
fn assert_read_only(cmd: &str) {
    assert!(check_read_only(cmd), "not read-only: {cmd}");
    for mode in MODES {
        assert_eq!(engine(mode, &[], &[], &[], cmd, &ctx(Mode::Default)), A, "{cmd} in {mode:?}");
    }
}

/// Asserts that `cmd` is not read-only: asked about with no rule in the
/// default mode, denied in explore (accept-edits and dont-ask may still
/// allow an in-place edit inside the working directory).
fn assert_asked(cmd: &str) {
    assert!(!check_read_only(cmd), "read-only: {cmd}");
    let c = ctx(Mode::Default);
    assert_eq!(engine(Mode::Default, &[], &[], &[], cmd, &c), K, "{cmd}");
    assert_eq!(engine(Mode::Explore, &[], &[], &[], cmd, &c), D, "{cmd}");
}

#[test]
fn issue_22_1_sed_without_writes_is_read_only() {
    for cmd in [
        "sed -n '/start/,/end/p' notes.md",
        "sed 's/a/b/' f",
        "sed 's/a/b/g' f.txt g.txt",
        "sed -E 's/(a+)/\\1x/' f",
        "sed -r 's/a|b/c/' f",
        "sed -e 's/a/b/' -e 's/c/d/' f",
        "sed -n '5p' f",
        "sed '1d' f",
        "sed '/^#/d;/^$/d' config.ini",
        "sed -n '$p' f",
        "sed '1!G;h;$!d' f",
        "sed ':a;N;$!ba;s/\\n/ /g' f",
        "sed -n '/x/{p;q}' f",
        "sed 'y/abc/xyz/' f",
        "sed 's|/usr|/opt|g' paths.txt",
        "sed '/foo/a bar' f",
        "sed -s -n -u '1p' a b",
        "sed 's/[0-9]/_/g' f",
        "sed --quiet --regexp-extended 's/a/b/p' f",
        "cat f | sed 's/a/b/' | sort",
        "sed -n 1p ~/.bashrc",
        "sed 's/x/w/' f",
        "sed '=' f",
        "sed -z 's/\\n/,/g' f",
    ] {
        assert_read_only(cmd);
    }
    // `a\` takes the next `-e` chunk as its text, as GNU sed does.
    assert_read_only("sed -e 'a\\' -e 'w out' f");
    // The opposites stay asked.
    for cmd in [
        "sed -i 's/a/b/' f",
        "sed 'w /etc/x' f",
        "sed 's/x/y/w out' f",
        "sed e f",
        "sed 's/x/date/e' f",
        "sed '1e id' f",
        "sed 'W out' f",
        "sed 'r /etc/passwd' f",
        "sed 'R ~/.bashrc' f",
        "sed -f script.sed f",
        "sed --file=script.sed f",
        "sed -n 'p' f -i",
        "sed 's/a/b/;w out' f",
        "sed -e 'a foo' -e 'w out' f",
        "sed ':a w out' f",
        "sed '/[/]w out/p' f",
        "sed $X f",
        "sed -n 'p' f > out.txt",
        "sed --debug-x 's/a/b/' f",
        "sed --expr='w out' f",
    ] {
        assert_asked(cmd);
    }
}

#[test]
fn issue_22_2_an_attached_in_place_suffix_is_one_flag() {
    let c = ctx(Mode::Default);
    for cmd in [
        "sed -i.orig 's/a/b/' f",
        "sed -i.bak 's/a/b/' f",
        "sed -i~ 's/a/b/' f",
        "sed -i.orig -e 's/a/b/' f",
        "sed --in-place=.orig 's/a/b/' f",
        "sed --in-place=.bak -e 's/a/b/g' f g",
        "sed -n -i.orig 's/a/b/p' f",
        "sed -i.orig -E 's/(a)/\\1/' f",
        "sed -i'' 's/a/b/' f",
        "sed -i.2024-01-01 's/a/b/' f",
        "sed -i_old 's/x/y/g' src/a.txt",
        "sed -Ei.orig 's/a+/b/' f",
        "sed -ni.orig '1,5p' f",
        "sed --in-place=.orig --expression='s/a/b/' f",
        "sed -i.orig 's|a|b|' /tmp/project/f",
    ] {
        let v = check_permissions(cmd, &c, &DangerLists::default());
        assert!(!v.bypass_immune && !v.message.contains("flag"), "{cmd}: {v:?}");
        assert_eq!(engine(Mode::Default, &[], &[], &[], cmd, &c), K, "{cmd}");
        assert_eq!(engine(Mode::AcceptEdits, &[], &[], &[], cmd, &c), A, "{cmd}");
        assert_eq!(engine(Mode::DontAsk, &[], &[], &[], cmd, &c), A, "{cmd}");
        assert_eq!(engine(Mode::Explore, &[], &[], &[], cmd, &c), D, "{cmd}");
        assert_eq!(engine(Mode::Bypass, &[], &[], &[], cmd, &c), A, "{cmd}");
    }
    // The suffix is not a licence: dangerous files, writes and unknown
    // flags still ask; a suffix with `/` names where backups go.
    for cmd in [
        "sed -i.orig 's/a/b/' .env",
        "sed --in-place=.orig 's/a/b/' ~/.bashrc",
        "sed -i.orig 's/a/b/w out' f",
        "sed -i'/home/user/.ssh/*' 's/a/b/' f",
        "sed -i.orig -x 's/a/b/' f",
    ] {
        let v = check_permissions(cmd, &c, &DangerLists::default());
        assert_eq!((v.behavior, v.bypass_immune), (K, true), "{cmd}: {v:?}");
    }
    // GNU sed takes no separate suffix word: `bak` is the script.
    assert!(check("sed -i bak 's/a/b/' f").bypass_immune);
    // The reference read `w …` here as a suffix and let sed write anywhere.
    assert!(check("sed -i 'w /home/user/.bashrc' 's/a/b/' f").bypass_immune);
}

/// [`check_sed_args`] on the parsed words of a one-part `sed` command.
fn sed_args_error(cmd: &str) -> Option<String> {
    let a = crate::parse::analyse(cmd);
    let args: Vec<&str> = a.parts[0].words[1..].iter().map(|w| w.text()).collect();
    check_sed_args(&args, &DangerLists::default())
}

fn check(cmd: &str) -> Verdict {
    check_permissions(cmd, &ctx(Mode::Default), &DangerLists::default())
}

#[test]
fn issue_22_3_a_script_attached_to_e_is_the_script() {
    for cmd in [
        "sed -ne'/x/p' f",
        "sed -e's/a/b/' f",
        "sed -es/a/b/ f",
        "sed -ne '/x/p' f",
        "sed -nes/a/b/p f",
        "sed -Ee's/a+/b/' f",
        "sed -e's/a/b/' -e's/c/d/' f",
        "sed -ne'1,5p' f",
        "sed -ne'$p' f",
        "sed -e'/^$/d' f",
        "sed -ne'/start/,/end/p' f",
        "sed -e'y/ab/ba/' f",
        "sed --expression='s/a/b/' f",
        "sed --expression 's/a/b/' f",
        "sed -nEe'1p' a b",
    ] {
        assert_read_only(cmd);
        // Layer 3 (the reference's sed allowlist) reads the same script.
        assert!(!sed_args_error(cmd).unwrap_or_default().contains("flag"), "{cmd}");
    }
    // What the attached script says is judged like any script.
    for cmd in ["sed -ne'w out' f", "sed -e's/a/b/w out' f", "sed -ee f", "sed -i -e's/a/b/' f"] {
        assert_asked(cmd);
    }
    for cmd in ["sed -i -e's/a/b/' f", "sed -i.orig -ne'1,5p' f"] {
        assert_eq!(engine(Mode::AcceptEdits, &[], &[], &[], cmd, &ctx(Mode::Default)), A, "{cmd}");
    }
    // `-i -e's/a/b/' FILE`: the file is the target, not skipped as a script.
    let v = check_permissions("sed -i -e's/a/b/' /etc/passwd", &ctx(Mode::AcceptEdits), &DangerLists::default());
    assert_ne!(v.behavior, A, "{v:?}");
    let v = check_permissions("sed -i -e's/a/b/' ~/.bashrc", &ctx(Mode::AcceptEdits), &DangerLists::default());
    assert!(v.bypass_immune, "{v:?}");
}

#[test]
fn issue_22_4_harmless_assignments_keep_a_command_read_only() {
    for cmd in [
        "LC_ALL=C sort f",
        "TZ=UTC date",
        "FOO=bar cat f",
        "LANG=C.UTF-8 ls -la",
        "LC_ALL=C grep -r x src",
        "TERM=dumb git log --oneline",
        "NO_COLOR=1 git diff",
        "COLUMNS=200 ls",
        "A=1 B=2 wc -l f",
        "X= cat f",
        "CUSTOM_VAR=value head -n 3 f",
        "TZ=America/New_York date +%H",
        "LC_COLLATE=C sort -u names.txt",
        "DEBUG=1 cat f | LC_ALL=C sort",
        "RUST_LOG=debug tail -n 5 log.txt",
        "FOO='a b' ls",
        "K=v sed -n 1p f",
    ] {
        assert_read_only(cmd);
    }
    for cmd in [
        "LD_PRELOAD=x ls",
        "PATH=/tmp:$PATH ls",
        "PATH=/tmp ls",
        "DYLD_INSERT_LIBRARIES=x ls",
        "BASH_ENV=x cat f",
        "ENV=x ls",
        "IFS=/ ls",
        "PS4='$(id)' ls",
        "SHELLOPTS=xtrace ls",
        "PROMPT_COMMAND=id ls",
        "GIT_PAGER=x git log",
        "GIT_EXTERNAL_DIFF=x git diff",
        "PAGER=x git log",
        "EDITOR=x git log",
        "VISUAL=x git log",
        "LESSOPEN='|x %s' less f",
        "GREP_OPTIONS=-r grep x",
        "PYTHONSTARTUP=x ls",
        "NODE_OPTIONS=--require=x ls",
        "PERL5OPT=-Mx ls",
        "RUBYOPT=x ls",
        "HOME=/tmp/x git log",
        "RIPGREP_CONFIG_PATH=x rg y",
        "GCONV_PATH=/tmp ls",
        "ld_preload=x ls",
        "F=~/.bashrc cat f",
        "F=$HOME/.ssh/id_rsa ls",
        "F=.env ls",
    ] {
        assert_asked(cmd);
    }
    // A value naming a dangerous path is a safety ask (issue 12).
    assert!(check("F=~/.bashrc cat f").bypass_immune);
    assert!(check("F=x:~/.ssh/config ls").bypass_immune);
    // Writing options of the new read-only programs, in every spelling.
    for cmd in ["sort -o out f", "sort -uo out f", "sort --out=x f", "sort --compress-program=x f", "date -s 1"] {
        assert_asked(cmd);
    }
    assert_read_only("date -Iseconds");
    assert_read_only("sort -t o -k 2 f");
}
