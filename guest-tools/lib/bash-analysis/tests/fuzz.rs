//! Property tests: no panic, no hang, and nothing is allowed while a part of
//! the command is not read-only.

use bash_analysis::*;
use proptest::prelude::*;

fn ctx(mode: Mode) -> Context {
    Context { mode, working_dirs: vec!["/tmp/project".into()], cwd: "/tmp/project".into(), home: "/home/user".into() }
}

const RO: &[&str] =
    &["ls", "ls -la", "cat f.txt", "pwd", "git status", "grep -r x .", "echo hi", "git log -n 3", "wc -l f", "head f"];
const BAD: &[&str] = &[
    "rm x",
    "rm -rf /",
    "curl http://x",
    "sh",
    "git push",
    "touch f",
    "tee /etc/passwd",
    "mv a b",
    "npm install",
    "python -c 'import os'",
    "git branch -D main",
    "dd if=a of=b",
    "chmod 777 f",
    "find . -delete",
    "sed -i s/a/b/ f",
];
const SEPS: &[&str] = &[";", " ; ", "&&", " && ", "||", "|", " | ", "|&", " & ", "&", "\n", " ;\n", "\n\n"];

/// Disguises a simple command's program the ways people try to sneak it past rules.
fn disguise(cmd: &str, how: u8) -> String {
    let (prog, rest) = cmd.split_once(' ').map(|(p, r)| (p, format!(" {r}"))).unwrap_or((cmd, String::new()));
    match how % 9 {
        0 => cmd.to_string(),
        1 => format!("'{prog}'{rest}"),
        2 => format!("\"{prog}\"{rest}"),
        3 => format!("\\{prog}{rest}"),
        4 => format!("/usr/bin/{prog}{rest}"),
        5 => format!("command {prog}{rest}"),
        6 => format!("env FOO=1 {prog}{rest}"),
        7 => format!("  {cmd}  "),
        _ => format!("LANG=C {cmd}"),
    }
}

fn compound() -> impl Strategy<Value = (String, Vec<&'static str>)> {
    prop::collection::vec((any::<bool>(), 0usize..16, 0u8..9, 0usize..SEPS.len()), 1..5).prop_map(|items| {
        let mut s = String::new();
        let mut used: Vec<&'static str> = Vec::new();
        for (k, (bad, i, how, sep)) in items.iter().enumerate() {
            if k > 0 {
                s.push_str(SEPS[*sep]);
            }
            let part = if *bad { BAD[i % BAD.len()] } else { RO[i % RO.len()] };
            if *bad {
                used.push(part);
            }
            s.push_str(&disguise(part, *how));
        }
        (s, used)
    })
}

/// Programs that may write through their arguments (known or not).
const WRITERS: &[&str] = &[
    "cp x",
    "mv x",
    "install",
    "ln -s x",
    "rsync -a x",
    "scp x",
    "tee -a",
    "curl -sS",
    "wget -q",
    "tar -xf a.tar",
    "unzip a.zip",
    "somecmd",
    "./tool",
    "/opt/x/bin/gen",
    "python3 gen.py",
    "node gen.js",
    "make",
    "gcc a.c",
    "sed -i s/a/b/",
    "dd if=x",
    "git clone u",
    "docker run",
    "cargo build",
    "truncate -s0",
    "touch",
];
/// How a word hands the path over: `@` is the path.
const SPELLINGS: &[&str] = &[
    "@",
    "-o @",
    "-o@",
    "-O @",
    "-O@",
    "--output @",
    "--output=@",
    "of=@",
    "--target-directory=@",
    "-t @",
    "-C @",
    "-d @",
    "-v @:/x",
    "host:@",
    "--log=@",
    "-P @",
];
/// Dangerous paths as a model might write them (cwd /tmp/project, home /home/user).
const DANGEROUS: &[&str] = &[
    "~/.bashrc",
    "$HOME/.profile",
    "\"$HOME/.zshrc\"",
    "/home/user/.ssh/authorized_keys",
    ".env",
    "'.env.local'",
    "\".git/hooks/pre-commit\"",
    "sub/../.envrc",
    "../project/.git/config",
    "~/.ssh",
    ".vscode/settings.json",
    ".idea",
    "$'.npmrc'",
    "\\.pypirc",
    "/root/.gitconfig",
    ".b*",
    "~/.ssh/conf*",
    "~/.bash{rc,}",
    "{a,.env}",
];

/// A command with a part that names a dangerous path in one of its words,
/// disguised and joined to read-only parts.
fn dangerous_write() -> impl Strategy<Value = String> {
    (
        0usize..WRITERS.len(),
        0usize..SPELLINGS.len(),
        0usize..DANGEROUS.len(),
        0u8..9,
        any::<bool>(),
        prop::collection::vec((0usize..RO.len(), 0usize..SEPS.len()), 0..3),
    )
        .prop_map(|(w, sp, d, how, assign, others)| {
            let word = SPELLINGS[sp].replace('@', DANGEROUS[d]);
            let part = if assign && sp == 0 {
                format!("OUT={} {}", DANGEROUS[d], WRITERS[w])
            } else {
                format!("{} {word}", WRITERS[w])
            };
            // Quoting the assignment word would quote the path's own quotes.
            let how = if assign && sp == 0 && matches!(how % 9, 1 | 2) { 0 } else { how };
            let mut cmd = disguise(&part, how);
            for (r, sep) in others {
                cmd = format!("{}{}{cmd}", RO[r], SEPS[sep]);
            }
            cmd
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    /// Issue 12: a part naming a dangerous path in any word, whatever the
    /// program and spelling, is a bypass-immune safety ask; not even a
    /// tool-wide allow rule lets it through.
    #[test]
    fn a_dangerous_path_in_any_word_is_never_allowed(cmd in dangerous_write()) {
        let lists = DangerLists::default();
        prop_assert!(!check_read_only(&cmd), "read-only: {cmd:?}");
        for mode in [Mode::Default, Mode::AcceptEdits, Mode::DontAsk] {
            let v = check_permissions(&cmd, &ctx(mode), &lists);
            prop_assert!(v.behavior == Behavior::Ask && v.bypass_immune, "{cmd:?} in {mode:?}: {v:?}");
        }
    }

    #[test]
    fn never_allows_a_non_read_only_part((cmd, used) in compound()) {
        let has_bad = !used.is_empty();
        let lists = DangerLists::default();
        if has_bad {
            prop_assert!(!check_read_only(&cmd), "read-only: {cmd:?}");
            let v = check_permissions(&cmd, &ctx(Mode::Default), &lists);
            prop_assert_ne!(v.behavior, Behavior::Allow, "{:?}", cmd);
            // A rule for a read-only part never covers the bad part.
            let rules = vec!["ls:*".to_string(), "git status:*".to_string(), "cat:*".to_string(), "echo *".to_string()];
            prop_assert!(match_rules(RuleKind::Allow, &rules, &cmd).is_none(), "allow matched {cmd:?}");
        }
        // Deny rules for the bad programs cannot be dodged.
        for bad in &used {
            let prog = bad.split(' ').next().unwrap_or(bad);
            {
                let rule = vec![format!("{prog}:*")];
                prop_assert!(match_rules(RuleKind::Deny, &rule, &cmd).is_some(), "deny {prog}:* dodged by {cmd:?}");
            }
        }
        let s = suggestions(&cmd);
        if !s.is_empty() {
            prop_assert!(match_rules(RuleKind::Allow, &s, &cmd).is_some(), "suggestions {s:?} do not cover {cmd:?}");
        }
    }

    #[test]
    fn arbitrary_text_never_panics(cmd in "[ -~\\n\\t]{0,160}") {
        let c = ctx(Mode::AcceptEdits);
        let lists = DangerLists::default();
        let ro = check_read_only(&cmd);
        let v = check_permissions(&cmd, &c, &lists);
        if ro {
            prop_assert_eq!(v.behavior, Behavior::Allow);
        }
        let s = suggestions(&cmd);
        if !s.is_empty() {
            prop_assert!(match_rules(RuleKind::Allow, &s, &cmd).is_some(), "suggestions {s:?} do not cover {cmd:?}");
        }
        let _ = match_rules(RuleKind::Deny, &["rm:*".to_string(), "*x*".to_string()], &cmd);
    }

    #[test]
    fn shellish_text_never_panics(cmd in prop::collection::vec(prop::sample::select(vec![
        "ls", "rm", "-rf", "/", "~", "..", "'", "\"", "$(", ")", "`", "${", "}", "<(", ">", ">>", "2>&1", "<<EOF\n", "\nEOF\n",
        ";", "&&", "||", "|", "&", "\n", "(", "{", "[", "]", "[[", "]]", "if", "then", "fi", "for", "do", "done", "$X",
        "\\", "*", "sed", "-i", "s/a/b/", ".env", "eval", "bash", "-c", "sudo", "env", "=", "a=b", "#", "$((", "))",
    ]), 0..40)) {
        let cmd = cmd.join(" ");
        let c = ctx(Mode::DontAsk);
        let lists = DangerLists::default();
        let ro = check_read_only(&cmd);
        let v = check_permissions(&cmd, &c, &lists);
        if ro {
            prop_assert_eq!(v.behavior, Behavior::Allow);
        }
        let _ = suggestions(&cmd);
        let _ = match_rules(RuleKind::Allow, &["ls:*".to_string()], &cmd);
    }
}

#[test]
fn long_input_is_bounded() {
    let long = "ls && ".repeat(20_000) + "ls";
    let v = check_permissions(&long, &ctx(Mode::Default), &DangerLists::default());
    assert_eq!(v.behavior, Behavior::Ask);
    assert!(v.message.contains("parsing failed"));
    let nested = "$(".repeat(40) + &")".repeat(40);
    let _ = check_permissions(&format!("echo {nested}"), &ctx(Mode::Default), &DangerLists::default());
}

/// Found by the `bash_analysis` fuzz target (fuzz/corpus/bash_analysis/
/// multibyte_option): a short option whose letter is not ASCII panicked
/// slicing its glued value inside the character, trapping the Bash tool.
#[test]
fn an_option_letter_of_several_bytes_is_no_panic() {
    for command in ["[\0run-} -\u{4da}&-", "tee -\u{4da}", "cp -\u{4da}x /etc/passwd ."] {
        for mode in [Mode::Default, Mode::AcceptEdits, Mode::DontAsk] {
            let _ = check_permissions(command, &ctx(mode), &DangerLists::default());
        }
        let _ = check_read_only(command);
        let _ = suggestions(command);
    }
    // The glued value is still a path: a write to a dangerous file is not
    // auto-allowed, whatever the option letter.
    for command in ["tee -\u{4da}/home/user/.bashrc", "tee -a/home/user/.bashrc"] {
        let v = check_permissions(command, &ctx(Mode::AcceptEdits), &DangerLists::default());
        assert_ne!(v.behavior, Behavior::Allow, "{command}: {v:?}");
    }
}

/// Found by the `bash_analysis` fuzz target (fuzz/corpus/bash_analysis/
/// unclosed_parens, unclosed_subscripts, subscripts_in_braces*): brackets
/// left open in one word made the parser backtrack exponentially (23 `(`
/// took seconds, 40 would take days; `a[$1` repeated the same, even with
/// the `]` in other words; seven `[` in `${…}` across lines, 9 s),
/// burning the Bash tool's whole deadline on one model input. Deeper than
/// the length allows is now a parse failure, answered at once with an ask.
#[test]
fn brackets_nested_too_deep_are_answered_at_once() {
    let started = std::time::Instant::now();
    let long_word = "${a}".repeat(15_000);
    let mut commands: Vec<String> = [13, 23, 40, 1000].iter().map(|n| format!(" {}", "(".repeat(*n))).collect();
    commands.push(format!("echo {}", "a[$1".repeat(24)));
    commands.push(format!("echo {}{}", "a[$1".repeat(24), " ]".repeat(24)));
    commands.push(format!("echo {}{}", "a[${a}".repeat(6), long_word));
    commands.push(format!("lk[{}", "k[$#i[".repeat(14)));
    commands.push(
        "&>\n\n\n\n\0\n\0\n\n\n i \u{1}\nd\nATTjT${Tlk[k[$#i[\nsu\n\n i \u{1}\nd\nATTjT${Tlk[k[$#i[\nsud$#i[\nsu\n\n \
         i \u{1}\nd\nATTjT${Tlk[k[$#i[\nsudo env \u{15}FOO=1 /git:*\nsudo env FOO=1 /bj}}}}303hm r\u{4}nt 2"
            .to_string(),
    );
    commands.push(
        "&>\n\n\n\n\0\n\0\n\n\n i \u{1}\nd\nATTjT${Tlk[k[$#i[\nsu\n\n i \u{1}\nd\nATTjT${Tlk[kTlc\nTjT${Tlk[k[$#i[\n\
         su\n\n i \u{1}\nd\nATTjT${Tlk\n i \u{1}\nd\nATnv FOb 0/=Oj}}}}303hm r\u{4}n\u{1}\0\0got 2"
            .to_string(),
    );
    commands.push(
        "&>\n\n\n\n\0\n\0\n\n\n i \u{1}]\nd\nATTjT${Tlc[k[$#i[\nsu\n\n i y\u{1}\ndT${Tlc[k[$#i[\nsu\n\n \
         i y\u{1}\nd\njTTAT${Tlk[))))))k[$#i[\nsud*\u{1}\0\0\0\0[))))))k[$#i[\nsud FOO=1 /bj}}}}3r\u{4}hm r\u{4}nt 2"
            .to_string(),
    );
    for command in &commands {
        let v = check_permissions(command, &ctx(Mode::Default), &DangerLists::default());
        assert_eq!(v.behavior, Behavior::Ask, "{command:.60}: {v:?}");
        assert!(v.message.contains("parsing failed"), "{command:.60}: {v:?}");
        let _ = check_read_only(command);
        let _ = suggestions(command);
        let _ = match_rules(RuleKind::Allow, &[format!("{command}:*")], "ls");
    }
    // Nesting a command means, and long commands that nest a little, are
    // still parsed.
    for command in [
        format!("{}ls{}", "(".repeat(5), ")".repeat(5)),
        r#"curl -d '{"a": {"b": [1, 2]}}' http://localhost:8080/x"#.to_string(),
        format!("awk '{{ if ($1 > 0) {{ print $2 }} }}' f # {}", "x".repeat(3000)),
        format!("python3 -c 'print(f(g([1])))' # {}", "x".repeat(4000)),
        "echo $(( (1 + 2) * (3 - a[$((i + 1))]) ))".to_string(),
        format!("echo {} $(ls)", "x".repeat(60_000)),
    ] {
        let v = check_permissions(&command, &ctx(Mode::Default), &DangerLists::default());
        assert!(!v.message.contains("parsing failed"), "{command:.60}: {v:?}");
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "took {:?}", started.elapsed());
}

/// Found by the `bash_analysis` fuzz target (fuzz/corpus/bash_analysis/
/// fd_overflow, tilde_overflow, heredoc_*): brush-parser unwraps
/// the number of a file descriptor before a redirection and of a
/// directory-stack tilde, and its tokenizer loops for ever, allocating, on
/// a here-document left open or whose tag is empty to it (`<<""`, `<< #`,
/// `<<8$(`), and unwraps a missing character when a `${`, `$(` or `$[` on
/// a here-document's first line runs into its body (`<<c<${}${`) or a
/// here-document starts inside an open `${` (`${<<c`).
/// In the Bash tool (wasm, no unwinding, one deadline) the panic trapped
/// the call and the loop burned its deadline and memory; each is now a
/// parse failure, which asks. Words are parsed outside `catch_unwind`, so
/// a panic left there fails this test.
#[test]
fn text_the_parser_chokes_on_asks() {
    for command in [
        " (((((((((8888888888>8888888888(((",
        "<<\u{c} ",
        "cat <<-\r\t",
        "<<\"\" ",
        "cat << '' ",
        "echo \"$(cat <<-\"\" )\"",
        "$(<<  #",
        "cat <<#x ",
        "<<8$(  ",
        "cat <<${x ",
        "cat <<`x ",
        "\u{18}$(<<\t\tw\t\t\"$((\t\tI\t\"$((\t",
        "cat <<EOF\nno end",
        "gg sutats; it: $(h \\/\\<<<  /e\0\\/\\<<</chog\u{c}<kill\0 ",
        "echo $(cat \\<<<x ",
        "cat <<EOF\n EOF",
        "echo 8888888888>x",
        "cat 99999999999<x",
        "cd ~+99999999999999999999",
        "cd ~-99999999999999999999",
        "ls ~99999999999999999999/x",
        "x=~+99999999999999999999",
        "cat <<EOF\n~+99999999999999999999\nEOF",
        "sh -c '8888''888888>x'",
        "echo \"$(cd ~+99999999999999999999)\"",
        "<<c<${\0}${\nc",
        "cat <<EOF ${x\nhi\nEOF",
        "x\0\n!z<<c<JJJJz}\\\\z}}\u{1}\0@$[\u{e}\t\0\0]\0@$[\0\0\\  {\0\u{4}\\\\\\\\\nATnv FO\n i:*\nc",
        "cat <<EOF $(date\nhi\nEOF",
        "${<<c\n}\nc",
        "<<c\"\n$[c]$[\nc",
        "<<c<$[$[\u{e}]\\]\nc",
        "<<c\\\n$[c]$[\nc",
        "<<c<$[$[\"]\"]\nc",
        "<<c<$[\u{e}]\\\n$[\nc",
        "<<c<\"\n$[c]$[\nc",
        "$(<<c<$[\u{e}]\nc",
    ] {
        for mode in [Mode::Default, Mode::AcceptEdits, Mode::DontAsk] {
            let v = check_permissions(command, &ctx(mode), &DangerLists::default());
            assert_eq!(v.behavior, Behavior::Ask, "{command}: {v:?}");
        }
        assert!(!check_read_only(command), "{command}");
        let _ = suggestions(command);
        let _ = match_rules(RuleKind::Allow, &[format!("{command}:*")], "ls");
    }
    // Numbers that fit, and long numbers elsewhere, are analysed as before.
    for command in [
        "echo 12345678901234567890",
        "ls 2>/dev/null",
        "cd ~+1",
        "echo {1..99999999999999999999}",
        "cat <<EOF\nhi\nEOF",
        "cat <<'END_1'\nhi\nEND_1",
        "cat <<-\"E.O-F\"\n\thi\nE.O-F",
        "cat <<\\EOF\nhi\nEOF",
        "cat <<$X\nhi\n$X",
        "cat <<< hi",
        "cat <<EOF ${x}\nhi\nEOF",
    ] {
        let v = check_permissions(command, &ctx(Mode::Default), &DangerLists::default());
        assert_eq!(v.behavior, Behavior::Allow, "{command}: {v:?}");
    }
}
